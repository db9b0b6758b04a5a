"""Figures of the rescale events (rescaling.md §4) from a finished rescale simulation: hold
delays, violations, imbalance, throughput and latency before / during / after each event (the
per-tick columns of metrics.parquet: bench/simulate/rescale_ticks.py; the events' points of the
InfluxDB measurement `rescale`: `bench.observer.influx_schema.rescale_points`)."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from bench import metrics
from bench.observer.influx_schema import RESCALE


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
        for name, lo, hi in (("before", at - metrics.RESCALE_WINDOW_MS, at), ("during", at, done),
                             ("after", done, done + metrics.RESCALE_WINDOW_MS)):
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


RESCALE_MEASUREMENT = RESCALE
"""InfluxDB measurement of rescale events: one point per event at its start (tags run_id, grouping,
dataset, protocol, routing, event; fields: `influx_schema.rescale_point`; the points:
`influx_schema.rescale_points`)."""
