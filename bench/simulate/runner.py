"""`bench simulate`: sweep groupings x worker counts over one tuple stream, one run record per point.

The stream is read once (a dataset under a virtual clock, or a recorded input topic) and routed
again for every point, with the same grouping code and metric functions as the streaming run.
"""

from __future__ import annotations

import secrets
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone

import pandas as pd
from tqdm import tqdm

from bench.observer.influx import InfluxWriter
from bench.observer.influx_schema import rescale_points
from bench.results.record import RunRecord, check_run_id, new_run_id
from bench.simulate import rescale
from bench.simulate.engine import TupleTable, figures, route_table, timeline, worker_state
from bench.simulate.rescale import RescaleConfig
from bench.simulate.rescale_ticks import EMPTY_TICK, tick_columns
from bench.simulate.sources import DeadLetters, VirtualClock, from_dataset, from_topic
from bench.stack import connector
from datasets.base import Dataset
from groupings import create_grouping
from groupings.rescaling import check_rescalable


@dataclass
class SimulationPlan:
    """What to simulate. Sizes: `groupings` x `workers` points, each with `splitters` instances."""

    dataset_name: str
    dataset: Dataset
    dataset_params: dict
    groupings: list[str]
    workers: list[int]
    splitters: int = 10
    clock: VirtualClock = field(default_factory=VirtualClock)
    limit: int | None = None
    from_topic: str | None = None
    bootstrap_servers: str | None = None
    tick_ms: int = 10_000
    grouping_params: dict = field(default_factory=dict)
    run_id: str | None = None
    experiment_id: str | None = None
    progress: bool = True
    rescale: RescaleConfig | None = None
    influx_url: str | None = None
    influx_database: str = "groupings"


@dataclass(frozen=True)
class PointResult:
    run_id: str
    grouping: str
    workers: int
    summary: dict
    path: str


def read_stream(plan: SimulationPlan) -> tuple[TupleTable, int, DeadLetters]:
    """The plan's tuple stream (one read for every point)."""
    bar = None
    if plan.progress:
        bar = tqdm(total=plan.limit, unit="rec", desc="reading", unit_scale=True, leave=False)
    try:
        if plan.from_topic:
            return from_topic(plan.dataset, plan.from_topic, plan.bootstrap_servers, plan.splitters, progress=bar)
        return from_dataset(plan.dataset, plan.splitters, plan.clock, plan.limit, progress=bar)
    finally:
        if bar is not None:
            bar.close()


def run(plan: SimulationPlan, log=print) -> list[PointResult]:
    """Simulate every point of `plan`, writing `results/<run_id>/` for each.

    Raises: ValueError/TypeError for bad grouping names or parameters (before anything is read),
        RuntimeError for an unreachable broker or a missing topic (`--from-topic`).
    """
    for g in plan.groupings:  # fail on a bad name or parameter before reading anything
        create_grouping(g, max(plan.workers), **plan.grouping_params)
        if plan.rescale is not None:
            check_rescalable(g)
    if plan.run_id and len(plan.groupings) * len(plan.workers) > 1:
        raise ValueError("--run-id names one run: give one grouping and one worker count, or use --experiment-id")
    experiment_id = plan.experiment_id or (
        f"{datetime.now(timezone.utc):%Y%m%dT%H%M%S}-sim-{plan.dataset_name.lower()}-{secrets.token_hex(2)}"
    )
    started = time.perf_counter()
    table, records, dead = read_stream(plan)
    read_s = time.perf_counter() - started
    log(f"read {records:,} records -> {len(table):,} tuples, {len(table.keys):,} distinct keys "
        f"({dead.count:,} dead letters) in {read_s:.1f} s")
    if plan.rescale is not None:  # the schedule against the input, before any point runs
        span = int(table.ts_ms.max() - table.ts_ms.min()) if len(table) else 0
        for grouping in plan.groupings:
            for workers in plan.workers:
                rescale.validate(plan.rescale, grouping, workers, plan.grouping_params, span)
    results = []
    for grouping in plan.groupings:
        for workers in plan.workers:
            results.append(_point(plan, table, records, dead, grouping, workers, experiment_id))
    return results


