"""`make rescale`: the default rescale scenario matrix in the simulator, its figures and one table.

KEY, KEY_GROUP (256 key groups, as Volley), VNODE (256 vnodes) x STOP_THE_WORLD, SHARED_STATE,
LEARNER, HANDOFF (batch 1) and HANDOFF batch 64, with 10 -> 12 -> 8 workers (`150s:12,240s:8`),
on ZIPF (s = 1, 10 000 keys) and on NYC_FLIGHTS (real: 2013 flights from New York, key = dest),
each replayed at a fixed rate for 300 s of event time, every key's state carrying 4 KiB of
payload. Every cell writes its run record; the figures and the table go to
results/compare/rescale-<stamp>/.

Run: `python -m bench.experiments.rescale_matrix [--quick]` (`--quick`: 60 s of input per dataset,
for a smoke test).
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

from bench.compare.rescale import load_events, rescale_figures, rescale_table_markdown
from bench.results.reader import load_metrics, load_runs, results_root
from bench.simulate.rescale import RescaleConfig
from bench.simulate.runner import SimulationPlan, read_stream, simulate_point
from bench.simulate.sources import VirtualClock
from datasets import get_dataset
from groupings.rescaling import CostModel, parse_schedule

ROUTINGS = {"KEY": {}, "KEY_GROUP": {"max_parallelism": 256}, "VNODE": {}}
PROTOCOLS = [("STOP_THE_WORLD", 1), ("SHARED_STATE", 1), ("LEARNER", 1), ("HANDOFF", 1), ("HANDOFF", 64)]
DATASETS = {  # name -> (dataset parameters, records/s, records)
    "ZIPF": ({"s": 1.0, "keys": 10_000, "length": 600_000}, 2_000, 600_000),
    "NYC_FLIGHTS": ({}, 1_000, 300_000),
}
SCHEDULE = "150s:12,240s:8"
WORKERS = 10
TICK_MS = 1000
"""Observer tick of the matrix, ms: 1 s, so that a pause of seconds shows in the throughput."""
STATE_BYTES = 4096
"""Payload of every key's state, bytes: heavy enough that moving it takes time (4 KiB, a small
window buffer per key), so that the protocols' transfer, checkpoint and load costs show."""


def run_matrix(out_root: Path | None = None, quick: bool = False, log=print) -> Path:
    """Run every cell; write the figure and table; return their folder."""
    stamp = f"{datetime.now(timezone.utc):%Y%m%dT%H%M%S}"
    schedule = "30s:12,48s:8" if quick else SCHEDULE
    run_ids = []
    started = time.perf_counter()
    for name, (params, rate, limit) in DATASETS.items():
        limit = limit // 5 if quick else limit
        dataset = get_dataset(name, **params)
        base = SimulationPlan(dataset_name=name, dataset=dataset, dataset_params=params, groupings=[],
                              workers=[WORKERS], clock=VirtualClock(rate=rate), limit=limit, progress=False,
                              tick_ms=TICK_MS)
        table, records, dead = read_stream(base)
        log(f"{name}: {len(table):,} tuples, {len(table.keys):,} keys at {rate:,} records/s")
        for routing, gparams in ROUTINGS.items():
            for protocol, batch in PROTOCOLS:
                config = RescaleConfig(tuple(parse_schedule(schedule)), protocol, batch, CostModel(), STATE_BYTES)
                tag = protocol.lower() + (f"-b{batch}" if batch != 1 else "")
                plan = dataclasses.replace(base, groupings=[routing], grouping_params=gparams, rescale=config,
                                           run_id=f"rescale-{stamp}-{name.lower()}-{routing.lower()}-{tag}")
                t = time.perf_counter()
                point = simulate_point(plan, table, records, dead, routing, WORKERS,
                                       experiment_id=f"rescale-{stamp}-{name.lower()}-{tag}")
                events = point.summary["rescale"]["events"]
                log(f"  {routing:<10}{tag:<16}" + "  ".join(
                    f"{e['event']}: moved {e['moved_groups']}/{e['moved_keys']} pause {e['pause_ms']:.0f} ms "
                    f"held {e['held_tuples']} p99 {e['hold_delay_ms_p99'] or 0:.1f} ms "
                    f"done {e['rescale_ms']:.0f} ms viol {e['ownership_violations']}" for e in events)
                    + f"  [{time.perf_counter() - t:.1f} s]")
                run_ids.append(point.run_id)
    runs = load_runs(out_root, run_ids=run_ids)
    events = load_events(runs)
    out = results_root(out_root) / "compare" / f"rescale-{stamp}"
    out.mkdir(parents=True, exist_ok=True)
    metrics = load_metrics(runs)
    for stem, fig in rescale_figures(metrics, events).items():
        for ext in ("png", "svg"):
            fig.savefig(out / f"{stem}.{ext}", dpi=110, format=ext)
        log(f"figure: {out / stem}.png")
    (out / "rescale.md").write_text(rescale_table_markdown(events))
    events.drop(columns=["steps"], errors="ignore").to_csv(out / "rescale.csv", index=False)
    log(f"table: {out / 'rescale.md'} (and rescale.csv)")
    log(f"{len(run_ids)} cells in {time.perf_counter() - started:.0f} s")
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="60 s of input per dataset (smoke test)")
    args = parser.parse_args(argv)
    out = run_matrix(quick=args.quick)
    print((out / "rescale.md").read_text())
    return 0


if __name__ == "__main__":
    sys.exit(main())
