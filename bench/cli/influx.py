"""`python -m bench influx backfill RUN_ID`: write a run's points from its record into InfluxDB (its
ticks, and the `rescale` point of each event of a rescale run)."""

from __future__ import annotations

import sys
from pathlib import Path


def add_parsers(subparsers) -> None:
    p = subparsers.add_parser("influx", help="InfluxDB: backfill a run's points from its record")
    sub = p.add_subparsers(dest="influx_command", required=True, metavar="ACTION")
    b = sub.add_parser("backfill", help="write every tick of results/RUN_ID/metrics.parquet and, for a rescale "
                                        "run (bench run or bench simulate), each event's rescale point from "
                                        "summary.json (idempotent: same timestamps and tags, no duplicate points)")
    b.add_argument("run_id")
    b.add_argument("--results-dir", type=Path, help="results folder (default results/)")
    b.add_argument("--influx-url", help="default: the run's, else the local stack's")
    b.add_argument("--influx-database", help="default: the local stack's (groupings)")
    b.add_argument("--influx-token", default="")
    b.add_argument("--influx-org", default="-")
    b.add_argument("--influx-bucket")
    b.set_defaults(handler=handle_backfill)


def handle_backfill(args) -> int:
    # deferred: the InfluxDB writer and the run record load pandas and influxdb-client (about 1 s of CPU);
    # `python -m bench` imports every command's module to build its parser, and only this command needs them
    from bench.observer.influx import backfill_run, one_line
    from bench.results import record

    run_dir = Path(args.results_dir or record.RESULTS_DIR) / args.run_id
    try:
        n = backfill_run(run_dir, args.influx_url, args.influx_database, token=args.influx_token,
                         org=args.influx_org, bucket=args.influx_bucket)
    except FileNotFoundError as e:
        print(f"error: no run record at {run_dir} ({e.filename})", file=sys.stderr)
        return 2
    except Exception as e:  # noqa: BLE001 - the client's errors, one line
        print(f"error: backfill of {args.run_id} failed: {one_line(e)}", file=sys.stderr)
        return 1
    print(f"{args.run_id}: {n:,} points written to InfluxDB")
    return 0
