"""The capacity ladders on the real stack: one paced live run per step (`bench.run`), each step
measured and decided (`decision`), written to InfluxDB (`step_point`), and the whole as a record,
a table and a figure of p99 against rate. With `peers=("storm",)` each harness ladder is followed by
the Storm peer's on the same rates (`bench.capacity.storm`), repetition by repetition. Beside each
harness step, Spark's floor: the empty query's batch cycle on the step's topic at the step's batch
size (`bench.run.floor`), so that the harness's batches can be read against what Spark allows."""

from __future__ import annotations

import json
import math
import os
import statistics
from dataclasses import asdict, dataclass, field
from pathlib import Path

from bench.capacity.decision import (CAPACITY_STEP, Thresholds, capacity_of, default_rates, hot_worker_bound,
                                     ladder_saturated, lag_series, lag_slope, median_and_spread, step_holds)
from bench.capacity.storm import run_storm_step, storm_system
from bench.observer.influx import one_line, write_points
from bench.run.floor import measure_floor
from bench.run.stream import run_stream
from bench.run.options import RunOptions
from bench.run.preflight import Prepared, default_master, prepare
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

    def rates_for(self, cost_ms: float) -> list[float]:
        return list(self.rates) if self.rates else default_rates(cost_ms, self.workers)

    def harness_setting(self) -> str:
        """The harness's settings a capacity depends on, for the output: trigger and A."""
        trigger = "back to back" if self.trigger_s == 0 else f"every {self.trigger_s:g} s"
        return f"micro-batches {trigger}, A = {self.aggregators} aggregator (state) partitions"


def measure_step(run_dir: Path, rate: float, warmup_s: float, thresholds: Thresholds) -> dict:
    """Read one step's run record (summary.json, run.json, the observer's batch journal) and decide.
    `batch_p50_ms`: the median duration of its batches that read records (Spark's
    `triggerExecution`, ms), None without one."""
    summary = json.loads((run_dir / "summary.json").read_text())
    run = json.loads((run_dir / "run.json").read_text())
    replay = (run.get("dataset") or {}).get("replay") or {}
    batches = [json.loads(line) for line in (run_dir / "observer" / "progress.jsonl").read_text().splitlines()
               if line.strip()]
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
    durations = [b["duration_ms"] for b in batches if b.get("records") and b.get("duration_ms") is not None]
    return {"rate": rate, "run_id": run_dir.name, "holds": ok, "why": why, "p99_ms": p99,
            "batch_p50_ms": statistics.median(durations) if durations else None,
            "p50_ms": (summary.get("latency") or {}).get("latency_p50_ms"), "lag_slope": slope,
            "max_lag": float(lag.max()) if len(lag) else None,
            "hottest_share": (max(loads) / sum(loads)) if loads and sum(loads) else None,
            "time_ms": max(ends) if ends else int(1000 * (run_dir / "summary.json").stat().st_mtime)}


