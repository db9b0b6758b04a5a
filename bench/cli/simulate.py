"""`python -m bench simulate`: the groupings in-process over a dataset or a recorded topic."""

from __future__ import annotations

import sys
from pathlib import Path

from bench.cli._arguments import add_run_flag, parse_assignments
from bench.settings import add_flag
from bench.settings.input import PaceSettings
from bench.simulate.cost_profiles import cost_model, profile_names
from groupings import GROUPINGS, canonical_grouping
from groupings.rescaling import make_protocol, parse_schedule


def add_parsers(subparsers) -> None:
    p = subparsers.add_parser(
        "simulate", help="route a dataset or a recorded topic in-process (no Spark), one run record per point",
        description="Run the groupings in-process over a dataset (virtual clock) or a recorded input topic "
                    "(its Kafka timestamps), with the observer's metric code; writes one run record per "
                    "(grouping, workers) point and prints a summary table.",
    )
    p.add_argument("--grouping", default="all", help="G[,G...] or 'all' (every name of groupings.GROUPINGS); "
                   "G may be an installed plugin's name or package.module:Class (docs/extending.md)")
    add_run_flag(p, "dataset", required=True)
    add_run_flag(p, "dataset_params")
    add_run_flag(p, "workers", many=True, also="one point each")
    add_run_flag(p, "splitters")
    add_run_flag(p, "grouping_params")
    p.add_argument("--rate", type=float, help="virtual clock: records/s (default: the dataset's own times)")
    add_flag(p, PaceSettings, "speed", also="for the virtual clock")
    p.add_argument("--limit", type=int, help="records to read")
    p.add_argument("--from-topic", help="read this recorded input topic instead (its Kafka timestamps are the clock)")
    p.add_argument("--bootstrap-servers", help="Kafka for --from-topic (default: the local stack)")
    p.add_argument("--tick-s", type=float, default=10.0, help="observer tick on the virtual clock, s (default 10)")
    p.add_argument("--run-id", help="name of the run (one point only)")
    p.add_argument("--experiment-id", help="groups the points of a sweep")
    p.add_argument("--plot", action="store_true", help="draw STD_DEV and DIST_COST against workers per grouping")
    p.add_argument("--rescale", metavar="SCHEDULE",
                   help="rescale while the stream runs: '150s:12,240s:8' (time since the start : new worker "
                        "count) or '150s:+10,+11' / '150s:-3' (worker ids added / removed); needs a routing "
                        "that owns keys (KEY, KEY_GROUP, VNODE); see docs/rescaling.md")
    add_run_flag(p, "protocol", default="HANDOFF")
    add_run_flag(p, "handoff_batch", also="keys for KEY")
    p.add_argument("--state-bytes", type=int, default=0,
                   help="synthetic payload of each key's worker state, bytes (heavy state; default 0)")
    p.add_argument("--cost-profile", metavar="ENGINE",
                   help="rescale costs fitted on an engine's measurements: " + ", ".join(profile_names())
                        + " (default: the cost model's defaults; docs/rescaling.md, 'Cost profiles')")
    p.add_argument("--cost", action="append", metavar="NAME=VALUE",
                   help="rescale cost model parameter, repeatable, over the profile's (names in docs/rescaling.md)")
    p.add_argument("--influx-url", help="with --rescale: also write each rescale event to this InfluxDB "
                                        "(measurement `rescale`), e.g. the local stack's http://127.0.0.1:8086")
    p.add_argument("--influx-db", default="groupings", help="InfluxDB 1.8 database (default groupings)")
    add_run_flag(p, "progress")
    p.set_defaults(handler=main)


def main(args) -> int:
    # deferred: the simulator loads pandas and the datasets (about 1 s of CPU); `python -m bench`
    # imports every command's module to build its parser, and only this command needs them
    from bench.simulate.runner import SimulationPlan, format_rescale, format_table, run
    from bench.simulate.sources import VirtualClock
    from bench.stack import StackConfig
    from datasets import get_dataset

    try:
        groupings = list(GROUPINGS) if args.grouping.lower() == "all" else [
            canonical_grouping(g) for g in args.grouping.split(",") if g.strip()]
        workers = list(args.workers)
        dataset_params = parse_assignments(args.dataset_param)
        dataset = get_dataset(args.dataset, **dataset_params)
        if args.rate is not None and args.speed is not None:
            raise ValueError("give --rate or --speed, not both")
        bootstrap = args.bootstrap_servers
        if args.from_topic and not bootstrap:
            bootstrap = StackConfig.from_env().bootstrap_servers
        rescale = rescale_config(args)
        plan = SimulationPlan(
            dataset_name=args.dataset.upper(), dataset=dataset, dataset_params=dataset_params,
            groupings=groupings, workers=workers, splitters=args.splitters,
            clock=VirtualClock(rate=args.rate, speed=args.speed), limit=args.limit,
            from_topic=args.from_topic, bootstrap_servers=bootstrap, tick_ms=int(args.tick_s * 1000),
            grouping_params=parse_assignments(args.param), run_id=args.run_id,
            experiment_id=args.experiment_id, progress=not args.no_progress, rescale=rescale,
            influx_url=args.influx_url, influx_database=args.influx_db,
        )
        results = run(plan)
    except (ValueError, TypeError, RuntimeError, FileNotFoundError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(format_table(results))
    if rescale is not None:
        print(format_rescale(results))
    write_sweep(results, plan.experiment_id, plot=args.plot)
    return 0


def rescale_config(args) -> RescaleConfig | None:
    """The --rescale options as a RescaleConfig (None without --rescale), the protocol checked.

    Raises: ValueError: a rescale option without --rescale, a bad schedule, protocol, cost or cost
        profile, or a negative --state-bytes.
    """
    if not args.rescale:
        if (args.cost or args.cost_profile or args.handoff_batch != 1 or args.state_bytes or args.protocol != "HANDOFF"
                or args.influx_url):
            raise ValueError("--protocol, --handoff-batch, --state-bytes, --cost, --cost-profile and --influx-url "
                             "need --rescale")
        return None
    # deferred: as in main, the simulator's modules load pandas
    from bench.simulate.rescale import RescaleConfig

    cost = cost_model(args.cost_profile, parse_assignments(args.cost))
    rescale = RescaleConfig(tuple(parse_schedule(args.rescale)), args.protocol.strip().upper(),
                            args.handoff_batch, cost, args.state_bytes, cost_profile=args.cost_profile)
    make_protocol(rescale.protocol, cost, batch=rescale.handoff_batch)
    if args.state_bytes < 0:
        raise ValueError(f"--state-bytes must be >= 0, got {args.state_bytes}")
    return rescale


def write_sweep(results, experiment_id: str | None, plot: bool) -> None:
    """The sweep's summary table as `<results>/sweeps/<experiment id or run id>.csv` (beside the
    run records) and, with `plot`, its figures; prints where each went."""
    # deferred: as in main, the simulator's modules load pandas (and the figure matplotlib)
    from bench.simulate.plot import plot_sweep
    from bench.simulate.runner import summary_frame

    frame = summary_frame(results)
    out_dir = Path(results[0].path).parent / "sweeps"
    out_dir.mkdir(parents=True, exist_ok=True)
    name = experiment_id or Path(results[0].path).name
    frame.to_csv(out_dir / f"{name}.csv", index=False)
    print(f"summary table: {out_dir / f'{name}.csv'}")
    if plot:
        for path in plot_sweep(frame, out_dir / name):
            print(f"figure: {path}")
