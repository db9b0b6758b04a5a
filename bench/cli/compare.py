"""`python -m bench compare [RUN ...]`: figures (PNG + SVG) and a comparison table (markdown + CSV) of run records."""

from __future__ import annotations

import sys
from datetime import datetime, timezone
from pathlib import Path


def add_selection_arguments(p) -> None:
    """RUN..., --dataset, --experiment, --workers, --root: shared by `compare` and `report`."""
    p.add_argument("runs", nargs="*", metavar="RUN",
                   help="run ids (or unambiguous prefixes); default: the newest run of each grouping on one "
                        "dataset, with its repetitions")
    p.add_argument("--dataset", help="without RUN: compare runs on this dataset (default: that of the newest run)")
    p.add_argument("--experiment", help="without RUN: every run of this experiment id")
    p.add_argument("--workers", type=int, help="without RUN: only runs with this worker count")
    p.add_argument("--root", help="results folder (default: BENCH_RESULTS_DIR or <repo>/results)")
    p.add_argument("--allow-mixed", action="store_true",
                   help="compare stream runs of different input conditions (paced live replay, recorded topic); "
                        "refused otherwise; each row is then marked with its condition")


def add_parsers(subparsers) -> None:
    p = subparsers.add_parser(
        "compare", help="compare runs: figures (PNG+SVG) and a table of medians, IQR and significance",
        description="Compare run records. Figures: STD_DEV over time, load share per worker, DIST_COST, "
                    "throughput and latency over time (when recorded). Table: median and interquartile range "
                    "over repetitions (runs sharing experiment_id, grouping, dataset, workers) with a "
                    "Mann-Whitney U test between groupings. Written to --out.",
    )
    add_selection_arguments(p)
    p.add_argument("--out", help="output folder (default: <results>/compare/<UTC timestamp>/)")
    p.add_argument("--alpha", type=float, default=0.05, help="significance level (default 0.05)")
    p.set_defaults(handler=main)


def select(args):
    """(runs, description) from the shared arguments; raises ResultsError/ValueError on bad input."""
    # deferred: bench.compare loads matplotlib and pandas (about 1 s of CPU); `python -m bench` imports every
    # command's module to build its parser, and only compare and report need them
    from bench.compare import select_runs

    if args.runs and (args.dataset or args.experiment or args.workers):
        raise ValueError("give RUN ids or --dataset/--experiment/--workers, not both")
    return select_runs(args.root, run_ids=args.runs or None, dataset=args.dataset,
                       experiment_id=args.experiment, workers=args.workers)


def main(args) -> int:
    # deferred: as in select, bench.compare and the results reader load matplotlib and pandas
    from bench.compare import build_comparison
    from bench.results.reader import results_root

    try:
        if not 0 < args.alpha < 1:
            raise ValueError(f"--alpha must be between 0 and 1, got {args.alpha}")
        runs, description = select(args)
        comparison = build_comparison(runs, alpha=args.alpha, description=description,
                                      allow_mixed=args.allow_mixed)
    except ValueError as exc:  # ResultsError is a ValueError
        print(f"error: {exc}", file=sys.stderr)
        return 2
    out = Path(args.out) if args.out else (
        results_root(args.root) / "compare" / f"{datetime.now(timezone.utc):%Y%m%dT%H%M%S}")
    written = comparison.write(out)
    print(description)
    print()
    print(comparison.markdown())
    for name, paths in written.items():
        for path in paths:
            print(f"{'table' if name == 'tables' else 'figure'}: {path}")
    return 0
