"""Runner of `make perf`: `python -m bench.perf [--only NAME ...] [--peers storm] [--no-save]`.

Runs every section listed in `SECTIONS` (see `bench.perf` for the contract), then, with
`--peers storm` (`make perf PEERS=storm`), the `peers` section (`bench.perf.peers`: the harness
against a Storm peer, per grouping, on the pipeline section's topic); prints each section's table
and writes all rows with the machine's description to `results/perf/<UTC timestamp>.json`.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime as dt
import importlib
import json
import os
import platform
import subprocess
import sys
import time
from importlib import metadata
from pathlib import Path
from typing import Any

from bench.perf._harness import Row, print_table

SECTIONS = ("routing", "producer", "pipeline", "stages", "simulator")
"""Section modules `bench.perf.<name>`, in run order; missing ones are skipped."""

PEER_SECTION = "peers"
"""Run after the others when `--peers` names a peer (or alone with `--only peers`); not by default:
it needs Java and Maven and adds about 6 minutes."""

PEERS = ("storm",)
"""Peers `--peers` accepts (the section imports Spark and the run: only when it runs)."""

REPO_ROOT = Path(__file__).resolve().parents[2]


def machine_info() -> dict[str, Any]:
    """Where and with what the figures were measured (platform, CPUs, versions, git revision)."""
    info: dict[str, Any] = {
        "platform": platform.platform(),
        "machine": platform.machine(),
        "processor": platform.processor(),
        "cpu_count": os.cpu_count(),
        "affinity_cpus": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
        "python": sys.version.split()[0],
        "implementation": platform.python_implementation(),
    }
    for package in ("numpy", "numba", "mmh3", "pandas"):
        try:
            info[f"{package}_version"] = metadata.version(package)
        except metadata.PackageNotFoundError:
            info[f"{package}_version"] = None
    try:
        info["git_revision"] = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=REPO_ROOT, capture_output=True, text=True, check=True
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        info["git_revision"] = None
    return info


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.perf", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--only", action="append", choices=(*SECTIONS, PEER_SECTION), metavar="NAME",
                        help=f"run only this section (repeatable): {', '.join((*SECTIONS, PEER_SECTION))}")
    parser.add_argument("--peers", choices=PEERS, metavar="PEER",
                        help="also compare the harness with this peer system on the same topic, per grouping "
                             f"(section '{PEER_SECTION}'): {', '.join(PEERS)}")
    parser.add_argument("--no-save", action="store_true", help="do not write results/perf/*.json")
    parser.add_argument("--output-dir", type=Path, default=REPO_ROOT / "results" / "perf")
    args = parser.parse_args(argv)

    started = dt.datetime.now(dt.UTC)
    rows: list[Row] = []
    ran: list[str] = []
    sections = list(args.only or SECTIONS)
    if args.peers and PEER_SECTION not in sections:
        sections.append(PEER_SECTION)
    for name in sections:
        module = importlib.import_module(f"bench.perf.{name}")
        section_started = time.monotonic()
        section_rows = module.run()
        print_table(name, section_rows)
        print(f"({name}: {time.monotonic() - section_started:.0f} s)")
        rows += section_rows
        ran.append(name)

    if not args.no_save:
        args.output_dir.mkdir(parents=True, exist_ok=True)
        path = args.output_dir / f"{started.strftime('%Y%m%dT%H%M%SZ')}.json"
        record = {
            "started_utc": started.isoformat(),
            "sections": ran,
            "machine": machine_info(),
            "rows": [dataclasses.asdict(r) for r in rows],
        }
        path.write_text(json.dumps(record, indent=2, default=str) + "\n")
        print(f"\nwrote {path.relative_to(REPO_ROOT) if path.is_relative_to(REPO_ROOT) else path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
