"""When a step of the capacity ladder holds, and what a ladder's capacity is: the thresholds and the
pure arithmetic of `make capacity` (no I/O; unit-tested on plain lists). See the package's docstring."""

from __future__ import annotations

import statistics
from dataclasses import dataclass

import numpy as np

BOUNDS_MS = (200.0, 1000.0, 5000.0)
"""The processing-latency bounds a capacity is given under, ms (a table each): 200 ms, where a
record-at-a-time engine works (Storm's p99 at cost 0 is 34-156 ms up to 64,000 rec/s here); 1 s,
Spark's Real-Time Mode's; 5 s, a micro-batch engine's (two batches of 2-3 s on two cores,
2026-11-25). A ladder climbs until a step fails the loosest; the tighter capacities come from the
same steps (`capacity_under`)."""
MAX_P99_MS = max(BOUNDS_MS)
"""The bound a ladder climbs under (`Thresholds.max_p99_ms`)."""
MAX_LAG_GROWTH = 0.10
"""Default bound on the consumer lag's growth, records/s per record/s of input rate. A micro-batch
reads everything produced before it starts, so the lag at a batch's end is the input of one batch
cycle, and it follows the cycle's jitter: over the 15 s after a step's warm-up, steps far below
capacity showed slopes of 5-6 % of the rate (KEY at 500 rec/s: 24 rec/s; PARTIAL_KEY at 250 rec/s:
16 rec/s, both with p99 4.4-6.1 s; 2026-11-25). 10 % flags a topology that reads a tenth less than
it is sent; a smaller shortfall shows as a p99 that grows over the step."""
CAPACITY_STEP = "capacity_step"
"""InfluxDB measurement of the steps (`step_point`)."""


@dataclass(frozen=True)
class Thresholds:
    max_p99_ms: float = MAX_P99_MS
    """A step whose processing p99 (after the warm-up) exceeds this does not hold."""
    max_lag_growth: float = MAX_LAG_GROWTH
    """A step whose consumer lag grows faster than this fraction of the rate does not hold."""


def lag_series(batches: list[dict], first_ts_ms: int, rate: float, total: int,
               warmup_s: float = 0.0) -> tuple[np.ndarray, np.ndarray]:
    """(t in s since `first_ts_ms`, lag in records) at the end of each batch that read records and
    ended after the warm-up and before the input's last intended send time (`total / rate`):
    records the producer was due to have sent by then (open loop: `rate * t`) minus records the
    query had read and processed (cumulative `records` of the observer's batch figures, in batch
    order). Batches after the input's end only drain the lag, whatever the topology's capacity:
    with them an overloaded step's catch-up made its slope negative (PARTIAL_KEY at 4000 rec/s and
    1 ms, above its 2,472 rec/s bound: -906 rec/s)."""
    done = 0
    ts, lags = [], []
    end_s = total / rate if rate > 0 else float("inf")
    for b in sorted(batches, key=lambda b: b["batch_id"]):
        done += int(b.get("records") or 0)
        if not b.get("records"):
            continue
        t = (b["end_ms"] - first_ts_ms) / 1000.0
        if t < warmup_s or t > end_s:
            continue
        ts.append(t)
        lags.append(rate * max(t, 0.0) - done)
    return np.asarray(ts, dtype=float), np.asarray(lags, dtype=float)


def lag_slope(t: np.ndarray, lag: np.ndarray) -> float | None:
    """Least-squares slope of lag over time, records/s; None with fewer than 3 points."""
    if len(t) < 3 or np.ptp(t) <= 0:
        return None
    return float(np.polyfit(t, lag, 1)[0])


TOO_FEW_LAG_SAMPLES = "too few lag samples after the warm-up (fewer than 3): no lag trend"
"""Why a step that kept no lag trend does not hold: its input is extended first (`bench.capacity.ladder`),
and a step is never passed on p99 alone."""


