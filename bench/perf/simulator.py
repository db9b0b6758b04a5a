"""Perf section "simulator": tuples/s of `bench simulate`'s routing + figures, per grouping.

Stream: 1,000,000 tuples of COUNTRY_SKEW_R80 (seed 0) read once into a tuple table (untimed), with
10 splitters (grouping instances) and 10 workers, on a 1000 records/s virtual clock (so DYNAMIC_KEY
runs its KeySpace cycles). Timed body: `route_table` (one `Grouping.route` per instance) followed by
`figures` (the observer's final figures), which is what one simulated point costs once the stream is
read. Median of 5 runs after one untimed warm-up (numba compilation or cache load).

Baseline, measured in the same run: `figures` alone on a precomputed routing, the simulator's
fixed cost per point; the ratio says how far routing pulls below it. Target: >= 1M tuples/s for
DYNAMIC_KEY (issue "bench simulate ... and make perf").
"""

from __future__ import annotations

from bench.perf._harness import Row, median_rate
from bench.simulate.engine import figures, route_table
from bench.simulate.sources import VirtualClock, from_dataset
from datasets import get_dataset
from groupings import GROUPINGS

SECTION = "simulator"
TUPLES = 1_000_000
WORKERS = 10
SPLITTERS = 10
TARGETS = {"DYNAMIC_KEY": 1e6}


def run() -> list[Row]:
    """Measure each grouping's simulated point against the figures-only baseline."""
    table, _, _ = from_dataset(
        get_dataset("COUNTRY_SKEW_R80", length=TUPLES), SPLITTERS, VirtualClock(rate=1000.0)
    )
    assigned, _ = route_table(table, "KEY", WORKERS, SPLITTERS)
    baseline = median_rate(lambda: figures(table, assigned, WORKERS), len(table))
    rows = [Row.measured(SECTION, "baseline: figures only", baseline, "tuples/s", baseline)]
    for name in GROUPINGS:

        def point(name=name):
            workers, _ = route_table(table, name, WORKERS, SPLITTERS)
            figures(table, workers, WORKERS)

        rate = median_rate(point, len(table))
        note = "runs " + " ".join(f"{r / 1e6:.2f}M" for r in rate.runs)
        rows.append(Row.measured(SECTION, f"{name} point", rate, "tuples/s", baseline, TARGETS.get(name), note))
    return rows
