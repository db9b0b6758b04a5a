"""Figures of a rescale measured on a Spark run (docs/rescaling.md, "Figures of a rescale"): the
throughput, processing latency and load imbalance around each event, which ticks a rescale was
under way in (`rescale_spans`; the observer's `overlaps` marks its ticks), and the events' points
of the InfluxDB measurement `rescale`.

Two clocks. The schedule and `started_ms` / `done_ms` are on the Kafka-timestamp clock (as in the
simulator); what a rescale costs a running query happens on the driver's wall clock: from the stop
(`stop_wall_ms`, journalled by bench/rescale/stop_the_world.py) to the end of the switch batch,
`stop_wall_ms + pause_ms` (`resumed_wall_ms`). The figures here are on the wall clock, from the
observer's per-batch facts (bench/observer/batches.py `batch_figures`): a batch's tuples count as
finished at the end of its batch (`end_ms`: the start of its progress plus `triggerExecution`).
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from bench import latency, metrics
from bench.observer.influx import one_line, write_points
from bench.observer.influx_schema import rescale_points


def resumed_wall_ms(event: Mapping) -> int | None:
    """End of the rescale on the wall clock (epoch ms): the stop plus `pause_ms` (HANDOFF, which
    does not pause: its start plus `rescale_ms`); None while the switch batch has not committed."""
    span = event.get("rescale_ms") if event.get("protocol") == "HANDOFF" else event.get("pause_ms")
    return None if span is None else int(event["stop_wall_ms"] + span)


def rescale_spans(journal_events: list[Mapping], batches: Mapping[int, Mapping]) -> list[tuple[int, int | None]]:
    """`(stop, resumed)` wall-clock spans (epoch ms) of the events the driver has stopped for: from
    the stop to the end of the switch batch (the observer's batch `end_ms`), `None` as the end while
    that batch has not committed (the rescale is under way)."""
    spans = []
    for e in list(journal_events):
        if e.get("stop_wall_ms") is None:
            continue
        switch = batches.get(e["switch_batch"]) if e.get("switch_batch") is not None else None
        spans.append((int(e["stop_wall_ms"]), int(switch["end_ms"]) if switch is not None else None))
    return spans


def _window(batches: list[Mapping], lo: float, hi: float, live: bool) -> dict:
    """Tuples per second and processing latency p50 / p99 of the batches that ended in (lo, hi]."""
    inside = [b for b in batches if lo < b["end_ms"] <= hi]
    tuples = sum(int(sum(b["tuples"])) for b in inside)
    out = {"throughput_tps": 1000.0 * tuples / (hi - lo) if hi > lo else None,
           "latency_ms_p50": None, "latency_ms_p99": None}
    if live:
        merged = latency.figures_ms(latency.merge(enc for b in inside for enc in (b.get("latency") or {}).values()))
        out["latency_ms_p50"], out["latency_ms_p99"] = merged["latency_p50_ms"], merged["latency_p99_ms"]
    return out


def _imbalance(batches: list[Mapping], first: float, last: float, active: list[int]) -> tuple:
    """STD_DEV (pp) and max/mean of the routed weighted load of batches first..last (ids, inclusive)
    over the active workers; (None, None) without load."""
    rows = [b["loads"] for b in batches if first <= b["batch_id"] <= last]
    if not rows:
        return None, None
    loads = np.asarray(rows, dtype=np.int64).sum(axis=0)[list(active)]
    if not loads.sum():
        return None, None
    return metrics.std_dev_percent(loads, len(active)), metrics.max_mean_imbalance(loads, len(active))


def add_event_figures(events: list[dict], batches: Mapping[int, Mapping], live_input: bool,
                      window_ms: int = metrics.RESCALE_WINDOW_MS) -> None:
    """Add to each event of summary.json `rescale.events` (in place), on the wall clock:

    - `resumed_wall_ms`: the end of the pause (epoch ms);
    - `throughput_tps_before`, `_during`, `_after` (tuples/s): tuples of the batches that ended in
      the `window_ms` before the stop, after the stop up to the end of the switch batch (included),
      and in the `window_ms` after that, over the window's length. A window is cut at the run's first batch with
      data, its last one, and the neighbouring events' pauses, so that a short run is not diluted
      by time it did not run;
    - `latency_ms_p50_*`, `latency_ms_p99_*` (ms): the processing latency (bench/latency.py, HDR
      histograms of the worker tasks) of the tuples of those batches; None when the input was not
      replayed live (a recorded topic's Kafka timestamps give the topic's age, not a latency);
    - `std_dev_before`, `max_mean_before` (pp, ratio): the routed load of the batches after the
      previous event's switch batch up to the barrier batch, over `worker_ids_before`;
      `std_dev_after`, `max_mean_after`: from the switch batch up to the next event's barrier (or
      the end), over `worker_ids_after`.

    The names are the simulator's (bench/simulate/rescale_figures.py `event_figures`), whose windows
    are on its simulated clock. Args: batches: the observer's per-batch figures by batch id.
    """
    ordered = [batches[i] for i in sorted(batches)]
    with_data = [b for b in ordered if b.get("rows")]
    first_ms = min((b["start_ms"] for b in with_data), default=None)
    last_ms = max((b["end_ms"] for b in with_data), default=None)
    for i, e in enumerate(events):
        stop, resumed = e.get("stop_wall_ms"), resumed_wall_ms(e)
        e["resumed_wall_ms"] = resumed
        previous_end = resumed_wall_ms(events[i - 1]) if i > 0 else None
        next_stop = events[i + 1].get("stop_wall_ms") if i + 1 < len(events) else None
        windows = {}
        if stop is not None and first_ms is not None:
            windows["before"] = (max(stop - window_ms, first_ms, previous_end or first_ms), stop)
        if resumed is not None:
            windows["during"] = (stop, resumed)  # the switch batch ends at `resumed`
            if last_ms is not None:
                windows["after"] = (resumed, min(resumed + window_ms, last_ms,
                                                 next_stop if next_stop is not None else last_ms))
        for name in ("before", "during", "after"):
            figures = _window(ordered, *windows[name], live_input) if name in windows else {
                "throughput_tps": None, "latency_ms_p50": None, "latency_ms_p99": None}
            for key, value in figures.items():
                e[f"{key}_{name}"] = value
        prev_switch = events[i - 1].get("switch_batch") if i > 0 else None
        barrier, switch = e.get("barrier_batch"), e.get("switch_batch")
        next_barrier = events[i + 1].get("barrier_batch") if i + 1 < len(events) else None
        e["std_dev_before"], e["max_mean_before"] = (
            _imbalance(ordered, prev_switch if prev_switch is not None else -1, barrier, e["worker_ids_before"])
            if barrier is not None and e.get("worker_ids_before") else (None, None))
        e["std_dev_after"], e["max_mean_after"] = (
            _imbalance(ordered, switch, next_barrier if next_barrier is not None else float("inf"),
                       e["worker_ids_after"])
            if switch is not None and e.get("worker_ids_after") else (None, None))


def write_influx(events: list[Mapping], run_tags: Mapping[str, str], url: str, database: str, *, token: str = "",
                 org: str = "-", bucket: str | None = None) -> dict:
    """Write the events' points (`influx_schema.rescale_points` on the driver's wall clock, the
    simulator's point timed at the stop, `stop_wall_ms`; the run's tags added) synchronously;
    returns `{"points_sent", "error"}`. A failure is reported, never raised: the run record
    (summary.json) is the record."""
    points = [(m, {**run_tags, **tags}, fields, t) for m, tags, fields, t in rescale_points(events)]
    try:
        return {"points_sent": write_points(url, database, points, token=token, org=org, bucket=bucket),
                "error": None}
    except Exception as e:  # noqa: BLE001 - reported in summary.json
        return {"points_sent": 0, "error": one_line(e)}
