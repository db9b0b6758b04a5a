"""The InfluxDB schema of a run: every field of every measurement has one declared type.

InfluxDB fixes a field's type by the first point written to a shard and refuses a point whose
field has another type ("field type conflict"), so the type must not depend on a Python value
being `5` or `5.0` in one tick, one resume or one grouping. Integers stay integers (counts); ratios
and durations are floats. Tags: `run_id, grouping, dataset, workers` (+ `worker` on `worker_load`).

A tick's points are a pure function of its `metrics.parquet` row and the run's tags, with the row's
`time_ms` as timestamp: `python -m bench influx backfill RUN_ID` rewrites exactly the points of a
live run, so a backfill is idempotent (InfluxDB keeps one point per series and timestamp).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator, Mapping

OBSERVER = "observer"
WORKER_LOAD = "worker_load"
RESCALE = "rescale"

OBSERVER_FIELDS: dict[str, type] = {
    # floats: ratios, percentages, durations, rates, latencies
    "std_dev": float, "dist_cost": float, "throughput_ratio": float, "duration_ms": float,
    "max_mean_imbalance": float, "window_std_dev": float, "processed_rows_per_s": float,
    "batch_duration_ms": float, "batch_us_per_row": float, "latency_p50_ms": float, "latency_p99_ms": float,
    "latency_p999_ms": float,
    "latency_max_ms": float, "window_latency_p50_ms": float, "window_latency_p99_ms": float,
    "window_latency_max_ms": float, "driver_rss_mib": float, "spark_rss_mib": float,
    "spark_heap_committed_mib": float, "spark_heap_used_mib": float, "spark_heap_live_mib": float, "checkpoint_mib": float,
    # integers: counts, ids, epoch ms
    "time_ms": int, "total_count": int, "window_count": int, "keys": int, "pairs": int, "records": int,
    "malformed": int, "dropped_by_watermark": int, "batches": int, "last_batch_id": int, "state_rows": int,
    "state_memory_bytes": int, "state_sst_bytes": int, "spark_full_gcs": int, "aggregated_count": int,
    "latency_tuples": int,
    # JSON text
    "hottest_keys": str,
    # booleans: a rescale run's ticks only
    "rescaling": bool,
}
"""Fields of `observer`, one point per tick (metrics.parquet row)."""

WORKER_LOAD_FIELDS: dict[str, type] = {"load": int, "share_pct": float}
"""Fields of `worker_load`, one point per worker per tick (tag `worker`)."""

NOT_FIELDS = frozenset({"run_id", "tick", "worker_loads", "worker_shares", "watermark"})
"""Row columns that are not `observer` fields (tags, the index, the per-worker lists)."""

RUN_TAGS = ("run_id", "grouping", "dataset", "workers")


def _typed(value, kind: type):
    """`value` as `kind`; None when absent (None, NaN, +-inf: InfluxDB has no such values)."""
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return None
    if kind is str:
        return str(value)
    if kind is bool:
        return bool(value)
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    if not math.isfinite(number):
        return None
    return int(round(number)) if kind is int else number


def row_points(row: Mapping, tags: Mapping[str, str]) -> Iterator[tuple[str, dict, dict, int]]:
    """`(measurement, tags, fields, time_ms)` of one observer tick, fields typed per the schema.

    Raises: KeyError naming a numeric row column the schema does not declare (a new metric must be
    declared here before it is written, or its type would depend on its first value).
    """
    time_ms = int(row["time_ms"])
    fields = {}
    for name, value in row.items():
        if name in NOT_FIELDS:
            continue
        kind = OBSERVER_FIELDS.get(name)
        if kind is None:
            if isinstance(value, int | float) and not isinstance(value, bool):
                raise KeyError(f"observer field {name!r} has no declared type in bench.observer.influx_schema")
            continue
        typed = _typed(value, kind)
        if typed is not None:
            fields[name] = typed
    if fields:
        yield OBSERVER, dict(tags), fields, time_ms
    loads, shares = row.get("worker_loads"), row.get("worker_shares")
    if loads is not None and shares is not None:
        for w, (load, share) in enumerate(zip(loads, shares)):
            wf = {k: v for k, v in (("load", _typed(load, int)), ("share_pct", _typed(share, float))) if v is not None}
            if wf:
                yield WORKER_LOAD, {**tags, "worker": str(w)}, wf, time_ms


RESCALE_TAGS = ("protocol", "routing", "event")
"""Tags of a `rescale` point beside the run's (the event's protocol, grouping and schedule item)."""


def rescale_point(event: Mapping, time_ms: int) -> tuple[str, dict, dict, int]:
    """`(measurement, tags, fields, time_ms)` of one rescale event (an object of summary.json
    `rescale.events`, of `bench simulate` or of `bench run`), for the measurement `rescale`.

    Fields: every finite number of the event as a float (`pause_ms`, `moved_keys`, `moved_groups`,
    `state_bytes_read`, `throughput_tps_before`, ...: docs/rescaling.md, "Figures of a rescale"),
    whatever its Python type, so that no later point meets a field type conflict; each numeric entry
    of `steps` as `step_<name>` (float, ms or count); and `description`, one line of text for an
    annotation (`<event> <protocol> on <routing>: <before> -> <after> workers, pause <ms> ms, <n>
    keys moved`). Tags: `protocol`, `routing`, `event`; the caller adds the run's.
    `time_ms`: epoch ms of the point, chosen by the caller (the simulator: the event's start on the
    tuples' clock; a Spark run: the wall-clock time of the stop).
    """
    def number(value) -> float | None:
        if isinstance(value, bool) or not isinstance(value, int | float):
            return None
        return float(value) if math.isfinite(value) else None

    fields = {k: n for k, v in event.items() if (n := number(v)) is not None}
    for name, value in (event.get("steps") or {}).items():
        if (n := number(value)) is not None:
            fields[f"step_{name}"] = n
    pause = event.get("pause_ms")
    fields["description"] = (
        f"{event['event']} {event['protocol']} on {event['routing']}: {event.get('workers_before')} -> "
        f"{event.get('workers_after')} workers, pause {'-' if pause is None else f'{pause:,.0f}'} ms, "
        f"{event.get('moved_keys', '-')} keys moved")
    tags = {k: str(event[k]) for k in RESCALE_TAGS}
    return RESCALE, tags, fields, int(time_ms)


def rescale_points(events: Iterable[Mapping], t_first_ms: int | None = None) -> list[tuple[str, dict, dict, int]]:
    """`(measurement, tags, fields, time_ms)` of each rescale event (`rescale_point`; the caller
    adds the run's tags), for `bench.observer.influx.write_points` or `InfluxWriter.write_point`.
    One point function, two clocks:

    - a simulate run (`t_first_ms` given: the first tuple's Kafka/event timestamp, epoch ms): the
      point at the event's start on the tuples' clock, `t_first_ms + started_ms`;
    - a Spark run (`t_first_ms` None): the point at the stop on the driver's wall clock,
      `stop_wall_ms` (epoch ms); an event the driver has not stopped for has no point.
    """
    if t_first_ms is not None:
        return [rescale_point(e, int(t_first_ms + e["started_ms"])) for e in events]
    return [rescale_point(e, int(e["stop_wall_ms"])) for e in events if e.get("stop_wall_ms") is not None]


def run_rescale_points(run: Mapping, summary: Mapping | None,
                       metrics_time_ms: Iterable[int]) -> list[tuple[str, dict, dict, int]]:
    """`(measurement, tags, fields, time_ms)` of a run record's `rescale` points, one per event of
    summary.json `rescale.events`, with the tags and timestamps the run gave them when it wrote them
    live (so that writing them again leaves one point each):

    - a stream run (`bench run --rescale`): the run's tags (`RUN_TAGS` from run.json `config`) and
      the point at the stop, `stop_wall_ms` (epoch ms, the driver's wall clock;
      bench/rescale/figures.py `write_influx`);
    - a simulate run (`bench simulate --rescale`, bench/simulate/runner.py): tags `run_id`,
      `grouping`, `dataset`, `mode=simulate`, the point at the event's start on the tuples' clock,
      the first tuple's Kafka/event timestamp (epoch ms) plus `started_ms`. That first timestamp is
      not in the record as such: the simulator's first tick holds the first tuple and ends one
      tick after it (bench/simulate/engine.py `timeline`), so it is the first tick's `time_ms`
      minus run.json `config.tick_ms`.

    Args: run: run.json; summary: summary.json (None: a run that did not finish, no points);
        metrics_time_ms: the `time_ms` of metrics.parquet's rows (epoch ms).
    Each tag set adds `protocol`, `routing`, `event` (`rescale_point`).
    """
    events = ((summary or {}).get("rescale") or {}).get("events") or []
    if not events:
        return []
    config = run["config"]
    if run.get("mode") == "simulate":
        times = list(metrics_time_ms)
        if not times or not config.get("tick_ms"):
            return []
        t_first_ms = int(min(times)) - int(config["tick_ms"])
        tags = {"run_id": run["run_id"], "grouping": summary["grouping"], "dataset": summary["dataset"],
                "mode": "simulate"}
        return [(m, {**tags, **t}, fields, time_ms) for m, t, fields, time_ms in rescale_points(events, t_first_ms)]
    tags = {k: str(config[k]) for k in RUN_TAGS}
    return [(m, {**tags, **t}, fields, time_ms) for m, t, fields, time_ms in rescale_points(events)]
