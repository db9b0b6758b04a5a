"""The capacity ladders on the real stack: one paced live run per step (`bench.run`), each step
measured and decided (`decision`), written to InfluxDB (`step_point`), and the whole as a record,
a table and a figure of p99 against rate. With `peers=("storm",)` each harness ladder is followed by
the Storm peer's on the same rates (`bench.capacity.storm`), repetition by repetition. Beside each
harness step, Spark's floor: the empty query's batch cycle on the step's topic at the step's batch
size (`bench.run.floor`), so that the harness's batches can be read against what Spark allows."""

from __future__ import annotations

import itertools
import json
import math
import os
import resource
import statistics
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from bench.capacity.decision import (BOUNDS_MS, CAPACITY_STEP, TOO_FEW_LAG_SAMPLES, Thresholds, capacity_of,
                                     capacity_under, default_rates, holds_under, hot_worker_bound,
                                     ladder_saturated, lag_series, lag_slope, median_and_spread, step_holds)
from bench.capacity.storm import run_storm_step, storm_batch, storm_system
from bench.observer.influx import one_line, write_points
from bench.run.floor import measure_floor
from bench.run.stream import run_stream
from bench.run.options import RunOptions
from bench.run.preflight import Prepared, default_master, prepare
from bench.topology.config import MODES, TopologyConfig
from bench.topology.session import build_session


@dataclass
class CapacityOptions:
    groupings: list[str]
    costs_ms: list[float]
    rates: list[float] | None
    """The ladder for every cost; None: `default_rates` of each cost."""
    dataset: str = "COUNTRY_SKEW_R80"
    step_s: float = 20.0
    repeat: int = 3
    workers: int = 10
    thresholds: Thresholds = field(default_factory=Thresholds)
    warmup_s: float = 5.0
    experiment_id: str = "capacity"
    results_dir: Path | None = None
    peers: tuple[str, ...] = ()
    """Peer systems laddered after each harness ladder: `("storm",)` or none."""
    trigger_s: float = 1.0
    """The harness's micro-batch trigger interval, s (`bench run --trigger-s`; 0: back to back)."""
    aggregators: int = 10
    """The harness's aggregator partitions A (`bench run --aggregators`): in Spark also the state
    partitions of the grouping stage and the worker windows, so the tasks of each stateful stage
    per batch. The reference's 10 by default; fewer fit the stateful stages to a small machine's
    cores, as the Storm peer's executors are fitted (`bench.capacity.storm`)."""
    storm_batches: tuple[int, ...] = (1,)
    """The Storm peer's `topology.producer.batch.size` values: each gets its own ladder after the
    harness's, under its own system name (`storm`, `storm-b<N>`); the table marks the best per
    grouping and cost (`summarize`). Storm's default, 1, is its guide's setting for latency."""
    modes: tuple[str, ...] = MODES
    """The harness's execution modes laddered, each a system of its own (`microbatch`, `realtime`)."""
    bounds_ms: tuple[float, ...] = BOUNDS_MS
    """The p99 bounds the capacities are given under, a table each; the ladders climb under the
    loosest (`thresholds.max_p99_ms`)."""
    realtime_batch_s: int = 300
    """The real-time mode's batch (`bench run --realtime-batch-s`): longer than a step, so that no
    batch boundary falls inside one."""
    producers: int = 1
    """Producer processes sending each step's input, for every system (`bench run --producers`)."""

    def rates_for(self, cost_ms: float) -> list[float]:
        return list(self.rates) if self.rates else default_rates(cost_ms, self.workers)

    def systems(self) -> list[str]:
        """The systems laddered, in the first repetition's order: the harness's modes, then the
        Storm peer's batch sizes."""
        return [*self.modes, *(storm_system(b) for b in (self.storm_batches if "storm" in self.peers else ()))]

    def harness_setting(self) -> str:
        """The harness's settings a capacity depends on, for the output: trigger, A, real-time batch."""
        trigger = "back to back" if self.trigger_s == 0 else f"every {self.trigger_s:g} s"
        parts = [f"A = {self.aggregators} aggregator (state) partitions"]
        if "microbatch" in self.modes:
            parts.insert(0, f"micro-batches {trigger}")
        if "realtime" in self.modes:
            parts.append(f"real-time batches of {self.realtime_batch_s} s")
        return ", ".join(parts)


def rotated(systems: list[str], rep: int) -> list[str]:
    """The systems in repetition `rep`'s order: the first repetition's, rotated by `rep`, so that each
    system runs first, in the middle and last as often as the repetitions allow."""
    k = rep % len(systems) if systems else 0
    return systems[k:] + systems[:k]


