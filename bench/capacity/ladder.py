"""The capacity ladders on the real stack: one paced live run per step (`bench.run`), each step
measured and decided (`decision`), written to InfluxDB (`step_point`), and the whole as a record,
a table and a figure of p99 against rate."""

from __future__ import annotations

import json
import math
import statistics
from dataclasses import asdict, dataclass, field
from pathlib import Path

from bench.capacity.decision import (CAPACITY_STEP, Thresholds, capacity_of, default_rates, hot_worker_bound,
                                     ladder_saturated, lag_series, lag_slope, median_and_spread, step_holds)
from bench.observer.influx import one_line, write_points
from bench.run.lifecycle import run_stream
from bench.run.options import RunOptions
from bench.run.preflight import default_master, prepare
from bench.run.warm_up import warm_up
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

    def rates_for(self, cost_ms: float) -> list[float]:
        return list(self.rates) if self.rates else default_rates(cost_ms, self.workers)


def measure_step(run_dir: Path, rate: float, warmup_s: float, thresholds: Thresholds) -> dict:
    """Read one step's run record (summary.json, run.json, the observer's batch journal) and decide."""
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
    return {"rate": rate, "run_id": run_dir.name, "holds": ok, "why": why, "p99_ms": p99,
            "p50_ms": (summary.get("latency") or {}).get("latency_p50_ms"), "lag_slope": slope,
            "max_lag": float(lag.max()) if len(lag) else None,
            "hottest_share": (max(loads) / sum(loads)) if loads and sum(loads) else None,
            "time_ms": max(ends) if ends else int(1000 * (run_dir / "summary.json").stat().st_mtime)}


def step_point(step: dict, grouping: str, cost_ms: float, rep: int, dataset: str,
               experiment_id: str) -> tuple[str, dict, dict, int]:
    """`(measurement, tags, fields, time_ms)` of one step (a `measure_step` dict) for InfluxDB.

    Tags: run_id (the step's run, whose observer points carry the same tag), grouping, dataset,
    cost_ms, repetition (1-based), experiment_id. Fields, typed the same whatever the values (InfluxDB
    refuses a type change): rate, p50_ms, p99_ms (ms), lag_slope (records/s), lag_growth (lag slope
    over the rate, the figure `max_lag_growth` bounds), max_lag (records), hottest_share (0-1),
    all floats and absent when unknown; held (bool); why (text). Timestamp: the step's last batch.
    """
    def number(value) -> float | None:
        return float(value) if value is not None and math.isfinite(float(value)) else None

    slope, rate = number(step.get("lag_slope")), float(step["rate"])
    fields = {"rate": rate, "p50_ms": number(step.get("p50_ms")), "p99_ms": number(step.get("p99_ms")),
              "lag_slope": slope, "lag_growth": None if slope is None else slope / rate,
              "max_lag": number(step.get("max_lag")), "hottest_share": number(step.get("hottest_share")),
              "held": bool(step["holds"]), "why": str(step["why"])}
    tags = {"run_id": step["run_id"], "grouping": grouping, "dataset": dataset, "cost_ms": f"{cost_ms:g}",
            "repetition": str(rep + 1), "experiment_id": experiment_id}
    return CAPACITY_STEP, tags, {k: v for k, v in fields.items() if v is not None}, int(step["time_ms"])


def run_ladder(options: CapacityOptions, grouping: str, cost_ms: float, rep: int, spark, log=print) -> list[dict]:
    """One repetition of one grouping at one cost: each rate in turn until a step does not hold."""
    steps = []
    for rate in options.rates_for(cost_ms):
        run_id = f"{options.experiment_id}-{grouping.lower()}-c{cost_ms:g}-r{rate:g}-k{rep}".replace(".", "_")
        run_options = RunOptions(
            grouping=grouping, dataset=options.dataset, workers=options.workers, cost_ms=cost_ms, rate=rate,
            limit=max(1, int(rate * options.step_s)), run_id=run_id, own_topic=True,
            experiment_id=options.experiment_id, worker_window_s=5, aggregator_window_s=10, watermark_delay_s=2,
            observer_tick_s=5.0, latency_warmup_s=options.warmup_s, results_dir=options.results_dir,
            progress=False, no_influx=False)
        prepared = prepare(run_options, log=log)
        log(f"capacity: {grouping} cost {cost_ms:g} ms, rate {rate:g} rec/s (repetition {rep + 1}) ...")
        run_stream(prepared, spark=spark, log=lambda *_: None)
        step = measure_step(prepared.config.results_dir, rate, options.warmup_s, options.thresholds)
        p99, slope = step["p99_ms"], step["lag_slope"]
        log(f"  -> {step['why']} (p99 {'-' if p99 is None else f'{p99:,.0f}'} ms, "
            f"lag slope {'-' if slope is None else f'{slope:,.1f}'} rec/s)")
        if prepared.influx_url:
            try:
                write_points(prepared.influx_url, prepared.influx_database,
                             [step_point(step, grouping, cost_ms, rep, options.dataset, options.experiment_id)])
            except Exception as e:  # noqa: BLE001 - the dashboards miss a point; capacity.json has it
                log(f"  warning: capacity step not written to InfluxDB: {one_line(e)}")
        steps.append(step)
        if not step["holds"]:
            break
    return steps


