"""`python -m bench.stack up|down|status|install` (what `make up`, `make down`, `make status` run), and
`python -m bench.stack delete-topic TOPIC` (start a replay clean)."""

from __future__ import annotations

import argparse
import sys

from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient

from bench.stack import Stack, StackConfig, StackError
from bench.stack import artifacts, connector, maven


def delete_topic(bootstrap_servers: str, topic: str, timeout_s: float = 30.0) -> None:
    """Delete ``topic``; StackError if the broker refuses or does not answer in ``timeout_s``."""
    admin = AdminClient({"bootstrap.servers": bootstrap_servers, "log.connection.close": False})
    try:
        admin.delete_topics([topic], operation_timeout=timeout_s, request_timeout=timeout_s)[topic].result(timeout_s)
    except KafkaException as e:
        raise StackError(f"deleting topic {topic!r} on {bootstrap_servers} failed: {e.args[0] if e.args else e}") from None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.stack", description=__doc__)
    parser.add_argument("command", choices=("up", "down", "status", "install", "delete-topic"))
    parser.add_argument("topic", nargs="?", help="delete-topic: the topic to delete")
    args = parser.parse_args(argv)
    if args.command == "delete-topic" and not args.topic:
        parser.error("delete-topic needs a TOPIC")
    try:
        config = StackConfig.from_env()
        stack = Stack(config)
        if args.command == "install":
            artifacts.install_all(config)
            kafka_connector = connector.install(config)
            maven.topology_jars(quiet=False)
            print(f"installed: Kafka {artifacts.KAFKA_VERSION}, Spark's Kafka connector ({kafka_connector.describe()}), "
                  f"influxd 1.8.10, under {config.cache_dir}; the topology's JVM stages in {maven.TOPOLOGY_JVM_DIR / 'target'}")
        elif args.command == "up":
            stack.up()
            print(f"stack up: Kafka bootstrap {config.bootstrap_servers}, InfluxDB {config.influx_url} "
                  f"(database {config.influx_database}); state in {config.stack_dir}")
        elif args.command == "down":
            stack.down()
        elif args.command == "delete-topic":
            delete_topic(config.bootstrap_servers, args.topic)
            print(f"deleted topic {args.topic!r} on {config.bootstrap_servers}")
        else:
            for s in stack.status():
                state = f"running  pid {s.pid}" if s.running else "stopped"
                ports = ", ".join(f"{label} {port}" for label, port in s.ports.items())
                print(f"{s.name:9s} {state:18s} {s.address:24s} ({ports})")
    except (StackError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