def measure_step(run_dir: Path, rate: float, warmup_s: float, thresholds: Thresholds) -> dict:
    """Read one step's run record (summary.json, run.json, the observer's batch journal) and decide.
    `batch_p50_ms`: the median duration of its batches that read records (Spark's
    `triggerExecution`, ms), None without one."""
    summary = json.loads((run_dir / "summary.json").read_text())
    run = json.loads((run_dir / "run.json").read_text())
    replay = (run.get("dataset") or {}).get("replay") or {}
    batches = [json.loads(line) for line in (run_dir / "observer" / "progress.jsonl").read_text().splitlines()
               if line.strip()]
    if summary.get("execution_mode") == "realtime":
        # A real-time batch's figures count the tuples the workers were done with (its span is when),
        # not records read: COUNTRY records are one tuple each.
        batches = [{**b, "records": b.get("rows") or 0} for b in batches]
    t, lag = lag_series(batches, int(replay.get("first_timestamp_ms") or 0), rate,
                        int(replay.get("records") or 0), warmup_s)
    slope = lag_slope(t, lag)
    p99 = (summary.get("latency") or {}).get("latency_p99_ms")
    ok, why = step_holds(p99, slope, rate, thresholds)
    if summary.get("status") != "completed":
        ok, why = False, f"run {summary.get('status')}: {summary.get('error')}"
    exact = summary.get("exact") or {}
    loads = exact.get("worker_tuples") or []
    ends = [b["end_ms"] for b in batches if b.get("end_ms")]
    # A real-time step has no batch of its tuples' path (its aggregator's batches are not one).
    durations = [] if summary.get("execution_mode") == "realtime" else \
        [b["duration_ms"] for b in batches if b.get("records") and b.get("duration_ms") is not None]
    return {"rate": rate, "run_id": run_dir.name, "holds": ok, "why": why, "p99_ms": p99,
            "batch_p50_ms": statistics.median(durations) if durations else None,
            "p50_ms": (summary.get("latency") or {}).get("latency_p50_ms"), "lag_slope": slope,
            "max_lag": float(lag.max()) if len(lag) else None,
            "hottest_share": (max(loads) / sum(loads)) if loads and sum(loads) else None,
            "time_ms": max(ends) if ends else int(1000 * (run_dir / "summary.json").stat().st_mtime)}


def step_point(step: dict, grouping: str, cost_ms: float, rep: int, dataset: str,
               experiment_id: str, system: str = "microbatch") -> tuple[str, dict, dict, int]:
    """`(measurement, tags, fields, time_ms)` of one step (a `measure_step` dict) for InfluxDB.

    Tags: run_id (the step's run, whose observer points carry the same tag; a Storm step's topic),
    grouping, dataset, cost_ms, repetition (1-based), experiment_id, system (microbatch, realtime,
    storm or storm-b<N>; harness on points written before 2026-11-29).
    Fields, typed the same whatever the values (InfluxDB refuses a type change): rate, p50_ms,
    p99_ms (ms), lag_slope (records/s), lag_growth (lag slope
    over the rate, the figure `max_lag_growth` bounds), max_lag (records), hottest_share (0-1),
    batch_p50_ms and spark_floor_ms (ms, harness steps: its median batch, Spark's floor beside it),
    all floats and absent when unknown; held (bool); why (text). Timestamp: the step's last batch.
    """
    def number(value) -> float | None:
        return float(value) if value is not None and math.isfinite(float(value)) else None

    slope, rate = number(step.get("lag_slope")), float(step["rate"])
    fields = {"rate": rate, "p50_ms": number(step.get("p50_ms")), "p99_ms": number(step.get("p99_ms")),
              "lag_slope": slope, "lag_growth": None if slope is None else slope / rate,
              "max_lag": number(step.get("max_lag")), "hottest_share": number(step.get("hottest_share")),
              "batch_p50_ms": number(step.get("batch_p50_ms")), "spark_floor_ms": number(step.get("spark_floor_ms")),
              "held": bool(step["holds"]), "why": str(step["why"])}
    tags = {"run_id": step["run_id"], "grouping": grouping, "dataset": dataset, "cost_ms": f"{cost_ms:g}",
            "repetition": str(rep + 1), "experiment_id": experiment_id, "system": system}
    return CAPACITY_STEP, tags, {k: v for k, v in fields.items() if v is not None}, int(step["time_ms"])


