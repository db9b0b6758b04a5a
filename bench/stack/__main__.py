"""`python -m bench.stack up|down|status|install` (what `make up`, `make down`, `make status` run)."""

from __future__ import annotations

import argparse
import sys

from bench.stack import Stack, StackConfig, StackError
from bench.stack import artifacts


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.stack", description=__doc__)
    parser.add_argument("command", choices=("up", "down", "status", "install"))
    args = parser.parse_args(argv)
    try:
        config = StackConfig.from_env()
        stack = Stack(config)
        if args.command == "install":
            artifacts.install_all(config)
            print(f"installed: Kafka {artifacts.KAFKA_VERSION} and Spark connector jars, influxd 1.8.10, "
                  f"under {config.cache_dir}")
        elif args.command == "up":
            stack.up()
            print(f"stack up: Kafka bootstrap {config.bootstrap_servers}, InfluxDB {config.influx_url} "
                  f"(database {config.influx_database}); state in {config.stack_dir}")
        elif args.command == "down":
            stack.down()
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
