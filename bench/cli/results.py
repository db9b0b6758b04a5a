"""`python -m bench results list`: the run records under results/, one line per run with its headline figures."""

from __future__ import annotations

import sys


def add_parsers(subparsers) -> None:
    p = subparsers.add_parser(
        "results", help="list the run records under results/",
        description="Read the run records (results/<run_id>/run.json, summary.json, metrics.parquet).",
    )
    sub = p.add_subparsers(dest="results_command", required=True, metavar="SUBCOMMAND")
    ls = sub.add_parser(
        "list", help="one line per run: grouping, dataset, workers, date and headline figures",
        description="One line per run, oldest first: mode, grouping, dataset, workers, date (UTC), "
                    "STD_DEV (percentage points), DIST_COST, max/mean load, and throughput (rec/s) and "
                    "latency (ms) where the run records them (a simulation's throughput is its virtual "
                    "clock's replay rate, not a speed: shown as '-').",
    )
    ls.add_argument("--root", help="results folder (default: BENCH_RESULTS_DIR or <repo>/results)")
    ls.add_argument("--experiment", help="only the runs of this experiment id")
    ls.add_argument("--dataset", help="only the runs on this dataset")
    ls.add_argument("--csv", action="store_true", help="print the full table as CSV instead")
    ls.set_defaults(handler=list_main)


def _fmt(value, spec: str) -> str:
    try:
        return "-" if value is None or value != value else format(value, spec)
    except (TypeError, ValueError):
        return str(value)


def format_runs(runs) -> str:
    # deferred: see list_main
    from bench.results.reader import latency_columns

    """The `results list` table (plain text)."""
    lat = [c for c in latency_columns(runs) if "p99" in c][:1] or latency_columns(runs)[:1]
    wid = max([6, *(len(str(x)) for x in runs["run_id"])])
    header = (f"{'run_id':<{wid}} {'mode':<8} {'grouping':<12} {'dataset':<18} {'W':>4} {'created (UTC)':<17}"
              f" {'STD_DEV':>8} {'DIST_COST':>9} {'max/mean':>8} {'thru/s':>9}"
              + (f" {lat[0]:>14}" if lat else "") + "  experiment")
    lines = [header, "-" * len(header)]
    for _, r in runs.iterrows():
        created = r["created_utc"].strftime("%Y-%m-%d %H:%M") if r["created_utc"] == r["created_utc"] else "-"
        thru = "-" if r["mode"] == "simulate" else _fmt(r["throughput_ratio"], ",.0f")
        line = (f"{str(r['run_id']):<{wid}} {str(r['mode']):<8} {str(r['grouping']):<12} {str(r['dataset']):<18}"
                f" {_fmt(r['workers'], 'd'):>4} {created:<17}"
                f" {_fmt(r['std_dev'], '.4f'):>8} {_fmt(r['dist_cost'], '.4f'):>9}"
                f" {_fmt(r['max_mean_imbalance'], '.3f'):>8} {thru:>9}"
                + (f" {_fmt(r[lat[0]], ',.1f'):>14}" if lat else "")
                + f"  {r['experiment_id'] if isinstance(r['experiment_id'], str) else '-'}")
        if not r["complete"]:
            line += "  (no summary.json: running or failed)"
        lines.append(line)
    lines.append(f"{len(runs)} run(s)")
    return "\n".join(lines)


def list_main(args) -> int:
    # deferred: the results reader loads pandas (about 0.7 s of CPU); `python -m bench` imports every
    # command's module to build its parser, and only this command needs it
    from bench.results.reader import ResultsError, load_runs, results_root

    try:
        runs = load_runs(args.root, experiment_id=args.experiment)
        if args.dataset:
            runs = runs[runs["dataset"].astype(str).str.upper() == args.dataset.upper()]
            if runs.empty:
                raise ResultsError(f"no run on dataset {args.dataset!r} in {results_root(args.root)}")
    except ResultsError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if args.csv:
        runs.to_csv(sys.stdout, index=False)
    else:
        print(format_runs(runs))
    return 0
