"""The simulator's core: route a columnar tuple stream through S grouping instances, then compute
the observer's figures over the routing.

Storm semantics reproduced (spec §1, §14): one grouping instance per splitter, each seeing its
own tuples in order, its clock the tuple's time; instances share nothing, so each is routed as
one batch (`Grouping.route`), which is exactly `choose` tuple by tuple.

Each instance is prepared (`start_ms`) at the time of its first tuple, as the streaming grouping
stage does; for the golden stream that is T0 for every instance (S <= R).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from bench import metrics
from groupings import create_grouping


@dataclass(frozen=True)
class TupleTable:
    """Tuples after the splitter, in each splitter's processing order (Kafka offset order).

    All arrays have shape (m,):
        splitter: int32, the splitter (= grouping instance) of each tuple, in [0, S).
        key_code: int32, index into `keys`.
        count: int64, the tuple's weight (1 unless the dataset carries counts, Q19).
        ts_ms: int64, the grouping clock of the tuple (Kafka timestamp or virtual time), ms.
    keys: shape (k,), object array of the distinct keys.
    """

    splitter: npt.NDArray[np.int32]
    key_code: npt.NDArray[np.int32]
    count: npt.NDArray[np.int64]
    ts_ms: npt.NDArray[np.int64]
    keys: npt.NDArray[np.object_]

    def __len__(self) -> int:
        return len(self.key_code)


def route_table(
    table: TupleTable, grouping: str, workers: int, splitters: int, params: dict | None = None
) -> tuple[npt.NDArray[np.int32], list]:
    """Route every tuple with one `grouping` instance per splitter.

    Returns: (worker index of each tuple, shape (m,) int32; the S grouping instances after routing).
    Raises: ValueError/TypeError from `create_grouping` for a bad name or parameter; ValueError if a
        splitter id is outside [0, splitters).
    """
    if len(table) and (table.splitter.min() < 0 or table.splitter.max() >= splitters):
        raise ValueError(f"splitter ids must lie in [0, {splitters})")
    out = np.empty(len(table), dtype=np.int32)
    instances = []
    order = np.argsort(table.splitter, kind="stable")  # each splitter's tuples, in their own order
    bounds = np.searchsorted(table.splitter[order], np.arange(splitters + 1))
    for s in range(splitters):
        idx = order[bounds[s] : bounds[s + 1]]
        start_ms = int(table.ts_ms[idx[0]]) if len(idx) else 0
        g = create_grouping(grouping, workers, start_ms=start_ms, **(params or {}))
        if len(idx):
            out[idx] = g.route(table.keys[table.key_code[idx]], table.ts_ms[idx])
        instances.append(g)
    return out, instances


@dataclass(frozen=True)
class Figures:
    """The observer's figures over a set of routed tuples (reference §10 plus the extras)."""

    total_count: int          # weighted (sum of counts), TOTAL_COUNT
    tuples: int               # unweighted
    worker_loads: list[int]   # weighted count per worker, shape (W,)
    worker_tuples: list[int]  # tuples per worker, shape (W,)
    std_dev: float            # STD_DEV, percentage points
    dist_cost: float          # DIST_COST
    distinct_keys: int
    distinct_pairs: int
    max_mean_imbalance: float
    hottest_keys: list[tuple[str, int]]

    def to_dict(self) -> dict:
        return {k: (list(v) if isinstance(v, tuple) else v) for k, v in self.__dict__.items()}


def figures(
    table: TupleTable, workers_of_tuples: npt.NDArray[np.int32], num_workers: int, top: int = 10,
    mask: npt.NDArray[np.bool_] | None = None,
) -> Figures:
    """Figures of the tuples selected by `mask` (all by default).

    Raises: ValueError: shapes differ.
    """
    if workers_of_tuples.shape != table.key_code.shape:
        raise ValueError("one worker per tuple is needed")
    sel = slice(None) if mask is None else mask
    w = workers_of_tuples[sel].astype(np.int64)
    k = table.key_code[sel].astype(np.int64)
    c = table.count[sel]
    loads = np.bincount(w, weights=c, minlength=num_workers).astype(np.int64)
    counts = np.bincount(w, minlength=num_workers).astype(np.int64)
    distinct_keys = int(np.unique(k).size)
    distinct_pairs = int(np.unique(k * num_workers + w).size)
    key_totals = np.bincount(k, weights=c, minlength=len(table.keys)).astype(np.int64)
    hottest = np.argsort(-key_totals, kind="stable")[:top]
    total = int(loads.sum())
    return Figures(
        total_count=total,
        tuples=int(counts.sum()),
        worker_loads=loads.tolist(),
        worker_tuples=counts.tolist(),
        std_dev=metrics.std_dev_percent(loads, num_workers) if total else 0.0,
        dist_cost=metrics.dist_cost(distinct_pairs, distinct_keys),
        distinct_keys=distinct_keys,
        distinct_pairs=distinct_pairs,
        max_mean_imbalance=metrics.max_mean_imbalance(loads, num_workers) if total else 0.0,
        hottest_keys=[(str(table.keys[i]), int(key_totals[i])) for i in hottest if key_totals[i] > 0],
    )