def step_point(step: dict, grouping: str, cost_ms: float, rep: int, dataset: str,
               experiment_id: str, system: str = "harness") -> tuple[str, dict, dict, int]:
    """`(measurement, tags, fields, time_ms)` of one step (a `measure_step` dict) for InfluxDB.

    Tags: run_id (the step's run, whose observer points carry the same tag; a Storm step's topic),
    grouping, dataset, cost_ms, repetition (1-based), experiment_id, system (harness or storm).
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


def step_options(options: CapacityOptions, grouping: str, cost_ms: float, rate: float, tag: str) -> RunOptions:
    """The run of one harness step: `options.step_s` seconds of input at `rate` into a topic of its
    own, run id `<experiment>-<grouping>-c<cost>-r<rate>-<tag>`, short windows (5 s worker, 10 s
    aggregator, 2 s watermark delay) so that a 20 s step closes them, and the harness's trigger
    and aggregator partitions of `options`."""
    run_id = f"{options.experiment_id}-{grouping.lower()}-c{cost_ms:g}-r{rate:g}-{tag}".replace(".", "_")
    return RunOptions(
        grouping=grouping, dataset=options.dataset, workers=options.workers, cost_ms=cost_ms, rate=rate,
        limit=max(1, int(rate * options.step_s)), run_id=run_id, own_topic=True,
        experiment_id=options.experiment_id, worker_window_s=5, aggregator_window_s=10, watermark_delay_s=2,
        trigger_s=options.trigger_s, aggregators=options.aggregators,
        observer_tick_s=5.0, latency_warmup_s=options.warmup_s, results_dir=options.results_dir,
        progress=False, no_influx=False)


def run_step(options: CapacityOptions, grouping: str, cost_ms: float, rate: float, tag: str, spark,
             log=print) -> tuple[dict, Prepared]:
    """One paced live run of `grouping` at `rate` (`options.step_s` seconds of input, its own topic,
    run id `<experiment>-<grouping>-c<cost>-r<rate>-<tag>`), measured and decided (`measure_step`),
    with the Spark JVM's CPU per record and Spark's floor (`spark_floor_ms`: the empty query's median
    batch cycle at the step's median batch size, `bench.run.floor`, measured after the run, so
    neither its CPU nor its figures include it; None, with a warning, when it could not be
    measured); and the prepared run (its stack). Recorded nowhere but in the run's own folder
    (summary.json's `spark_floor`)."""
    run_options = step_options(options, grouping, cost_ms, rate, tag)
    prepared = prepare(run_options, log=log)
    cpu_s = jvm_cpu_seconds(spark)
    run_stream(prepared, spark=spark, log=lambda *_: None)
    step = measure_step(prepared.config.results_dir, rate, options.warmup_s, options.thresholds)
    after = jvm_cpu_seconds(spark)
    step["cpu_us_per_record"] = None if None in (cpu_s, after) else 1e6 * (after - cpu_s) / run_options.limit
    step["spark_floor_ms"] = step_floor(spark, prepared, log)
    step["system"] = "harness"
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


def run_ladder(options: CapacityOptions, grouping: str, cost_ms: float, rep: int, spark, log=print) -> list[dict]:
    """One repetition of one grouping at one cost: each rate in turn until a step does not hold."""
    def step_at(rate: float) -> dict:
        log(f"capacity: {grouping} cost {cost_ms:g} ms, rate {rate:g} rec/s (repetition {rep + 1}) ...")
        step, prepared = run_step(options, grouping, cost_ms, rate, f"k{rep}", spark, log)
        _record_step(step, prepared, grouping, cost_ms, rep, options, log)
        return step

    return climb(options.rates_for(cost_ms), step_at)


def warm_up_step(options: CapacityOptions, grouping: str, cost_ms: float, spark, log=print) -> dict:
    """The ladder's first step run once before the grouping's first repetition at this cost, and not
    counted: the session's JIT warms up on the very query, rates and cost the ladder runs.

    Why: with the session warmed up only by an unpaced run of 50,000 records, the first measured
    step of a ladder was its slowest: 5.8 s for its first batch with data and 2.8-3.5 s for the
    others at 8,000 rec/s, where the same step of a later repetition ran 1-2 s batches; SHUFFLE's
    and PARTIAL_KEY's first repetitions failed 8,000 rec/s on p99 (8,733 and 5,349 ms against a
    5 s bound) in ladders whose other repetitions held 64,000 and 128,000 (2026-11-28). A Storm
    step starts a fresh JVM every time and leaves out its first `warmup_s` of tuples, so it gets
    no such step."""
    rate = options.rates_for(cost_ms)[0]
    log(f"capacity: {grouping} cost {cost_ms:g} ms, rate {rate:g} rec/s (warm-up step, not counted) ...")
    step, _ = run_step(options, grouping, cost_ms, rate, "warmup", spark, log)
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
                              options.step_s, options.warmup_s, options.thresholds, topic, producer_batch)
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
    """Every ladder; returns the capacity record (also written by the CLI)."""
    spark = build_session(default_master(options.workers, 10, 10), 10)
    ladders, warm_ups = [], []
    try:
        services = None  # the broker and InfluxDB of the Storm peer's steps (a harness step prepares its own)
        if "storm" in options.peers:
            services = prepare(RunOptions(grouping=options.groupings[0], dataset=options.dataset,
                                          workers=options.workers, cost_ms=options.costs_ms[0],
                                          run_id=f"{options.experiment_id}-services"), log=log)
        for cost_ms in options.costs_ms:
            for grouping in options.groupings:
                warm_ups.append(warm_up_step(options, grouping, cost_ms, spark, log))
                for rep in range(options.repeat):
                    steps = run_ladder(options, grouping, cost_ms, rep, spark, log)
                    ladders.append(ladder_record("harness", grouping, cost_ms, rep, steps))
                    for batch in options.storm_batches if "storm" in options.peers else ():
                        steps = run_storm_ladder(options, grouping, cost_ms, rep, services, log, batch)
                        ladders.append(ladder_record(storm_system(batch), grouping, cost_ms, rep, steps))
    finally:
        spark.stop()
    return {"options": {**asdict(options), "results_dir": str(options.results_dir)},
            "warm_up_steps": warm_ups, "ladders": ladders, "capacity": summarize(ladders)}