def step_holds(p99_ms: float | None, slope: float | None, rate: float, thresholds: Thresholds) -> tuple[bool, str]:
    """Whether a step holds, and why not. A step without a latency figure, or without a lag trend
    (fewer than 3 lag samples after the warm-up), does not hold."""
    if p99_ms is None:
        return False, "no processing latency measured"
    if p99_ms > thresholds.max_p99_ms:
        return False, f"p99 {p99_ms:.0f} ms > {thresholds.max_p99_ms:g} ms"
    if slope is None:
        return False, TOO_FEW_LAG_SAMPLES
    if slope > thresholds.max_lag_growth * rate:
        return False, f"lag grows {slope:.0f} rec/s > {thresholds.max_lag_growth:g} x rate"
    return True, "holds"


def holds_under(step: dict, bound_ms: float) -> bool:
    """Whether a step that was decided under the ladder's loosest p99 bound (`step_holds`) also holds
    under the tighter `bound_ms`: it held, and its p99 is at most `bound_ms`."""
    return bool(step["holds"]) and step.get("p99_ms") is not None and step["p99_ms"] <= bound_ms


def capacity_under(steps: list[dict], bound_ms: float) -> float | None:
    """A ladder's capacity under the p99 bound `bound_ms`: the highest rate of its steps (in the
    order run) before the first that does not hold under it (`holds_under`)."""
    return capacity_of([{**s, "holds": holds_under(s, bound_ms)} for s in steps])


def capacity_of(steps: list[dict]) -> float | None:
    """The highest rate of a ladder's steps (in the order run) before the first that did not hold."""
    best = None
    for s in steps:
        if not s["holds"]:
            break
        best = s["rate"]
    return best


def ladder_saturated(steps: list[dict]) -> bool:
    """Whether a ladder found the capacity: some step did not hold. When every step held, the
    capacity is only a lower bound (the ladder's top rate); more `--rates` would find it."""
    return any(not s["holds"] for s in steps)


def median_and_spread(values: list[float | None], lower_bounds: list[bool] | None = None) -> dict:
    """Median of the repetitions' capacities (a repetition with none counts as 0) and their min/max.

    `lower_bounds[i]` marks a value that is only a lower bound (a ladder on which every step held).
    `at_least` is True when the median rests on such a value (a middle value of the sorted list is a
    lower bound, lower bounds sorting after equal exact values): the true median may be higher."""
    got = [0.0 if v is None else float(v) for v in values]
    bounds = list(lower_bounds) if lower_bounds is not None else [False] * len(got)
    if not got:
        return {"median": None, "min": None, "max": None, "values": [], "lower_bounds": [], "at_least": False}
    ordered = sorted(zip(got, bounds))
    n = len(ordered)
    middle = {n // 2} if n % 2 else {n // 2 - 1, n // 2}
    return {"median": statistics.median(got), "min": min(got), "max": max(got), "values": got,
            "lower_bounds": bounds, "at_least": any(ordered[i][1] for i in middle)}


def hot_worker_bound(hottest_share: float, cost_ms: float) -> float | None:
    """The rate a grouping that sends a share of the tuples to one worker cannot exceed:
    1000 / (share * cost_ms) tuples/s (that worker sleeps cost_ms per tuple). None at cost 0."""
    if cost_ms <= 0 or hottest_share <= 0:
        return None
    return 1000.0 / (hottest_share * cost_ms)


def default_rates(cost_ms: float, workers: int) -> list[float]:
    """The ladder of input rates (records/s, doubling) when none is given.

    cost > 0: from 250 up to the first rate at or above twice 1000 * W / cost, the rate at which
    even a perfectly balanced grouping's workers are saturated (20,000 at W = 10 and 1 ms); the
    ladder stops at the first step that fails long before that.
    cost 0: the workers cost nothing, so the pipeline is the limit: from 4,000 up to 256,000.
    A live KEY step at 128,000 rec/s held on two cores (batches of 250,000-500,000 records in
    3-3.5 s, p99 6.2 s, the producer at 126,000 rec/s; 2026-11-25, docs/topology.md); 256,000 x
    20 s of input is 5.1M records, within COUNTRY_SKEW_R80's 10M."""
    if cost_ms > 0:
        start, top = 250.0, 2 * 1000.0 * workers / cost_ms
    else:
        start, top = 4000.0, 256_000.0
    rates = [start]
    while rates[-1] < top:
        rates.append(rates[-1] * 2)
    return rates


# -- driving real runs ------------------------------------------------------------------------------
