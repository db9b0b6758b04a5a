"""`python -m bench report RUN [RUN ...]`: one self-contained HTML file (figures embedded, table, configs)."""

from __future__ import annotations

import sys
from datetime import datetime, timezone
from pathlib import Path

from bench.cli.compare import add_selection_arguments, select


def add_parsers(subparsers) -> None:
    p = subparsers.add_parser(
        "report", help="a self-contained HTML report of one run or a comparison",
        description="Write one HTML file with no external resource: the figures of `bench compare` embedded "
                    "as PNG, the comparison table with its significance notes, and each run's configuration. "
                    "Without RUN: the same default selection as `bench compare`.",
    )
    add_selection_arguments(p)
    p.add_argument("--out", help="output file (default: <results>/reports/<run_id or compare-timestamp>.html)")
    p.add_argument("--title", help="page title")
    p.add_argument("--check", action="store_true",
                   help="open the report in headless Chromium and fail unless every figure rendered")
    p.set_defaults(handler=main)


def main(args) -> int:
    # deferred: bench.compare and the results reader load matplotlib and pandas (about 1 s of CPU);
    # `python -m bench` imports every command's module to build its parser, and only this one needs them
    from bench.compare import build_comparison
    from bench.compare.render_check import check_report_rendered
    from bench.compare.report import write_report
    from bench.results.reader import results_root

    try:
        runs, description = select(args)
        comparison = build_comparison(runs, description=description, allow_mixed=args.allow_mixed)
    except ValueError as exc:  # ResultsError is a ValueError
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if args.out:
        out = Path(args.out)
    else:
        name = runs["run_id"].iloc[0] if len(runs) == 1 else f"compare-{datetime.now(timezone.utc):%Y%m%dT%H%M%S}"
        out = results_root(args.root) / "reports" / f"{name}.html"
    write_report(comparison, out, args.title)
    print(f"report: {out}")
    if args.check:
        try:
            result = check_report_rendered(out)
        except (FileNotFoundError, RuntimeError) as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
        print(f"chromium: {result.describe()}")
        return 0 if result.ok else 1
    return 0