def climb(rates: list[float], step_at) -> list[dict]:
    """A ladder: `step_at(rate)` (a decided step dict with `holds`) for each rate in turn, until the
    first step that does not hold (included)."""
    steps = []
    for rate in rates:
        steps.append(step_at(rate))
        if not steps[-1]["holds"]:
            break
    return steps


def step_options(options: CapacityOptions, grouping: str, cost_ms: float, rate: float, tag: str,
                 mode: str = "microbatch", step_s: float | None = None) -> RunOptions:
    """The run of one harness step in execution mode `mode`: `step_s` (default `options.step_s`)
    seconds of input at `rate` into a topic of its own, run id
    `<experiment>-<mode>-<grouping>-c<cost>-r<rate>-<tag>`, short windows (5 s worker, 10 s
    aggregator, 2 s watermark delay) so that a 20 s step closes them, and the harness's trigger,
    aggregator partitions and real-time batch of `options`."""
    run_id = f"{options.experiment_id}-{mode}-{grouping.lower()}-c{cost_ms:g}-r{rate:g}-{tag}".replace(".", "_")
    return RunOptions(
        grouping=grouping, dataset=options.dataset, workers=options.workers, cost_ms=cost_ms, rate=rate,
        limit=max(1, int(rate * (step_s or options.step_s))), run_id=run_id, own_topic=True,
        experiment_id=options.experiment_id, worker_window_s=5, aggregator_window_s=10, watermark_delay_s=2,
        trigger_s=options.trigger_s, aggregators=options.aggregators, mode=mode,
        realtime_batch_s=options.realtime_batch_s, master=session_master(options), producers=options.producers,
        observer_tick_s=5.0, latency_warmup_s=options.warmup_s, results_dir=options.results_dir,
        progress=False, no_influx=False)


def session_master(options: CapacityOptions) -> str:
    """The capacity session's master, `local[N]`: a task slot per worker in micro-batch mode, and in
    real-time mode one for every task of the real-time query beside those of its audit and
    aggregator (`TopologyConfig.realtime_task_slots`)."""
    slots = int(default_master(options.workers, 10, options.aggregators)[6:-1])
    if "realtime" in options.modes:
        probe = TopologyConfig(grouping="KEY", dataset=options.dataset, workers=options.workers,
                               aggregators=options.aggregators, run_id="capacity", topic="-", bootstrap_servers="-",
                               checkpoint_dir=Path("."), results_dir=Path("."))
        slots = max(slots, probe.realtime_task_slots)
    return f"local[{slots}]"


EXTENSIONS = (2, 4)
"""How much longer a step's input is made, in turn, when it kept fewer than 3 lag samples after its
warm-up (a micro-batch's batches grow with the rate): the step is run again with twice, then four
times its input, and does not hold if it still has no lag trend."""


