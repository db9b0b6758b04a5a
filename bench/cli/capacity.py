"""`python -m bench capacity`: maximum sustainable throughput per grouping and cost (`bench.capacity`)."""

from __future__ import annotations

import json
import sys
from datetime import datetime, timezone
from pathlib import Path

from bench.capacity.decision import BOUNDS_MS, MAX_LAG_GROWTH, Thresholds
from bench.cli._arguments import add_run_flag
from bench.settings import comma_separated
from bench.topology.config import MODES


def add_parsers(subparsers) -> None:
    p = subparsers.add_parser(
        "capacity", help="maximum sustainable throughput: step the input rate per grouping and cost",
        description="For each grouping and cost, replay the dataset live at each rate in turn (open loop) and "
                    "decide from the consumer lag trend and the processing p99 whether the topology keeps up; "
                    "report the highest rate that holds (median of the repetitions, with their spread), a table "
                    "and a figure of p99 against rate.",
    )
    add_run_flag(p, "groupings", default="KEY,PARTIAL_KEY,DYNAMIC_KEY")
    add_run_flag(p, "cost_ms", default="0,1", many=True, also="one ladder each")
    p.add_argument("--rates", help="input rates to step through, records/s, ascending, for every cost (default: "
                                   "doubling from 250 to 2 x 1000 x W / cost for a cost > 0, 20,000 at W = 10 and 1 ms; "
                                   "from 4,000 to 256,000 at cost 0)")
    add_run_flag(p, "dataset", default="COUNTRY_SKEW_R80")
    p.add_argument("--step-s", type=float, default=20.0, help="seconds of input per step (default %(default)s)")
    p.add_argument("--repeat", type=int, default=3, help="repetitions of each ladder (default %(default)s)")
    add_run_flag(p, "workers")
    add_run_flag(p, "mode", default=",".join(MODES), many=True, flag="--modes",
                 also="each laddered as a system of its own")
    p.add_argument("--bounds-ms", default=",".join(f"{b:g}" for b in BOUNDS_MS),
                   help="processing-latency p99 bounds, ms: a capacity table under each; a ladder climbs until a "
                        "step fails the loosest (default %(default)s)")
    p.add_argument("--max-lag-growth", type=float, default=MAX_LAG_GROWTH,
                   help="... and its consumer lag grows by at most this fraction of the rate (default %(default)s)")
    p.add_argument("--warmup-s", type=float, default=5.0,
                   help="seconds of each step left out of its figures (default %(default)s)")
    add_run_flag(p, "trigger_s")
    add_run_flag(p, "aggregators", also="in Spark also the state partitions of the grouping stage and the worker "
                                        "windows (the default is the reference's)")
    add_run_flag(p, "realtime_batch_s", also="the default leaves no batch boundary within a step")
    add_run_flag(p, "producers", also="for every system's steps")
    p.add_argument("--peers", default="", help="'storm': the Storm peer's ladders too, at the same rates on the same "
                                               "records (COUNTRY datasets, W = 10; default none)")
    p.add_argument("--storm-batches", default="1",
                   help="the Storm peer's topology.producer.batch.size values, comma-separated: one ladder each, "
                        "the best marked per grouping and cost (default %(default)s, Storm's default and its "
                        "guide's setting for latency)")
    p.add_argument("--out", type=Path, help="output folder (default results/capacity/<UTC timestamp>)")
    p.set_defaults(handler=main)


def main(args) -> int:
    # deferred: the ladders run the topology: pyspark, pandas and the Kafka client (about 1 s of CPU);
    # `python -m bench` imports every command's module to build its parser, and only this command needs them
    from bench.capacity.ladder import CapacityOptions, capacity_figure, format_capacity_tables, run_capacity
    from bench.results import record

    stamp = f"{datetime.now(timezone.utc):%Y%m%dT%H%M%S}"
    out = args.out or Path(record.RESULTS_DIR) / "capacity" / stamp
    rates = list(comma_separated(float)(args.rates)) if args.rates is not None else None
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
    modes = tuple(x.lower() for x in args.modes)
    if not modes or set(modes) - set(MODES) or len(set(modes)) < len(modes):
        print(f"error: --modes must be distinct modes of {', '.join(MODES)}, got {args.modes!r}", file=sys.stderr)
        return 2
    try:
        bounds = tuple(sorted(set(comma_separated(float)(args.bounds_ms))))
    except ValueError:
        bounds = ()
    if not bounds or bounds[0] <= 0:
        print(f"error: --bounds-ms must be positive numbers, got {args.bounds_ms!r}", file=sys.stderr)
        return 2
    options = CapacityOptions(
        groupings=[g.strip().upper() for g in args.groupings.split(",") if g.strip()],
        costs_ms=list(args.cost_ms), rates=rates, dataset=args.dataset, step_s=args.step_s,
        repeat=args.repeat, workers=args.workers, warmup_s=args.warmup_s,
        thresholds=Thresholds(max(bounds), args.max_lag_growth), experiment_id=f"capacity-{stamp}",
        peers=peers, trigger_s=args.trigger_s, aggregators=args.aggregators, storm_batches=storm_batches,
        modes=modes, bounds_ms=bounds, realtime_batch_s=args.realtime_batch_s, producers=args.producers,
    )
    record = run_capacity(options)
    if record["interrupted"] and not record["ladders"]:
        print("capacity: interrupted before a ladder finished: nothing written", file=sys.stderr)
        return 130
    conditions = conditions_line(args, options)
    if record["interrupted"]:
        conditions += "\n" + interrupted_line(record)
    out.mkdir(parents=True, exist_ok=True)
    (out / "capacity.json").write_text(json.dumps(record, indent=2, default=str))
    tables = format_capacity_tables(record["capacity"], bounds)
    (out / "capacity.txt").write_text(f"command: {' '.join(sys.argv)}\n{conditions}\n\n{tables}\n")
    fig = capacity_figure(record)
    for ext in ("png", "svg"):
        fig.savefig(out / f"p99_vs_rate.{ext}", dpi=120)
    print()
    print(conditions)
    print(tables)
    print(f"record: {out}")
    return 130 if record["interrupted"] else 0


def interrupted_line(record: dict) -> str:
    """What a record cut short by Ctrl-C holds, for the output and capacity.txt."""
    return (f"interrupted (Ctrl-C): the tables hold the {len(record['ladders'])} ladder(s) that finished before it; "
            "a system, grouping or repetition missing from them did not run, and the step under way was dropped")


def conditions_line(args, options) -> str:
    """What every step of the record ran under, for the output and capacity.txt."""
    systems = ", ".join(options.systems())
    senders = "one producer process" if options.producers == 1 else f"{options.producers} producer processes"
    return (f"input: live replay of {args.dataset} at each step's rate (open loop, {senders}), {args.step_s:g} s "
            f"per step, the "
            f"same records for every system; systems {systems}, their order rotated from one repetition to the next, "
            f"each warmed up by one uncounted step per grouping and cost; a step holds if its p99 (after its first "
            f"{args.warmup_s:g} s) is within the bound and its lag grows by at most {args.max_lag_growth:g} x rate "
            f"(a step with fewer than 3 lag samples is run again with a longer input, never passed on p99 alone); "
            f"the harness with {options.harness_setting()}"
            + ("; the Storm peer fitted to this machine's cores, its worker paying the cost with the harness's paced "
               f"sleep, producer batch size {', '.join(map(str, options.storm_batches))}" if options.peers else ""))