def ladder_record(system: str, grouping: str, cost_ms: float, rep: int, steps: list[dict]) -> dict:
    """One ladder of capacity.json: the system that ran it (harness or storm), its steps and capacity."""
    return {"system": system, "grouping": grouping, "cost_ms": cost_ms, "rep": rep, "steps": steps,
            "capacity": capacity_of(steps), "saturated": ladder_saturated(steps)}


def _at_capacity(ladders: list[dict], figure: str) -> float | None:
    """Median over the ladders of `figure` (a step's key, e.g. `cpu_us_per_record`) at each one's
    last step that held; None when no such step has it."""
    values = []
    for lad in ladders:
        held = [s for s in lad["steps"] if s["holds"]]
        if held and held[-1].get(figure) is not None:
            values.append(held[-1][figure])
    return statistics.median(values) if values else None


def summarize(ladders: list[dict]) -> list[dict]:
    """One row per (system, grouping, cost): median capacity over repetitions, spread
    (`median_and_spread`, with the ladders on which every step held marked as lower bounds), the
    hot-worker bound, and the engine's CPU per record at capacity (`cpu_us_per_record`: the Spark
    JVM's or the Storm peer JVM's CPU over the step, µs per record; the producer and the harness's
    Python driver not counted); for the harness, its median batch and Spark's floor at capacity
    (`batch_p50_ms`, `spark_floor_ms`, ms; None for Storm and for records from before them). A
    ladder without a system (a record from before the Storm peer) is the harness's. Where the Storm
    peer laddered more than one producer batch size for a grouping and cost, the row with the
    highest median capacity (a lower bound over an exact value at the same rate; on a tie, the
    first in the table's order) has `best_storm` True: the one a comparison keeps."""
    rows = []
    keys = sorted({(lad.get("system", "harness"), lad["grouping"], lad["cost_ms"]) for lad in ladders},
                  key=lambda k: (k[2], k[1], k[0]))
    for system, grouping, cost in keys:
        mine = [lad for lad in ladders
                if lad.get("system", "harness") == system and lad["grouping"] == grouping and lad["cost_ms"] == cost]
        shares = [s["hottest_share"] for lad in mine for s in lad["steps"] if s.get("hottest_share")]
        share = statistics.median(shares) if shares else None
        spread = median_and_spread([lad["capacity"] for lad in mine], [not ladder_saturated(lad["steps"]) for lad in mine])
        firsts = [lad["steps"][0]["rate"] for lad in mine if lad["steps"]]
        rows.append({"system": system, "grouping": grouping, "cost_ms": cost, **spread,
                     "first_rate": min(firsts) if firsts else None,
                     "hottest_share": share, "hot_worker_bound": hot_worker_bound(share or 0.0, cost),
                     "cpu_us_per_record": _at_capacity(mine, "cpu_us_per_record"),
                     "batch_p50_ms": _at_capacity(mine, "batch_p50_ms"),
                     "spark_floor_ms": _at_capacity(mine, "spark_floor_ms")})
    for grouping, cost in {(r["grouping"], r["cost_ms"]) for r in rows}:
        storms = [r for r in rows if r["system"].startswith("storm") and (r["grouping"], r["cost_ms"]) == (grouping, cost)]
        if len(storms) > 1:
            max(storms, key=lambda r: (r["median"] or 0, r["at_least"]))["best_storm"] = True
    return rows