def run_capacity(options: CapacityOptions, log=print) -> dict:
    """Every ladder; returns the capacity record (also written by the CLI)."""
    spark = build_session(default_master(options.workers, 10, 10), 10)
    ladders = []
    try:
        # The first step must not pay the session's start-up (it would fail for that alone).
        warm_up(spark, prepare(RunOptions(grouping=options.groupings[0], dataset=options.dataset,
                                          workers=options.workers, cost_ms=options.costs_ms[0],
                                          run_id=f"{options.experiment_id}-warmup", worker_window_s=5,
                                          aggregator_window_s=10, watermark_delay_s=2), log=log), log=log)
        for cost_ms in options.costs_ms:
            for grouping in options.groupings:
                for rep in range(options.repeat):
                    steps = run_ladder(options, grouping, cost_ms, rep, spark, log)
                    ladders.append({"grouping": grouping, "cost_ms": cost_ms, "rep": rep, "steps": steps,
                                    "capacity": capacity_of(steps), "saturated": ladder_saturated(steps)})
    finally:
        spark.stop()
    return {"options": {**asdict(options), "results_dir": str(options.results_dir)},
            "ladders": ladders, "capacity": summarize(ladders)}


def summarize(ladders: list[dict]) -> list[dict]:
    """One row per (grouping, cost): median capacity over repetitions, spread (`median_and_spread`,
    with the ladders on which every step held marked as lower bounds), and the hot-worker bound."""
    rows = []
    keys = sorted({(lad["grouping"], lad["cost_ms"]) for lad in ladders}, key=lambda k: (k[1], k[0]))
    for grouping, cost in keys:
        mine = [lad for lad in ladders if lad["grouping"] == grouping and lad["cost_ms"] == cost]
        shares = [s["hottest_share"] for lad in mine for s in lad["steps"] if s.get("hottest_share")]
        share = statistics.median(shares) if shares else None
        spread = median_and_spread([lad["capacity"] for lad in mine], [not ladder_saturated(lad["steps"]) for lad in mine])
        rows.append({"grouping": grouping, "cost_ms": cost, **spread,
                     "hottest_share": share, "hot_worker_bound": hot_worker_bound(share or 0.0, cost)})
    return rows


def format_capacity_table(rows: list[dict]) -> str:
    head = ["GROUPING", "COST (ms)", "CAPACITY (rec/s, median)", "SPREAD (min-max)", "PER REPETITION",
            "HOTTEST WORKER", "BOUND 1000/(share*cost)"]

    def at_least(bound: bool) -> str:
        return ">=" if bound else ""

    body = [[r["grouping"], f"{r['cost_ms']:g}",
             "-" if r["median"] is None else f"{at_least(r['at_least'])}{r['median']:g}",
             "-" if r["min"] is None else f"{r['min']:g}-{r['max']:g}",
             ",".join(f"{at_least(b)}{v:g}" for v, b in zip(r["values"], r["lower_bounds"])),
             "-" if r["hottest_share"] is None else f"{100 * r['hottest_share']:.1f} %",
             "-" if r["hot_worker_bound"] is None else f"{r['hot_worker_bound']:.0f}"] for r in rows]
    widths = [max(len(h), *(len(b[i]) for b in body)) if body else len(h) for i, h in enumerate(head)]
    lines = ["  ".join(h.ljust(w) for h, w in zip(head, widths))]
    lines += ["  ".join(c.ljust(w) for c, w in zip(b, widths)) for b in body]
    if any(any(r["lower_bounds"]) for r in rows):
        lines.append(">= : every step of the ladder held, so the capacity is at least its top rate (raise --rates)")
    return "\n".join(lines)


def capacity_figure(record: dict):
    """p99 processing latency against input rate, one line per grouping (median over the
    repetitions that ran the step), one panel per cost; under a cost, each grouping's hot-worker
    bound as a dotted vertical line of its colour."""
    # deferred: matplotlib takes about a second to import; only the capacity record's figure needs it
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # deferred: after matplotlib.use("Agg")

    costs = sorted({lad["cost_ms"] for lad in record["ladders"]})
    fig, axes = plt.subplots(1, len(costs), figsize=(6 * len(costs), 4.5), squeeze=False)
    for ax, cost in zip(axes[0], costs):
        for grouping in sorted({lad["grouping"] for lad in record["ladders"]}):
            by_rate: dict[float, list[float]] = {}
            for lad in record["ladders"]:
                if lad["grouping"] == grouping and lad["cost_ms"] == cost:
                    for s in lad["steps"]:
                        if s["p99_ms"] is not None:
                            by_rate.setdefault(s["rate"], []).append(s["p99_ms"])
            if by_rate:
                rates = sorted(by_rate)
                line, = ax.plot(rates, [statistics.median(by_rate[r]) for r in rates], marker="o", label=grouping)
                bound = next((row["hot_worker_bound"] for row in record["capacity"]
                              if row["grouping"] == grouping and row["cost_ms"] == cost), None)
                if bound:
                    ax.axvline(bound, color=line.get_color(), linestyle=":", linewidth=1)
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