def timeline(
    table: TupleTable, workers_of_tuples: npt.NDArray[np.int32], num_workers: int, tick_ms: int
) -> list[dict]:
    """Cumulative figures at each observer tick of the tuples' clock: the rows of `metrics.parquet`,
    with the streaming observer's columns (bench/observer/observer.py; results/README.md).

    Tick j covers every tuple with `ts_ms < t0 + (j+1)*tick_ms`, t0 the earliest tuple time, as an
    observer that never resets would report (Q22); `window_*` figures cover that tick alone.
    Ticks without tuples are skipped. `throughput_ratio` and `duration_ms` are on the virtual clock.
    """
    if len(table) == 0:
        return []
    t0 = int(table.ts_ms.min())
    tick_of = (table.ts_ms - t0) // tick_ms
    order = np.argsort(tick_of, kind="stable")
    ticks, starts = np.unique(tick_of[order], return_index=True)  # non-empty ticks only
    bounds = np.append(starts, len(order))
    pair_of = table.key_code.astype(np.int64) * num_workers + workers_of_tuples
    seen_pair = np.zeros(len(table.keys) * num_workers, dtype=bool)
    seen_key = np.zeros(len(table.keys), dtype=bool)
    pairs = keys = 0
    loads = np.zeros(num_workers, dtype=np.int64)
    rows = []
    for tick, lo, hi in zip(ticks.tolist(), bounds[:-1].tolist(), bounds[1:].tolist(), strict=True):
        idx = order[lo:hi]
        window = np.bincount(workers_of_tuples[idx], weights=table.count[idx], minlength=num_workers).astype(np.int64)
        loads += window
        new_pairs = np.unique(pair_of[idx])
        pairs += int((~seen_pair[new_pairs]).sum())
        seen_pair[new_pairs] = True
        new_keys = np.unique(table.key_code[idx])
        keys += int((~seen_key[new_keys]).sum())
        seen_key[new_keys] = True
        total = int(loads.sum())
        elapsed = (tick + 1) * tick_ms
        rows.append({
            "tick": len(rows),
            "time_ms": t0 + elapsed,
            "std_dev": metrics.std_dev_percent(loads, num_workers),
            "dist_cost": metrics.dist_cost(pairs, keys),
            "throughput_ratio": metrics.throughput_ratio(total, elapsed),
            "total_count": total,
            "duration_ms": elapsed,
            "max_mean_imbalance": metrics.max_mean_imbalance(loads, num_workers),
            "window_std_dev": metrics.std_dev_percent(window, num_workers),
            "window_count": int(window.sum()),
            "keys": keys,
            "pairs": pairs,
            "worker_loads": loads.tolist(),
            "worker_shares": (100.0 * loads / total).tolist(),
        })
    return rows


def worker_state(table: TupleTable, workers_of_tuples: npt.NDArray[np.int32]) -> dict:
    """The stateful workers' final per-key state when nothing moves: one row per (key, worker)
    pair that received tuples -- `count` (tuples), `sum` (of the tuples' count field),
    `first_ts_ms`, `last_ts_ms` (event time) -- sorted by key, then worker.

    A key-owning routing gives one row per key; SHUFFLE and the key-splitting groupings give one
    partial state per worker that saw the key.
    """
    if len(table) == 0:
        return {c: [] for c in ("key", "worker", "count", "sum", "first_ts_ms", "last_ts_ms")}
    width = int(workers_of_tuples.max()) + 1
    pair = table.key_code.astype(np.int64) * width + workers_of_tuples
    pairs, inverse = np.unique(pair, return_inverse=True)
    first = np.full(len(pairs), np.iinfo(np.int64).max)
    last = np.full(len(pairs), np.iinfo(np.int64).min)
    np.minimum.at(first, inverse, table.ts_ms)
    np.maximum.at(last, inverse, table.ts_ms)
    keys = table.keys[pairs // width]
    frame = {
        "key": [str(k) for k in keys],
        "worker": (pairs % width).astype(np.int64).tolist(),
        "count": np.bincount(inverse, minlength=len(pairs)).astype(np.int64).tolist(),
        "sum": np.bincount(inverse, weights=table.count, minlength=len(pairs)).astype(np.int64).tolist(),
        "first_ts_ms": first.tolist(),
        "last_ts_ms": last.tolist(),
    }
    order = sorted(range(len(pairs)), key=lambda i: (frame["key"][i], frame["worker"][i]))
    return {c: [v[i] for i in order] for c, v in frame.items()}