def driver_cpu_seconds() -> float:
    """CPU time of this Python process so far, every thread, s (`resource.getrusage`)."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def run_step(options: CapacityOptions, grouping: str, cost_ms: float, rate: float, tag: str, spark,
             log=print, mode: str = "microbatch") -> tuple[dict, Prepared]:
    """One paced live run of `grouping` at `rate` in execution mode `mode` (`options.step_s`
    seconds of input, its own topic, `step_options`), measured and decided (`measure_step`); run
    again with a longer input (EXTENSIONS) while it keeps no lag trend. With the CPU per record of
    the Spark JVM and of this Python driver less its main thread, which runs the producer's replay
    (`jvm_cpu_us_per_record`, `driver_cpu_us_per_record`, their sum `cpu_us_per_record`; the sum in
    CPU-seconds, `cpu_s`, and the step's records, `records`, for `cpu_fit`); in
    micro-batch mode, Spark's floor (`spark_floor_ms`: the empty query's median batch cycle at the
    step's median batch size, `bench.run.floor`, measured after the run, so neither its CPU nor its
    figures include it; None, with a warning, when it could not be measured); and the prepared run
    (its stack). Recorded nowhere but in the run's own folder (summary.json's `spark_floor`).

    Raises: KeyboardInterrupt: Ctrl-C during the step's run (the run stops as `bench run` does, its
        status `interrupted`): the step is not decided."""
    factors = (1, *EXTENSIONS)
    for i, factor in enumerate(factors):
        run_options = step_options(options, grouping, cost_ms, rate, tag if factor == 1 else f"{tag}-x{factor}",
                                   mode, options.step_s * factor)
        prepared = prepare(run_options, log=log)
        jvm, driver, main_thread = jvm_cpu_seconds(spark), driver_cpu_seconds(), time.thread_time()
        if run_stream(prepared, spark=spark, log=lambda *_: None).get("status") == "interrupted":
            raise KeyboardInterrupt  # Ctrl-C reached the step's run, which stopped and kept its folder
        step = measure_step(prepared.config.results_dir, rate, options.warmup_s, options.thresholds)
        driver = driver_cpu_seconds() - driver - (time.thread_time() - main_thread)
        jvm = None if jvm is None or (after := jvm_cpu_seconds(spark)) is None else after - jvm
        step.update(system=mode, step_s=options.step_s * factor, records=run_options.limit,
                    cpu_s=None if jvm is None else jvm + driver,
                    jvm_cpu_us_per_record=None if jvm is None else 1e6 * jvm / run_options.limit,
                    driver_cpu_us_per_record=1e6 * driver / run_options.limit,
                    cpu_us_per_record=None if jvm is None else 1e6 * (jvm + driver) / run_options.limit)
        if step["why"] != TOO_FEW_LAG_SAMPLES or i == len(factors) - 1:
            break
        log(f"  {TOO_FEW_LAG_SAMPLES}: the step again with {factors[i + 1]} times its input")
    step["spark_floor_ms"] = step_floor(spark, prepared, log) if mode == "microbatch" else None
    return step, prepared


def step_floor(spark, prepared: Prepared, log=print) -> float | None:
    """Spark's floor beside a harness step (`bench.run.floor.measure_floor` on the step's topic):
    the empty query's median batch cycle, ms; None, with a warning, when it cannot be measured
    (the step's own figures stand)."""
    summary_path = prepared.config.results_dir / "summary.json"
    try:
        summary = measure_floor(spark, prepared.config, json.loads(summary_path.read_text()))
    except Exception as e:  # noqa: BLE001 - a floor not measured leaves the step decided as it was
        log(f"  warning: Spark's floor not measured beside this step: {one_line(e)}")
        return None
    return (summary.get("spark_floor") or {}).get("cycle_p50_ms")


def run_ladder(options: CapacityOptions, grouping: str, cost_ms: float, rep: int, spark, log=print,
               mode: str = "microbatch") -> list[dict]:
    """One repetition of one grouping at one cost in execution mode `mode`: each rate in turn until
    a step does not hold."""
    def step_at(rate: float) -> dict:
        log(f"capacity: {mode} {grouping} cost {cost_ms:g} ms, rate {rate:g} rec/s (repetition {rep + 1}) ...")
        step, prepared = run_step(options, grouping, cost_ms, rate, f"k{rep}", spark, log, mode)
        _record_step(step, prepared, grouping, cost_ms, rep, options, log)
        return step

    return climb(options.rates_for(cost_ms), step_at)


def warm_up_step(options: CapacityOptions, grouping: str, cost_ms: float, spark, log=print,
                 mode: str = "microbatch") -> dict:
    """The ladder's first step run once in execution mode `mode` before the grouping's first
    repetition at this cost, and not counted: the session's JIT warms up on the very query, rates
    and cost the ladder runs.

    Why: with the session warmed up only by an unpaced run of 50,000 records, the first measured
    step of a ladder was its slowest: 5.8 s for its first batch with data and 2.8-3.5 s for the
    others at 8,000 rec/s, where the same step of a later repetition ran 1-2 s batches; SHUFFLE's
    and PARTIAL_KEY's first repetitions failed 8,000 rec/s on p99 (8,733 and 5,349 ms against a
    5 s bound) in ladders whose other repetitions held 64,000 and 128,000 (2026-11-28). A Storm
    step starts a fresh JVM every time, so it gets its warm-up step in that JVM, before the step's
    own records (`bench.capacity.storm.run_storm_step`)."""
    rate = options.rates_for(cost_ms)[0]
    log(f"capacity: {mode} {grouping} cost {cost_ms:g} ms, rate {rate:g} rec/s (warm-up step, not counted) ...")
    step, _ = run_step(options, grouping, cost_ms, rate, "warmup", spark, log, mode)
    p99 = step["p99_ms"]
    log(f"  -> {step['why']} (p99 {'-' if p99 is None else f'{p99:,.0f}'} ms; not counted)")
    return {"grouping": grouping, "cost_ms": cost_ms, **step}


def run_storm_ladder(options: CapacityOptions, grouping: str, cost_ms: float, rep: int, services: Prepared,
                     log=print, producer_batch: int = 1) -> list[dict]:
    """The Storm peer's ladder at the same rates (`bench.capacity.storm.run_storm_step`) with
    `producer_batch` as its producer batch size, on the broker and InfluxDB of `services` (a
    prepared run's)."""
    system = storm_system(producer_batch)

    def step_at(rate: float) -> dict:
        topic = f"{options.experiment_id}.{system}.{grouping.lower()}.c{cost_ms:g}.r{rate:g}.k{rep}"
        batch = "" if producer_batch == 1 else f", producer batch {producer_batch}"
        log(f"capacity: Storm peer {grouping} cost {cost_ms:g} ms, rate {rate:g} rec/s (repetition {rep + 1}{batch}) ...")
        step = run_storm_step(services.config.bootstrap_servers, options.dataset, grouping, cost_ms, rate,
                              options.step_s, options.warmup_s, options.thresholds, topic, producer_batch,
                              warm_up_rate=options.rates_for(cost_ms)[0], producers=options.producers)
        _record_step(step, services, grouping, cost_ms, rep, options, log)
        return step

    return climb(options.rates_for(cost_ms), step_at)


def _record_step(step: dict, services: Prepared, grouping: str, cost_ms: float, rep: int,
                 options: CapacityOptions, log) -> None:
    """Log a decided step and write its InfluxDB point (a failed write is logged: capacity.json has it)."""
    p99, slope = step["p99_ms"], step["lag_slope"]
    batch, floor = step.get("batch_p50_ms"), step.get("spark_floor_ms")
    beside = "" if floor is None else f", batch {'-' if batch is None else f'{batch:,.0f}'} ms, Spark's floor {floor:,.0f} ms"
    log(f"  -> {step['why']} (p99 {'-' if p99 is None else f'{p99:,.0f}'} ms, "
        f"lag slope {'-' if slope is None else f'{slope:,.1f}'} rec/s{beside})")
    if services.influx_url:
        try:
            write_points(services.influx_url, services.influx_database,
                         [step_point(step, grouping, cost_ms, rep, options.dataset, options.experiment_id,
                                     step["system"])])
        except Exception as e:  # noqa: BLE001 - the dashboards miss a point; capacity.json has it
            log(f"  warning: capacity step not written to InfluxDB: {one_line(e)}")


def jvm_cpu_seconds(spark) -> float | None:
    """CPU time of the Spark driver's JVM so far (every thread: executors in local mode, the JIT, GC),
    s, from /proc (Linux); None where there is no /proc."""
    pid = spark.sparkContext._jvm.java.lang.ProcessHandle.current().pid()
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def run_capacity(options: CapacityOptions, log=print) -> dict:
    """Every ladder; returns the capacity record (also written by the CLI).

    Per cost and grouping: an uncounted warm-up step of each harness mode (`warm_up_step`; a Storm
    step has its own, `run_storm_step`), then the repetitions, each running every system's ladder in
    the order `rotated` gives it, so that no system always runs first or last. A Ctrl-C ends the
    run at once: the record keeps the ladders that finished before it, and says `interrupted`."""
    spark = build_session(session_master(options), options.aggregators)
    ladders, warm_ups = [], []
    interrupted = False
    try:
        services = None  # the broker and InfluxDB of the Storm peer's steps (a harness step prepares its own)
        if "storm" in options.peers:
            services = prepare(RunOptions(grouping=options.groupings[0], dataset=options.dataset,
                                          workers=options.workers, cost_ms=options.costs_ms[0],
                                          run_id=f"{options.experiment_id}-services"), log=log)
        for cost_ms in options.costs_ms:
            for grouping in options.groupings:
                for mode in options.modes:
                    warm_ups.append(warm_up_step(options, grouping, cost_ms, spark, log, mode))
                for rep in range(options.repeat):
                    for system in rotated(options.systems(), rep):
                        if system in MODES:
                            steps = run_ladder(options, grouping, cost_ms, rep, spark, log, system)
                        else:
                            steps = run_storm_ladder(options, grouping, cost_ms, rep, services, log,
                                                     storm_batch(system))
                        ladders.append(ladder_record(system, grouping, cost_ms, rep, steps))
    except KeyboardInterrupt:
        interrupted = True
        log(f"capacity: interrupted; the record keeps the {len(ladders)} ladder(s) that finished")
    finally:
        spark.stop()
    return {"options": {**asdict(options), "results_dir": str(options.results_dir)}, "interrupted": interrupted,
            "warm_up_steps": warm_ups, "ladders": ladders, "capacity": summarize(ladders, options.bounds_ms)}


def ladder_record(system: str, grouping: str, cost_ms: float, rep: int, steps: list[dict]) -> dict:
    """One ladder of capacity.json: the system that ran it (`microbatch`, `realtime`, `storm`,
    `storm-b<N>`), its steps and capacity under its climbing bound."""
    return {"system": system, "grouping": grouping, "cost_ms": cost_ms, "rep": rep, "steps": steps,
            "capacity": capacity_of(steps), "saturated": ladder_saturated(steps)}


def system_of(ladder: dict) -> str:
    """A ladder's system; a record from before the real-time mode calls the micro-batch topology
    `harness`, and one from before the Storm peer names none."""
    system = ladder.get("system", "harness")
    return "microbatch" if system == "harness" else system


def _at_capacity(ladders: list[dict], figure: str, bound_ms: float | None = None) -> float | None:
    """Median over the ladders of `figure` (a step's key, e.g. `cpu_us_per_record`) at each one's
    last step that held (under `bound_ms`, or its climbing bound); None when no such step has it."""
    values = []
    for lad in ladders:
        held = list(itertools.takewhile(lambda s: s["holds"] if bound_ms is None else holds_under(s, bound_ms),
                                        lad["steps"]))
        if held and held[-1].get(figure) is not None:
            values.append(held[-1][figure])
    return statistics.median(values) if values else None


def cpu_fit(steps: list[dict]) -> tuple[float, float] | None:
    """What a record costs a system beyond what it burns anyway: the least-squares line of its steps'
    CPU-seconds (`cpu_s`) against their records (`records`), over the ladder's steps that held (from
    the first, as `capacity_of` climbs), as (marginal CPU, µs per record; fixed CPU, CPU-seconds per
    step). The fixed part is what a step costs with no record: a Storm step's JVM start, warm-up step
    and executors' waiting, a Spark step's query start, idle tasks and end-of-input drain. The
    capacity tables' CPU per record divides the whole by the records, which for a system with a
    large fixed part mostly measures the step's length (docs/performance.md). None with fewer than
    two held steps of different sizes that carry both figures (a record from before them)."""
    held = [s for s in itertools.takewhile(lambda s: s["holds"], steps)
            if s.get("cpu_s") is not None and s.get("records")]
    if len({s["records"] for s in held}) < 2:
        return None
    slope, intercept = np.polyfit([s["records"] for s in held], [s["cpu_s"] for s in held], 1)
    return 1e6 * float(slope), float(intercept)


def _median_fit(ladders: list[dict]) -> tuple[float | None, float | None]:
    """Median over the ladders of `cpu_fit`'s two figures, each over the ladders that have one."""
    fits = [fit for lad in ladders if (fit := cpu_fit(lad["steps"])) is not None]
    if not fits:
        return None, None
    return statistics.median(f[0] for f in fits), statistics.median(f[1] for f in fits)


def summarize(ladders: list[dict], bounds_ms: tuple[float, ...] = ()) -> list[dict]:
    """One row per (system, grouping, cost): median capacity over repetitions, spread
    (`median_and_spread`, with the ladders on which every step held marked as lower bounds), the
    hot-worker bound, and the engine's CPU per record at capacity (`cpu_us_per_record`: the Spark
    JVM's and the harness's Python driver's, less its replay, or the Storm peer JVM's CPU over the
    step, µs per record; the producer not counted), and the same CPU split by `cpu_fit` into a
    marginal and a fixed part (`marginal_cpu_us_per_record`, `fixed_cpu_s_per_step`: medians over
    the ladders, from their steps that held under the climbing bound); for the micro-batch harness,
    its median batch and Spark's floor at capacity (`batch_p50_ms`, `spark_floor_ms`, ms). Under `bounds`, the same
    figures per p99 bound (ms, as text) from the same steps (`capacity_under`). Where the Storm peer
    laddered more than one producer batch size for a grouping and cost, the row with the highest
    median capacity (a lower bound over an exact value at the same rate; on a tie, the first in the
    table's order) has `best_storm` True: the one a comparison keeps."""
    rows = []
    keys = sorted({(system_of(lad), lad["grouping"], lad["cost_ms"]) for lad in ladders},
                  key=lambda k: (k[2], k[1], k[0]))
    for system, grouping, cost in keys:
        mine = [lad for lad in ladders if (system_of(lad), lad["grouping"], lad["cost_ms"]) == (system, grouping, cost)]
        shares = [s["hottest_share"] for lad in mine for s in lad["steps"] if s.get("hottest_share")]
        share = statistics.median(shares) if shares else None
        spread = median_and_spread([lad["capacity"] for lad in mine], [not ladder_saturated(lad["steps"]) for lad in mine])
        firsts = [lad["steps"][0]["rate"] for lad in mine if lad["steps"]]
        marginal, fixed = _median_fit(mine)
        under = {}
        for bound in bounds_ms:
            under[f"{bound:g}"] = {
                **median_and_spread([capacity_under(lad["steps"], bound) for lad in mine],
                                    [all(holds_under(s, bound) for s in lad["steps"]) for lad in mine]),
                "cpu_us_per_record": _at_capacity(mine, "cpu_us_per_record", bound),
                "batch_p50_ms": _at_capacity(mine, "batch_p50_ms", bound),
                "spark_floor_ms": _at_capacity(mine, "spark_floor_ms", bound)}
        rows.append({"system": system, "grouping": grouping, "cost_ms": cost, **spread,
                     "first_rate": min(firsts) if firsts else None,
                     "hottest_share": share, "hot_worker_bound": hot_worker_bound(share or 0.0, cost),
                     "cpu_us_per_record": _at_capacity(mine, "cpu_us_per_record"),
                     "marginal_cpu_us_per_record": marginal, "fixed_cpu_s_per_step": fixed,
                     "batch_p50_ms": _at_capacity(mine, "batch_p50_ms"),
                     "spark_floor_ms": _at_capacity(mine, "spark_floor_ms"), "under": under})
    for grouping, cost in {(r["grouping"], r["cost_ms"]) for r in rows}:
        storms = [r for r in rows if r["system"].startswith("storm") and (r["grouping"], r["cost_ms"]) == (grouping, cost)]
        if len(storms) > 1:
            max(storms, key=lambda r: (r["median"] or 0, r["at_least"]))["best_storm"] = True
    return rows


def format_capacity_table(rows: list[dict], bound_ms: float | None = None) -> str:
    """The capacity rows (`summarize`) as a text table: under their climbing bound, or under the p99
    bound `bound_ms` (one of the rows' `under`). A capacity is shown `>=R` when it is only a lower
    bound (every step held) and `<R` when the ladder's first step, at R rec/s, did not hold (a
    capacity of 0 in the record: below the ladder, not none)."""
    head = ["SYSTEM", "GROUPING", "COST (ms)", "CAPACITY (rec/s, median)", "SPREAD (min-max)", "PER REPETITION",
            "HOTTEST WORKER", "BOUND 1000/(share*cost)", "CPU AT CAPACITY (us/record)",
            "CPU: MARGINAL (us/record) + FIXED (CPU-s/step)", "BATCH / SPARK'S FLOOR AT CAPACITY (ms)"]
    rows = [r if bound_ms is None else {**r, **r["under"][f"{bound_ms:g}"]} for r in rows]

    def shown(value: float, at_least: bool, row: dict) -> str:
        if value == 0 and row.get("first_rate"):
            return f"<{row['first_rate']:g}"
        return f"{'>=' if at_least else ''}{value:g}"

    body = [[r.get("system", "harness") + ("*" if r.get("best_storm") else ""), r["grouping"], f"{r['cost_ms']:g}",
             "-" if r["median"] is None else shown(r["median"], r["at_least"], r),
             "-" if r["min"] is None else f"{shown(r['min'], False, r)}-{shown(r['max'], False, r)}",
             ",".join(shown(v, b, r) for v, b in zip(r["values"], r["lower_bounds"])),
             "-" if r["hottest_share"] is None else f"{100 * r['hottest_share']:.1f} %",
             "-" if r["hot_worker_bound"] is None else f"{r['hot_worker_bound']:.0f}",
             "-" if r.get("cpu_us_per_record") is None else f"{r['cpu_us_per_record']:,.0f}",
             fit_cell(r), floor_cell(r)] for r in rows]
    widths = [max(len(h), *(len(b[i]) for b in body)) if body else len(h) for i, h in enumerate(head)]
    lines = [] if bound_ms is None else [f"under p99 <= {bound_ms:g} ms:"]
    lines += ["  ".join(c.ljust(w) for c, w in zip(cells, widths)).rstrip() for cells in (head, *body)]
    if any(any(r["lower_bounds"]) for r in rows):
        lines.append(">= : every step of the ladder held, so the capacity is at least its top rate (raise --rates)")
    if any(0 in r["values"] and r.get("first_rate") for r in rows):
        lines.append("<R : the ladder's first step, R rec/s, did not hold, so the capacity is below it (lower --rates)")
    if any(r.get("best_storm") for r in rows):
        lines.append("storm-bN : the Storm peer with topology.producer.batch.size N (storm: 1, Storm's default); "
                     "* : the best of its batch sizes for that grouping and cost")
    if any(r.get("batch_p50_ms") is not None or r.get("spark_floor_ms") is not None for r in rows):
        lines.append("BATCH / SPARK'S FLOOR: the micro-batch harness's median batch at capacity against the empty "
                     "query's (its spout into Spark's noop sink) at that batch size, on the same topic and session")
    return "\n".join(lines)


def format_capacity_tables(rows: list[dict], bounds_ms: tuple[float, ...]) -> str:
    """One `format_capacity_table` per p99 bound, tightest first, with a line on the CPU column."""
    tables = [format_capacity_table(rows, bound) for bound in sorted(bounds_ms)]
    return "\n\n".join(tables) + ("\nCPU: the Spark JVM's and the harness's Python driver's (less the producer's "
                                  "replay), or the Storm peer JVM's, over the step, per record; MARGINAL + FIXED: "
                                  "the line of the CPU-seconds of the steps that held against their records "
                                  "(the climbing bound's), median over the repetitions" if rows else "")


def fit_cell(row: dict) -> str:
    """`<marginal> + <fixed>` of a capacity row (`cpu_fit`: µs per record, CPU-seconds per step), `-`
    without a fit."""
    marginal, fixed = row.get("marginal_cpu_us_per_record"), row.get("fixed_cpu_s_per_step")
    return "-" if marginal is None else f"{marginal:,.1f} + {fixed:,.1f}"


def floor_cell(row: dict) -> str:
    """`<batch> / <floor>` (ms) of a capacity row, `-` for either figure it lacks (a Storm row: both)."""
    batch, floor = row.get("batch_p50_ms"), row.get("spark_floor_ms")
    if batch is None and floor is None:
        return "-"
    return " / ".join("-" if v is None else f"{v:,.0f}" for v in (batch, floor))


LINE_STYLES = {"microbatch": "-", "realtime": "--"}
"""The figure's line style per harness mode; the Storm peer's lines are dash-dotted."""


def capacity_figure(record: dict):
    """p99 processing latency against input rate, one line per grouping and system (median over the
    repetitions that ran the step; the micro-batch harness solid, the real-time one dashed, the
    Storm peer dash-dotted in its grouping's
    colour), one panel per cost; under a cost, each grouping's hot-worker bound as a dotted
    vertical line of its colour."""
    # deferred: matplotlib takes about a second to import; only the capacity record's figure needs it
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # deferred: after matplotlib.use("Agg")

    costs = sorted({lad["cost_ms"] for lad in record["ladders"]})
    systems = sorted({system_of(lad) for lad in record["ladders"]})
    colours: dict[str, str] = {}
    fig, axes = plt.subplots(1, len(costs), figsize=(6 * len(costs), 4.5), squeeze=False)
    for ax, cost in zip(axes[0], costs):
        for grouping in sorted({lad["grouping"] for lad in record["ladders"]}):
            for system in systems:
                by_rate: dict[float, list[float]] = {}
                mine = [lad for lad in record["ladders"]
                        if (system_of(lad), lad["grouping"], lad["cost_ms"]) == (system, grouping, cost)]
                for s in (s for lad in mine for s in lad["steps"] if s["p99_ms"] is not None):
                    by_rate.setdefault(s["rate"], []).append(s["p99_ms"])
                if not by_rate:
                    continue
                rates = sorted(by_rate)
                line, = ax.plot(rates, [statistics.median(by_rate[r]) for r in rates], marker="o",
                                color=colours.get(grouping), linestyle=LINE_STYLES.get(system, "-."),
                                label=grouping if len(systems) == 1 else f"{grouping} ({system})")
                colours.setdefault(grouping, line.get_color())
            bound = next((row["hot_worker_bound"] for row in record["capacity"]
                          if row["grouping"] == grouping and row["cost_ms"] == cost), None)
            if bound and grouping in colours:
                ax.axvline(bound, color=colours[grouping], linestyle=":", linewidth=1)
        for bound in record["options"].get("bounds_ms") or (record["options"]["thresholds"]["max_p99_ms"],):
            ax.axhline(bound, color="grey", linestyle=":", linewidth=1)
        ax.plot([], [], color="grey", linestyle=":", linewidth=1, label="p99 bounds")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("input rate (records/s)")
        ax.set_ylabel("processing latency p99 (ms)")
        ax.set_title(f"cost {cost:g} ms per tuple" + (" (dotted: hot-worker bound)" if cost > 0 else ""))
        ax.legend()
    fig.tight_layout()
    return fig