def simulate_point(plan: SimulationPlan, table: TupleTable, records: int, dead: DeadLetters, grouping: str,
                   workers: int, experiment_id: str) -> PointResult:
    """One point of `plan` over a stream already read (`read_stream`): route, figure, write the record."""
    return _point(plan, table, records, dead, grouping, workers, experiment_id)


def _point(plan, table, records, dead, grouping, workers, experiment_id) -> PointResult:
    run_id = check_run_id(plan.run_id) if plan.run_id else new_run_id(grouping, f"sim-{plan.dataset_name}")
    t = time.perf_counter()
    assigned, instances = route_table(table, grouping, workers, plan.splitters, plan.grouping_params)
    route_s = time.perf_counter() - t
    width = workers
    rescaled = None
    if plan.rescale is not None:
        rescaled = rescale.simulate(table, grouping, workers, plan.splitters, plan.grouping_params, plan.rescale)
        assigned, width = rescaled.worker, max(workers, rescaled.num_workers)
    final = figures(table, assigned, width)
    rows = _ticks(plan, table, assigned, width, rescaled)
    summary = _summary(plan, table, grouping, workers, final, rows[-1] if rows else {}, records, dead, route_s)
    if rescaled is not None:
        summary["rescale"] = {
            **plan.rescale.to_dict(),
            "events": rescaled.events,
            "ownership_violations": rescaled.violations,
            "worker_id_space": width,
        }
    if hasattr(instances[0], "pool_sizes"):  # DYNAMIC_KEY: keys whose pool left the default size
        summary["pool_sizes_instance0"] = instances[0].pool_sizes()
    record = RunRecord(run_id, kafka_connector=connector.cached_record)
    record.write_run("simulate", _run_config(plan, grouping, workers), {
        "name": plan.dataset_name, "params": plan.dataset_params, "fingerprint": plan.dataset.fingerprint(),
        "records": records, "tuples": len(table), "distinct_keys": int(len(table.keys)),
        "dead_letters": {"count": dead.count, "first": dead.first},
    }, extra={"experiment_id": experiment_id})
    for row in rows:
        row["run_id"] = run_id
    if rescaled is not None and plan.influx_url:
        summary["influx"] = _write_influx(plan, run_id, grouping, rescaled, int(table.ts_ms.min()))
    record.write_metrics(rows)
    record.write_state(rescaled.state if rescaled is not None else worker_state(table, assigned))
    record.write_summary(summary)
    return PointResult(run_id, grouping, workers, summary, str(record.path))


