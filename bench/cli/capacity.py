"""`python -m bench capacity`: maximum sustainable throughput per grouping and cost (`bench.capacity`)."""

from __future__ import annotations

import json
import sys
from datetime import datetime, timezone
from pathlib import Path

from bench.capacity.decision import MAX_LAG_GROWTH, MAX_P99_MS, Thresholds


def _floats(text: str) -> list[float]:
    return [float(x) for x in text.split(",") if x.strip()]


def add_parsers(subparsers) -> None:
    p = subparsers.add_parser(
        "capacity", help="maximum sustainable throughput: step the input rate per grouping and cost",
        description="For each grouping and cost, replay the dataset live at each rate in turn (open loop) and "
                    "decide from the consumer lag trend and the processing p99 whether the topology keeps up; "
                    "report the highest rate that holds (median of the repetitions, with their spread), a table "
                    "and a figure of p99 against rate.",
    )
    p.add_argument("--groupings", default="KEY,PARTIAL_KEY,DYNAMIC_KEY", help="comma-separated (default %(default)s)")
    p.add_argument("--cost-ms", default="0,1", help="simulated cost per tuple, ms, comma-separated (default %(default)s)")
    p.add_argument("--rates", help="input rates to step through, records/s, ascending, for every cost (default: "
                                   "doubling from 250 to 2 x 1000 x W / cost for a cost > 0, 20,000 at W = 10 and 1 ms; "
                                   "from 4,000 to 256,000 at cost 0)")
    p.add_argument("--dataset", default="COUNTRY_SKEW_R80", help="dataset (default %(default)s)")
    p.add_argument("--step-s", type=float, default=20.0, help="seconds of input per step (default %(default)s)")
    p.add_argument("--repeat", type=int, default=3, help="repetitions of each ladder (default %(default)s)")
    p.add_argument("--workers", type=int, default=10, help="workers W (default %(default)s)")
    p.add_argument("--max-p99-ms", type=float, default=MAX_P99_MS,
                   help="a step holds only if its processing p99 is at most this (default %(default)s)")
    p.add_argument("--max-lag-growth", type=float, default=MAX_LAG_GROWTH,
                   help="... and its consumer lag grows by at most this fraction of the rate (default %(default)s)")
    p.add_argument("--warmup-s", type=float, default=5.0,
                   help="seconds of each step left out of its figures (default %(default)s)")
    p.add_argument("--trigger-s", type=float, default=1.0,
                   help="the harness's micro-batch trigger interval, s; 0: back to back (default %(default)s)")
    p.add_argument("--aggregators", type=int, default=10,
                   help="the harness's aggregator partitions A, which in Spark are also the state partitions of "
                        "its grouping stage and worker windows (default %(default)s, the reference's)")
    p.add_argument("--peers", default="", help="'storm': after each harness ladder, the Storm peer's at the same "
                                               "rates on the same records (COUNTRY datasets, W = 10; default none)")
    p.add_argument("--storm-batches", default="1",
                   help="the Storm peer's topology.producer.batch.size values, comma-separated: one ladder each, "
                        "the best marked per grouping and cost (default %(default)s, Storm's default and its "
                        "guide's setting for latency)")
    p.add_argument("--out", type=Path, help="output folder (default results/capacity/<UTC timestamp>)")
    p.set_defaults(handler=main)


def main(args) -> int:
    # deferred: the ladders run the topology: pyspark, pandas and the Kafka client (about 1 s of CPU);
    # `python -m bench` imports every command's module to build its parser, and only this command needs them
    from bench.capacity.ladder import CapacityOptions, capacity_figure, format_capacity_table, run_capacity
    from bench.results import record

    stamp = f"{datetime.now(timezone.utc):%Y%m%dT%H%M%S}"
    out = args.out or Path(record.RESULTS_DIR) / "capacity" / stamp
    rates = _floats(args.rates) if args.rates is not None else None
    if rates is not None and (not rates or rates != sorted(rates) or rates[0] <= 0):
        print("error: --rates must be positive and ascending", file=sys.stderr)
        return 2
    if args.trigger_s < 0 or args.aggregators < 1:
        print(f"error: --trigger-s must be >= 0 and --aggregators >= 1, got {args.trigger_s:g} and "
              f"{args.aggregators}", file=sys.stderr)
        return 2
    peers = tuple(x.strip().lower() for x in args.peers.split(",") if x.strip())
    if set(peers) - {"storm"}:
        print(f"error: unknown peer(s) {', '.join(sorted(set(peers) - {'storm'}))}: the one peer is storm",
              file=sys.stderr)
        return 2
    if peers and (not args.dataset.upper().startswith("COUNTRY") or args.workers != 10):
        print("error: the Storm peer splits COUNTRY records ({\"country\": ...}) on 10 partitions into W = 10 "
              f"workers; got --dataset {args.dataset} --workers {args.workers}", file=sys.stderr)
        return 2
    try:
        storm_batches = tuple(int(x) for x in args.storm_batches.split(",") if x.strip())
    except ValueError:
        storm_batches = ()
    if not storm_batches or min(storm_batches) < 1 or len(set(storm_batches)) < len(storm_batches):
        print(f"error: --storm-batches must be distinct integers >= 1, got {args.storm_batches!r}", file=sys.stderr)
        return 2
    if storm_batches != (1,) and not peers:
        print("error: --storm-batches sets the Storm peer's batch size: add --peers storm", file=sys.stderr)
        return 2
    options = CapacityOptions(
        groupings=[g.strip().upper() for g in args.groupings.split(",") if g.strip()],
        costs_ms=_floats(args.cost_ms), rates=rates, dataset=args.dataset, step_s=args.step_s,
        repeat=args.repeat, workers=args.workers, warmup_s=args.warmup_s,
        thresholds=Thresholds(args.max_p99_ms, args.max_lag_growth), experiment_id=f"capacity-{stamp}",
        peers=peers, trigger_s=args.trigger_s, aggregators=args.aggregators, storm_batches=storm_batches,
    )
    record = run_capacity(options)
    out.mkdir(parents=True, exist_ok=True)
    (out / "capacity.json").write_text(json.dumps(record, indent=2, default=str))
    table = format_capacity_table(record["capacity"])
    (out / "capacity.txt").write_text(f"the harness with {options.harness_setting()}\n{table}\n")
    fig = capacity_figure(record)
    for ext in ("png", "svg"):
        fig.savefig(out / f"p99_vs_rate.{ext}", dpi=120)
    print()
    print(f"input: live replay of {args.dataset} at each step's rate (open loop), {args.step_s:g} s per step; a step "
          f"holds if p99 <= {args.max_p99_ms:g} ms and lag growth <= {args.max_lag_growth:g} x rate; the harness "
          f"with {options.harness_setting()}"
          + ("; the Storm peer fitted to this machine's cores, on the same records after each harness ladder, "
             f"producer batch size {', '.join(map(str, storm_batches))}" if peers else ""))
    print(table)
    print(f"record: {out}")
    return 0
