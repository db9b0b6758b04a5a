"""`python -m bench <command>`: the harness's command line (`python -m bench --help` lists commands)."""

from __future__ import annotations

import argparse
import importlib
import pkgutil
import sys

import bench.cli


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m bench",
        description="Benchmark harness for stream groupings on Kafka and Spark Structured Streaming.",
    )
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    commands = (m for m in pkgutil.iter_modules(bench.cli.__path__) if not m.name.startswith("_"))
    for module in sorted(commands, key=lambda m: m.name):
        importlib.import_module(f"bench.cli.{module.name}").add_parsers(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return int(args.handler(args) or 0)


if __name__ == "__main__":
    sys.exit(main())