def format_capacity_table(rows: list[dict]) -> str:
    """The capacity rows (`summarize`) as a text table. A capacity is shown `>=R` when it is only a
    lower bound (every step held) and `<R` when the ladder's first step, at R rec/s, did not hold
    (a capacity of 0 in the record: below the ladder, not none)."""
    head = ["SYSTEM", "GROUPING", "COST (ms)", "CAPACITY (rec/s, median)", "SPREAD (min-max)", "PER REPETITION",
            "HOTTEST WORKER", "BOUND 1000/(share*cost)", "CPU AT CAPACITY (us/record)",
            "BATCH / SPARK'S FLOOR AT CAPACITY (ms)"]

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
             floor_cell(r)] for r in rows]
    widths = [max(len(h), *(len(b[i]) for b in body)) if body else len(h) for i, h in enumerate(head)]
    lines = ["  ".join(h.ljust(w) for h, w in zip(head, widths))]
    lines += ["  ".join(c.ljust(w) for c, w in zip(b, widths)) for b in body]
    if any(any(r["lower_bounds"]) for r in rows):
        lines.append(">= : every step of the ladder held, so the capacity is at least its top rate (raise --rates)")
    if any(0 in r["values"] and r.get("first_rate") for r in rows):
        lines.append("<R : the ladder's first step, R rec/s, did not hold, so the capacity is below it (lower --rates)")
    if any(r.get("best_storm") for r in rows):
        lines.append("storm-bN : the Storm peer with topology.producer.batch.size N (storm: 1, Storm's default); "
                     "* : the best of its batch sizes for that grouping and cost")
    if any(r.get("batch_p50_ms") is not None or r.get("spark_floor_ms") is not None for r in rows):
        lines.append("BATCH / SPARK'S FLOOR: the harness's median batch at capacity against the empty query's (its spout "
                     "into Spark's noop sink) at that batch size, on the same topic and session")
    return "\n".join(lines)


def floor_cell(row: dict) -> str:
    """`<batch> / <floor>` (ms) of a capacity row, `-` for either figure it lacks (a Storm row: both)."""
    batch, floor = row.get("batch_p50_ms"), row.get("spark_floor_ms")
    if batch is None and floor is None:
        return "-"
    return " / ".join("-" if v is None else f"{v:,.0f}" for v in (batch, floor))


def capacity_figure(record: dict):
    """p99 processing latency against input rate, one line per grouping and system (median over the
    repetitions that ran the step; the harness solid, the Storm peer dash-dotted in its grouping's
    colour), one panel per cost; under a cost, each grouping's hot-worker bound as a dotted
    vertical line of its colour."""
    # deferred: matplotlib takes about a second to import; only the capacity record's figure needs it
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # deferred: after matplotlib.use("Agg")

    costs = sorted({lad["cost_ms"] for lad in record["ladders"]})
    systems = sorted({lad.get("system", "harness") for lad in record["ladders"]})
    colours: dict[str, str] = {}
    fig, axes = plt.subplots(1, len(costs), figsize=(6 * len(costs), 4.5), squeeze=False)
    for ax, cost in zip(axes[0], costs):
        for grouping in sorted({lad["grouping"] for lad in record["ladders"]}):
            for system in systems:
                by_rate: dict[float, list[float]] = {}
                mine = [lad for lad in record["ladders"] if (lad.get("system", "harness"), lad["grouping"],
                                                               lad["cost_ms"]) == (system, grouping, cost)]
                for s in (s for lad in mine for s in lad["steps"] if s["p99_ms"] is not None):
                    by_rate.setdefault(s["rate"], []).append(s["p99_ms"])
                if not by_rate:
                    continue
                rates = sorted(by_rate)
                line, = ax.plot(rates, [statistics.median(by_rate[r]) for r in rates], marker="o",
                                color=colours.get(grouping), linestyle="-" if system == "harness" else "-.",
                                label=grouping if len(systems) == 1 else f"{grouping} ({system})")
                colours.setdefault(grouping, line.get_color())
            bound = next((row["hot_worker_bound"] for row in record["capacity"]
                          if row["grouping"] == grouping and row["cost_ms"] == cost), None)
            if bound and grouping in colours:
                ax.axvline(bound, color=colours[grouping], linestyle=":", linewidth=1)
        ax.axhline(record["options"]["thresholds"]["max_p99_ms"], color="grey", linestyle="--", linewidth=1,
                   label="p99 threshold")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("input rate (records/s)")
        ax.set_ylabel("processing latency p99 (ms)")
        ax.set_title(f"cost {cost:g} ms per tuple" + (" (dotted: hot-worker bound)" if cost > 0 else ""))
        ax.legend()
    fig.tight_layout()
    return fig
