"""The per-tick columns of a rescale simulation's metrics.parquet (on the tuples' clock, as
`engine.timeline`): throughput, latency, each worker's load in the tick, held tuples, whether a
rescale was under way, and the share of moved units' tuples their old owner processed."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from bench.simulate.engine import TupleTable
from bench.simulate.rescale import RescaleResult

EMPTY_TICK = {"throughput_tps": 0.0, "latency_ms_p50": None, "latency_ms_p99": None,
              "latency_ms_max": None, "window_worker_loads": None, "held_tuples": 0, "rescaling": False,
              "moved_old_owner_share": None}
"""The columns of `tick_columns` for a tick in which no tuple finished."""


def _nanmean(values: npt.NDArray[np.float64]) -> float | None:
    values = values[~np.isnan(values)]
    return float(values.mean()) if values.size else None


def tick_columns(table: TupleTable, result: RescaleResult, tick_ms: int) -> dict[int, dict]:
    """Per observer tick (of the tuples' clock, as `engine.timeline`): tuples finished per second,
    latency p50 / p99 / max of the tuples finished in the tick (ms), each worker's processed load in
    the tick (weighted), tuples held, whether a rescale was under way, and
    `moved_old_owner_share`: of the tick's tuples of units moved by the latest rescale, the share
    their old owner processed (None before the first rescale). Keyed by tick index
    (floor((t - t0) / tick_ms))."""
    if len(table) == 0:
        return {}
    t0 = int(table.ts_ms.min())
    tick = ((result.finish_ms - t0) // tick_ms).astype(np.int64)
    latency = result.finish_ms - table.ts_ms
    out: dict[int, dict] = {}
    order = np.argsort(tick, kind="stable")
    ticks, starts = np.unique(tick[order], return_index=True)
    bounds = np.append(starts, len(order))
    spans = [(t0 + e["started_ms"], t0 + e["done_ms"]) for e in result.events]
    for tk, lo, hi in zip(ticks.tolist(), bounds[:-1].tolist(), bounds[1:].tolist(), strict=True):
        idx = order[lo:hi]
        lat = latency[idx]
        a, b = t0 + tk * tick_ms, t0 + (tk + 1) * tick_ms
        out[tk] = {
            "throughput_tps": 1000.0 * len(idx) / tick_ms,
            "latency_ms_p50": float(np.percentile(lat, 50)),
            "latency_ms_p99": float(np.percentile(lat, 99)),
            "latency_ms_max": float(lat.max()),
            "window_worker_loads": np.bincount(result.worker[idx], weights=table.count[idx],
                                               minlength=result.num_workers).astype(np.int64).tolist(),
            "held_tuples": int(result.was_held[idx].sum()),
            "rescaling": any(s < b and d >= a for s, d in spans),
            "moved_old_owner_share": _nanmean(result.at_old_owner[idx]),
        }
    return out
