"""`python -m bench up|down|status|install`: the same as `python -m bench.stack <command>`."""

from __future__ import annotations

from bench.stack.__main__ import main as stack_main


def add_parsers(subparsers) -> None:
    for command, text in (
        ("up", "start Kafka and InfluxDB on 127.0.0.1 (installs what is missing)"),
        ("down", "stop the services `up` started"),
        ("status", "running/stopped, pid and port of each service"),
        ("install", "install the jars and influxd into the cache"),
    ):
        sub = subparsers.add_parser(command, help=text, description=text)
        sub.set_defaults(handler=lambda args, command=command: stack_main([command]))
