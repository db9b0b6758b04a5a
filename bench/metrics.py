"""The observer's metric formulas, as pure functions on numpy arrays (no Spark, no I/O).

Every later stage (observer, simulator, notebooks) computes its figures with these functions, so
that a number means the same everywhere:

- `std_dev_percent`: reference STD_DEV, the load imbalance in percentage points;
- `dist_cost`, `dist_cost_of_routing`: reference DIST_COST, the key replication (memory) factor;
- `throughput_ratio`: reference THROUGHPUT_RATIO (records per whole second of observer time);
- `max_mean_imbalance`, `max_minus_mean_imbalance`: the imbalance figures of the PKG papers;
- the names of the observed metrics a stream batch's progress carries (the topology observes them,
  the observer reads them: `bench.observer.batches`).

Source: docs/reference/dkg-reference.md §10 (DistributionObserverBolt, Statistics), decisions
Q19-Q22 of §13, and Appendix A for the PKG-paper figures.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

SPLITTER_METRICS = "splitter"
"""Name of the observed metrics of the splitter's input records (`bench.topology.splitter`), per
batch: records, malformed, max_ts_ms."""

SPLIT_TUPLES_METRICS = "split_tuples"
"""Name of the observed metrics of the splitter's output, per batch: tuples, weight (sum of counts).
Observed after the explode: a sum over each record's tuples (`aggregate(tuples, ...)`) is a
higher-order function, which Spark evaluates without code generation."""

WORKER_METRICS = "workers"
"""Name of the observed metrics of the worker stage (`bench.topology.worker`), per batch: `rows`
(tuples that reached the worker tasks), `routed` (the grouping stage's routing summary of each
splitter instance: per-worker weighted and tuple counts, distinct key-worker pairs) and `latency`
(`bench.topology.worker.LATENCY_LINE` per worker). The routing summaries are computed once per
splitter instance and batch in the grouping stage and ride on one row each, so observing them costs
one aggregate per row; the former `sum(CASE WHEN worker = w ...)` per worker cost about 20 ms per
200,000 rows and worker (2 cores), 0.4 s per batch at W = 10."""

RESCALE_WINDOW_MS = 30_000
"""Width of the before / after windows of throughput and latency around a rescale, ms (the
simulator's figures and a Spark run's alike)."""


def std_dev_percent(
    worker_loads: npt.ArrayLike, num_workers: int | None = None
) -> float:
    """Reference STD_DEV: population standard deviation of each worker's percentage of the total.

    Formula: with `v_i = 100 * (w_i / total)` for each of the W configured workers (0 for a worker
    never seen, Q20), `avg = sum(v) / W` and `STD_DEV = sqrt(sum((v - avg)**2) / W)`.

    Args:
        worker_loads: shape (k,), the (weighted, Q19) count of each worker, k <= W; workers
            missing at the end count as 0.
        num_workers: W, the configured worker count; defaults to `len(worker_loads)`.
    Returns: percentage points; 0.0 for a perfect balance, `100*sqrt(W-1)/W` when one worker takes
        everything (30.0 for W = 10); -1.0 when W = 0 (the reference's value); NaN when the total
        is 0 (undefined; the observer never computes it then).
    Raises: ValueError: more loads than `num_workers`, a negative load, or not 1-dimensional.
    Source: §10 STD_DEV; vectors: [100, 0x9] -> 30.0, W=5 {80, 20} -> 30.983866769659336.
    """
    if (num_workers if num_workers is not None else np.size(worker_loads)) == 0:
        return -1.0
    values, width = _padded(worker_loads, num_workers)
    total = values.sum()
    if total == 0:
        return math.nan
    values = 100.0 * (values / total)
    avg = values.sum() / width
    return float(math.sqrt(((values - avg) ** 2).sum() / width))


def dist_cost(distinct_pairs: int, distinct_keys: int) -> float:
    """Reference DIST_COST: distinct key-worker pairs per distinct key.

    Formula: `pairs / keys`, 0.0 when there is no key. The number of workers each key was sent
    to, on average: KEY gives 1, PARTIAL_KEY <= 2, DYNAMIC_KEY <= the pool size, SHUFFLE tends to
    min(n, key frequency).

    Args: distinct_pairs: number of distinct (key, worker) pairs; distinct_keys: of keys.
    Returns: the ratio (dimensionless, >= 1 once a key was seen).
    Raises: ValueError: a negative count, or pairs < keys (every key has at least one worker).
    Source: §10 DIST_COST.
    """
    if distinct_pairs < 0 or distinct_keys < 0:
        raise ValueError("counts must be >= 0")
    if distinct_keys == 0:
        return 0.0
    if distinct_pairs < distinct_keys:
        raise ValueError(f"{distinct_pairs} key-worker pairs cannot cover {distinct_keys} keys")
    return distinct_pairs / distinct_keys


def dist_cost_of_routing(
    keys: Sequence[object] | npt.ArrayLike, workers: npt.ArrayLike
) -> tuple[float, int, int]:
    """DIST_COST of a routing: the routing-level equivalent of the observer's figure.

    Args: keys: shape (m,), the key of each tuple (strings or integer key codes); workers: shape
        (m,), the worker index each tuple went to.
    Returns: `(dist_cost, distinct_pairs, distinct_keys)`; (0.0, 0, 0) for an empty routing.
    Raises: ValueError: keys and workers differ in length.
    Source: §10 ("Routing-level equivalents"): equal to the observer's when every count is 1
        and all windows are observed.
    """
    key_arr = np.asarray(keys)
    worker_arr = np.asarray(workers, dtype=np.int64)
    if key_arr.shape != worker_arr.shape or key_arr.ndim != 1:
        raise ValueError(
            f"keys {key_arr.shape} and workers {worker_arr.shape} must be 1-D of the same length"
        )
    if key_arr.size == 0:
        return 0.0, 0, 0
    _, key_codes = np.unique(key_arr, return_inverse=True)
    distinct_keys = int(key_codes.max()) + 1
    span = int(worker_arr.max()) - int(worker_arr.min()) + 1
    pair_codes = key_codes.astype(np.int64) * span + (worker_arr - worker_arr.min())
    distinct_pairs = int(np.unique(pair_codes).size)
    return dist_cost(distinct_pairs, distinct_keys), distinct_pairs, distinct_keys


def throughput_ratio(total: float, elapsed_ms: int) -> float:
    """Reference THROUGHPUT_RATIO: records per whole elapsed second.

    Formula: `total / floor(elapsed_ms / 1000)` (a double over a whole number of seconds, Q21).

    Args: total: weighted record count since the observer's clock started; elapsed_ms: ms since
        then (the clock starts at the first window emission, §10).
    Returns: records per second; +inf when `elapsed_ms < 1000` and `total > 0`; NaN when both are
        0 (Java's 0.0/0).
    Raises: ValueError: negative `elapsed_ms` or `total`.
    Source: §10 THROUGHPUT_RATIO, Q21.
    """
    if elapsed_ms < 0 or total < 0:
        raise ValueError("total and elapsed_ms must be >= 0")
    seconds = int(elapsed_ms) // 1000
    if seconds == 0:
        return math.inf if total > 0 else math.nan
    return float(total) / seconds


def max_mean_imbalance(worker_loads: npt.ArrayLike, num_workers: int | None = None) -> float:
    """Max-over-mean load imbalance: the most loaded worker's load over the average load.

    Formula: `max(w) / (sum(w) / W)`, idle workers counted as 0; 1.0 is a perfect balance and W
    means one worker takes everything.

    Args: worker_loads: shape (k,), per-worker counts, k <= W; num_workers: W (default k).
    Returns: the ratio; NaN when the total is 0.
    Raises: ValueError: as `std_dev_percent`, or W = 0.
    Source: standard load-balance factor; PKG/DKG papers (Nasir et al. 2015, Appendix A).
    """
    loads, width = _padded(worker_loads, num_workers)
    total = loads.sum()
    if total == 0:
        return math.nan
    return float(loads.max() / (total / width))


def max_minus_mean_imbalance(worker_loads: npt.ArrayLike, num_workers: int | None = None) -> float:
    """Imbalance of the PKG papers: the most loaded worker's load minus the average load.

    Formula: `lambda = max(w) - sum(w) / W`, idle workers counted as 0; in the loads' unit.

    Args: worker_loads: shape (k,), per-worker counts, k <= W; num_workers: W (default k).
    Returns: 0.0 for a perfect balance.
    Raises: ValueError: as `std_dev_percent`, or W = 0.
    Source: Nasir et al., "The power of both choices" (ICDE 2015) and spec Appendix A
        ("imbalance = max - avg").
    """
    loads, width = _padded(worker_loads, num_workers)
    return float(loads.max() - loads.sum() / width)


def _padded(
    worker_loads: npt.ArrayLike, num_workers: int | None
) -> tuple[npt.NDArray[np.float64], int]:
    """The loads as float64, zero-padded to W; validates shape, W and signs."""
    loads = np.asarray(worker_loads, dtype=np.float64)
    if loads.ndim != 1:
        raise ValueError(f"worker_loads must be 1-dimensional, got shape {loads.shape}")
    width = len(loads) if num_workers is None else int(num_workers)
    if width == 0:
        raise ValueError("no worker: the imbalance is undefined")
    if len(loads) > width:
        raise ValueError(f"{len(loads)} worker loads for {width} configured workers")
    if (loads < 0).any():
        raise ValueError("worker loads must be >= 0")
    padded = np.zeros(width, dtype=np.float64)
    padded[: len(loads)] = loads
    return padded, width