def _ticks(plan: SimulationPlan, table: TupleTable, assigned, width: int, rescaled) -> list[dict]:
    """The observer's rows on the tuples' clock (`engine.timeline`), with a rescale run's per-tick
    columns (`rescale_ticks.tick_columns`; `EMPTY_TICK` for a tick in which no tuple finished)."""
    rows = timeline(table, assigned, width, plan.tick_ms)
    if rescaled is not None:
        extra = tick_columns(table, rescaled, plan.tick_ms)
        t0 = int(table.ts_ms.min())
        for row in rows:
            row.update(extra.get((row["time_ms"] - t0) // plan.tick_ms - 1, EMPTY_TICK))
    return rows


def _summary(plan: SimulationPlan, table: TupleTable, grouping: str, workers: int, final, last: dict,
             records: int, dead: DeadLetters, route_s: float) -> dict:
    """summary.json of a point, in the streaming run's layout (so one reader serves both modes):
    the reference figures of the `last` tick, the exact `final` figures, the hottest keys."""
    return {
        # The streaming run's layout (bench/run/), so one reader serves both modes.
        "status": "completed",
        "mode": "simulate",
        "grouping": grouping,
        "dataset": plan.dataset_name,
        "workers": workers,
        "splitters": plan.splitters,
        "reference": {k: last.get(k) for k in ("std_dev", "dist_cost", "throughput_ratio", "total_count", "duration_ms")},
        "exact": {
            "total_count": final.total_count,
            "worker_loads": final.worker_loads,
            "worker_tuples": final.worker_tuples,
            "std_dev": final.std_dev,
            "dist_cost": final.dist_cost,
            "max_mean_imbalance": final.max_mean_imbalance,
            "keys": final.distinct_keys,
            "pairs": final.distinct_pairs,
        },
        "hottest_keys": [
            {"key": key, "count": count, "share_pct": 100.0 * count / final.total_count}
            for key, count in final.hottest_keys[:5]
        ],
        "records": records,
        "dead_letters": dead.count,
        "simulator": {"tuples": len(table), "route_tuples_per_s": len(table) / route_s if route_s > 0 else None},
    }


def _run_config(plan: SimulationPlan, grouping: str, workers: int) -> dict:
    """run.json `config` of a point."""
    config = {
        "grouping": grouping, "workers": workers, "splitters": plan.splitters,
        "grouping_params": plan.grouping_params, "tick_ms": plan.tick_ms, "limit": plan.limit,
        "clock": {"rate": plan.clock.rate, "speed": plan.clock.speed, "origin_ms": plan.clock.origin_ms},
        "from_topic": plan.from_topic, "bootstrap_servers": plan.bootstrap_servers,
    }
    if plan.rescale is not None:
        config["rescale"] = plan.rescale.to_dict()
    return config


def _write_influx(plan: SimulationPlan, run_id: str, grouping: str, rescaled, t_first_ms: int) -> dict:
    """The rescale events as points of the `rescale` measurement (`influx_schema.rescale_points` on
    the tuples' clock); returns the writer's status (failed writes are counted there, the run goes
    on: the run record is the record)."""
    writer = InfluxWriter(plan.influx_url, plan.influx_database,
                          {"run_id": run_id, "grouping": grouping, "dataset": plan.dataset_name, "mode": "simulate"})
    try:
        for measurement, tags, fields, time_ms in rescale_points(rescaled.events, t_first_ms):
            writer.write_point(measurement, tags, fields, time_ms)
    finally:
        writer.close()
    return writer.status()


def format_table(results: list[PointResult]) -> str:
    """A plain-text table of the points: the reference's result columns plus imbalance."""
    header = f"{'grouping':<14}{'W':>5}{'TOTAL COUNT':>14}{'STD DEV %':>11}{'DIST COST':>11}{'max/mean':>10}  run"
    lines = [header, "-" * len(header)]
    for r in results:
        s = r.summary["exact"]
        lines.append(
            f"{r.grouping:<14}{r.workers:>5}{s['total_count']:>14,}{s['std_dev']:>11.4f}{s['dist_cost']:>11.4f}"
            f"{s['max_mean_imbalance']:>10.3f}  {r.path}"
        )
    return "\n".join(lines)


def summary_frame(results: list[PointResult]):
    """The sweep's table as a pandas DataFrame (one row per point)."""
    return pd.DataFrame([
        {"run_id": r.run_id, "grouping": r.grouping, "workers": r.workers,
         "dataset": r.summary["dataset"], "splitters": r.summary["splitters"],
         **{k: r.summary["exact"][k] for k in ("total_count", "std_dev", "dist_cost", "max_mean_imbalance",
                                               "keys", "pairs")}}
        for r in results
    ])


def format_rescale(results: list[PointResult]) -> str:
    """A plain-text table of the rescale events of the points (one line per event)."""
    header = (f"{'routing':<10}{'protocol':<16}{'event':<14}{'moved grp':>10}{'moved keys':>11}"
              f"{'pause ms':>10}{'held':>7}{'hold p99 ms':>12}{'rescale ms':>11}{'violations':>11}")
    lines = [header, "-" * len(header)]
    for r in results:
        for e in r.summary.get("rescale", {}).get("events", []):
            p99 = e["hold_delay_ms_p99"]
            lines.append(
                f"{e['routing']:<10}{e['protocol']:<16}{e['event']:<14}{e['moved_groups']:>10}{e['moved_keys']:>11}"
                f"{e['pause_ms']:>10.1f}{e['held_tuples']:>7}{'-' if p99 is None else f'{p99:.2f}':>12}"
                f"{e['rescale_ms']:>11.1f}{e['ownership_violations']:>11}"
            )
    return "\n".join(lines)
