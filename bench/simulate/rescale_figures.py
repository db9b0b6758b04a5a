"""Figures of the rescale events (rescaling.md §4) from a finished rescale simulation: hold
delays, violations, imbalance, throughput and latency before / during / after each event, the
per-tick columns of metrics.parquet, and the points of the InfluxDB measurement `rescale`."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from bench import metrics
from bench.observer.influx_schema import RESCALE, rescale_point
from bench.simulate.engine import TupleTable

if TYPE_CHECKING:  # the simulation imports this module
    from bench.simulate.rescale import RescaleResult

WINDOW_MS = 30_000
"""Width of the before / after windows of throughput and latency around a rescale, ms."""


def _pct(values: npt.NDArray[np.float64], q: float) -> float | None:
    return float(np.percentile(values, q)) if values.size else None


def event_figures(events, table, cl, finish, bad, t_first) -> None:
    """Hold delays, violations, imbalance and throughput / latency around each event (in place)."""
    ts = table.ts_ms.astype(np.float64)
    latency = finish - ts
    starts = [t_first + e["started_ms"] for e in events] + [float("inf")]
    end = float(finish.max()) if finish.size else 0.0
    for i, e in enumerate(events):
        at, done = t_first + e["started_ms"], t_first + e["done_ms"]
        nxt = starts[i + 1]
        held_mask = cl.was_held & (cl.start >= at) & (cl.start < nxt)
        delays = cl.held[held_mask]
        e["held_tuples"] = int(held_mask.sum())
        e["hold_delay_ms_p50"] = _pct(delays, 50)
        e["hold_delay_ms_p99"] = _pct(delays, 99)
        e["hold_delay_ms_max"] = float(delays.max()) if delays.size else None
        e["rescale_ms"] = done - at
        e["ownership_violations"] = int((bad & (cl.start >= at) & (cl.start < nxt)).sum())
        prev_end = t_first if i == 0 else starts[i - 1] + events[i - 1]["rescale_ms"]
        e["std_dev_before"], e["max_mean_before"] = _imbalance(
            table, cl.worker, ts, prev_end, at, e["worker_ids_before"])
        e["std_dev_after"], e["max_mean_after"] = _imbalance(
            table, cl.worker, ts, done, min(nxt, end + 1), e["worker_ids_after"])
        for name, lo, hi in (("before", at - WINDOW_MS, at), ("during", at, done), ("after", done, done + WINDOW_MS)):
            sel = (finish >= lo) & (finish < hi)
            span_s = max(hi - lo, 1e-9) / 1000.0
            e[f"throughput_tps_{name}"] = float(sel.sum() / span_s) if hi > lo else None
            e[f"latency_ms_p50_{name}"] = _pct(latency[sel], 50)
            e[f"latency_ms_p99_{name}"] = _pct(latency[sel], 99)


def old_owner_share(events, table, cl, units, t_first) -> npt.NDArray[np.float64]:
    """`old_owner_share_during`: of the tuples of moved units processed while the rescale was under
    way, the share their old owner processed (LEARNER keeps the old owner loaded until the switch:
    near 1; a pause protocol processes none of them during the pause: None).

    Returns per tuple: 1.0 if it belongs to a unit moved by the latest event started before it was
    processed and its old owner processed it, 0.0 if another worker did, NaN otherwise.
    """
    unit = units.unit_of[table.key_code]
    at_old = np.full(len(table), np.nan)
    starts = [t_first + e["started_ms"] for e in events] + [np.inf]
    for i, e in enumerate(events):
        moved, old = e.pop("_moved"), e.pop("_old")
        at, done = t_first + e["started_ms"], t_first + e["done_ms"]
        sel = moved[unit] & (cl.start >= at) & (cl.start < done)
        e["moved_tuples_during"] = int(sel.sum())
        e["old_owner_share_during"] = float((cl.worker[sel] == old[unit[sel]]).mean()) if sel.any() else None
        span = moved[unit] & (cl.start >= at) & (cl.start < starts[i + 1])
        at_old[span] = (cl.worker[span] == old[unit[span]]).astype(np.float64)
    return at_old


def _imbalance(table, worker, ts, lo, hi, active) -> tuple[float | None, float | None]:
    """STD_DEV and max/mean of the weighted load over the active workers, tuples with lo <= ts < hi."""
    sel = (ts >= lo) & (ts < hi)
    if not sel.any():
        return None, None
    size = max(int(worker.max()) + 1, max(active) + 1)
    loads = np.bincount(worker[sel], weights=table.count[sel], minlength=size).astype(np.int64)[list(active)]
    return metrics.std_dev_percent(loads, len(active)), metrics.max_mean_imbalance(loads, len(active))


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


RESCALE_MEASUREMENT = RESCALE
"""InfluxDB measurement of rescale events: one point per event at its start (tags run_id, grouping,
dataset, protocol, routing, event; fields: `influx_schema.rescale_point`)."""


def influx_points(events: list[dict], t_first_ms: int) -> list[tuple[str, dict, int, dict]]:
    """`(measurement, fields, time_ms, tags)` of each event, for `InfluxWriter.write_point`; time is
    the event's start on the run's clock (the first tuple's time + `started_ms`). The point is
    `bench.observer.influx_schema.rescale_point`, the one a Spark rescale run writes too."""
    points = []
    for e in events:
        measurement, tags, fields, time_ms = rescale_point(e, int(t_first_ms + e["started_ms"]))
        points.append((measurement, fields, time_ms, tags))
    return points
