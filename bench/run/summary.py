"""What a run reports: summary.json's figures and checks (`summarize`), and the result table that
`bench run` / `run-all` print (`format_table`, one row per run: `summary_row`, `COLUMNS`)."""

from __future__ import annotations

import pandas as pd

from bench.observer.observer import exact_worker_figures, hottest_keys, window_latency_figures
from bench.observer.resources import growth
from bench.rescale.journal import Journal
from bench.run.input import describe_input, input_conditions
from bench.run.preflight import Prepared
from bench.topology.checkpoint_log import batch_ids
from bench.topology.config import TopologyConfig
from bench.results.batches import read_batches


def missed_batches(config: TopologyConfig, observer, offline: set[int] = frozenset()) -> list[int]:
    """Batch ids committed in the checkpoint, or (micro-batch mode) whose final totals the sink
    wrote, whose progress the observer never received (`offline`: batches that `repartition` wrote,
    which read no input and send no progress).

    The sink's files count too because the checkpoint keeps only Spark's last 100 commits: a
    STOP_THE_WORLD stop that fell after a batch's commit and before Spark posted its progress lost
    that batch's figures 228 batches before the run's end, and the run reported its two checks that
    sum them as failed instead of not evaluable (make nemesis, 2026-11-29)."""
    ids = set(batch_ids(config.checkpoint_dir / "main" / "commits"))
    if not config.realtime:
        written = config.results_dir / "aggregates"
        ids |= {int(p.stem.removeprefix("batch-")) for p in written.glob("batch-*.parquet")}
    return sorted(ids - set(observer.batches) - set(offline))


def summarize(prepared: Prepared, observer, replay_summary, status, error, influx, distribution, resumed,
              realtime: dict | None = None) -> dict:
    """summary.json: the run's status, input, reference and exact figures, latency, dead letters,
    the checks that the counts agree, and what the outputs did. `realtime`: a real-time run's own
    facts (`bench.run.realtime`), among them its input audit (`bench.topology.audit`), whose
    records, malformed records and weight stand for the splitter's per-batch counts."""
    audit = (realtime or {}).get("audit")
    config = prepared.config
    agg = observer.final_aggregates()
    exact = exact_worker_figures(agg, config.worker_space)
    last = observer.rows[-1] if observer.rows else {}
    dead_letters, by_reason = _dead_letters(config)
    batches = observer.batches.values()
    split_weight = audit["weight"] if audit else sum(b["split_weight"] for b in batches)
    records = audit["records"] if audit else sum(b["records"] for b in batches)
    malformed = audit["malformed"] if audit else sum(b["malformed"] for b in batches)
    expected = _produced_weight(replay_summary)
    # A driver killed after Spark committed a batch and before the observer journalled its progress
    # event: Spark does not run that batch again, so its observed figures (split weight, per-worker
    # loads) are gone. The two checks that sum them cannot be evaluated (None); the exact figures
    # come from the aggregates whatever happened.
    missed = missed_batches(config, observer, Journal(config.results_dir).offline_batches())
    checks = {
        "aggregated_equals_split": None if missed or (config.realtime and not audit) else
        exact["total_count"] == split_weight,
        "aggregated_equals_produced": None if expected is None else exact["total_count"] == expected,
        "observer_equals_aggregated": None if missed else int(sum(observer.loads())) == exact["total_count"],
        "no_rows_dropped_by_watermark": (last.get("dropped_by_watermark") or 0) == 0,
    }
    return {
        "status": status,
        "mode": "stream",
        "execution_mode": config.mode,
        "input": input_conditions(prepared),
        "error": error,
        "resumed": resumed,
        "grouping": config.grouping,
        "data_plane": config.data_plane,
        "dataset": config.dataset,
        "workers": config.workers,
        "splitters": config.splitters,
        "topic": config.topic,
        "reference": {k: last.get(k) for k in ("std_dev", "dist_cost", "throughput_ratio", "total_count", "duration_ms")},
        "exact": exact,
        # Latency only when the run consumed its input while replaying it: on a recorded topic,
        # a time minus the Kafka timestamp is the topic's age. `latency`: processing latency (Kafka
        # timestamp to the worker's processing, HDR histograms); `window_latency`: aggregator output.
        "latency": observer.run_latency(),
        # First to last tuple processed by the workers (their clocks), and each worker's busy span.
        "processing": observer.processing_span(),
        "window_latency": window_latency_figures(agg) if len(agg) and observer.live_input else {},
        "hottest_keys": hottest_keys(agg),
        "records": records,
        "malformed": malformed,
        "dead_letters": dead_letters,
        "dead_letters_by_reason": by_reason,
        "split_weight": split_weight,
        "produced_weight": expected,
        "checks": checks,
        "batches": len(observer.batches),
        "ticks": len(observer.rows),
        # A soak's question: did memory, the checkpoint, the state and the batch time stay flat after
        # the warm-up (first quarter of the ticks against the last; bench.observer.resources)?
        "resources": growth(pd.DataFrame(observer.rows), prepared.options.latency_warmup_s),
        "influx": influx.status() if influx is not None else None,
        "distribution_topic": distribution.status(),
        "output_errors": observer.output_errors[:5],
        "observer_missed_batches": missed,
        "results": str(config.results_dir),
        **({"realtime": realtime} if realtime is not None else {}),
    }


def _dead_letters(config: TopologyConfig) -> tuple[int, dict[str, int]]:
    """(dead letters written, their count by reason), each input record counted once."""
    dlq = read_batches(config.results_dir / "dlq")
    dlq = dlq.drop_duplicates(["partition", "offset"]) if len(dlq) else dlq
    by_reason = ({str(k): int(v) for k, v in dlq["reason"].value_counts().sort_index().items()}
                 if len(dlq) else {})
    return int(len(dlq)), by_reason


def _produced_weight(replay_summary) -> int | None:
    """The weight the replay put in the topic (None: not known, e.g. --no-replay)."""
    if replay_summary is None or not replay_summary.key_distribution:
        return None
    kd = replay_summary.key_distribution
    return (kd.get("weighted") or {}).get("total", kd.get("tuples"))


# -- printing -------------------------------------------------------------------------------------

COLUMNS = [("grouping", "GROUPING"), ("execution_mode", "MODE"), ("data_plane", "ROUTED IN"), ("total", "TOTAL COUNT"),
           ("duration", "DURATION (ms)"), ("std_dev", "STD DEV"), ("dist_cost", "DIST COST"),
           ("throughput", "THROUGHPUT (rec/sec)"), ("imbalance", "MAX/MEAN"), ("proc", "PROC TIME (ms)"),
           ("proc_rate", "PROC RATE (rec/sec)"), ("p99", "LAT p99 (ms)"), ("p999", "LAT p99.9 (ms)"),
           ("window_p99", "WINDOW LAT p99 (ms)"), ("status", "STATUS")]
"""MODE: the execution mode, `microbatch` (the whole topology in one micro-batch query) or `realtime`
(the tuple's path in Spark's Real-Time Mode, `bench.topology.realtime`). ROUTED IN: where the grouping stage ran, `jvm` (the Java groupings, `bench.topology.jvm_stage`) or
`python` (a grouping with no Java implementation or with a parameter the Java port does not take, or a
rescale run). PROC TIME: first to last tuple processed by the workers; PROC RATE: tuples / PROC TIME (the worker stage's own
rate, without the micro-batch's other stages and the first batch's start-up). LAT: processing
latency (Kafka timestamp to the worker's processing of the tuple); WINDOW LAT: aggregator output
time minus Kafka timestamp (mostly the aggregation window)."""


def summary_row(s: dict) -> dict:
    """One row of the result table: `COLUMNS`' keys -> text ("-" where a figure is missing)."""
    ref, ex, lat, wlat = s["reference"], s["exact"], s.get("latency") or {}, s.get("window_latency") or {}
    proc = (s.get("processing") or {}).get("duration_ms")
    proc_rate = ex["total_count"] * 1000.0 / proc if proc and ex.get("total_count") else None

    def f(v, fmt):
        return "-" if v is None else (fmt % v if isinstance(v, int | float) else str(v))
    ok = s["status"] == "completed" and all(v is not False for v in s["checks"].values())
    return {
        # a run recorded before the JVM stage existed routed in Python
        "grouping": s["grouping"], "data_plane": s.get("data_plane", "python"),
        "execution_mode": s.get("execution_mode", "microbatch"),  # a run recorded before the real-time mode
        "total": f(ex["total_count"], "%d"), "duration": f(ref.get("duration_ms"), "%d"),
        "std_dev": f(ex["std_dev"], "%.4f"), "dist_cost": f(ex["dist_cost"], "%.4f"),
        "throughput": f(ref.get("throughput_ratio"), "%.0f"), "imbalance": f(ex["max_mean_imbalance"], "%.3f"),
        "proc": f(proc, "%d"), "proc_rate": f(proc_rate, "%.0f"),
        "p99": f(lat.get("latency_p99_ms"), "%.1f"), "p999": f(lat.get("latency_p999_ms"), "%.1f"),
        "window_p99": f(wlat.get("window_latency_p99_ms"), "%.0f"),
        "status": s["status"] if ok else f"{s['status']} (checks failed)" if s["status"] == "completed" else s["status"],
    }


def input_header(summaries: list[dict]) -> tuple[str, bool]:
    """The table's first line, stating the runs' input conditions, and whether they differ."""
    conditions = sorted({describe_input(s.get("input")) for s in summaries})
    if len(conditions) > 1:
        return (f"input: MIXED ({', '.join(conditions)}): these rows ran under different input conditions and "
                "are not comparable (see the INPUT column)", True)
    what = conditions[0]
    if what.startswith("live ") and what != "live unpaced":
        return (f"input: {what}, every run replays the same records while it consumes them (paced, open loop; "
                "LAT = processing latency from the intended send time)", False)
    if what == "recorded":
        return ("input: recorded topic, every run reads the same records as fast as it can (THROUGHPUT is its "
                "capacity; no latency: a record's age is not a latency)", False)
    return f"input: {what}", False


def format_table(summaries: list[dict]) -> str:
    """The result table of `bench run` / `run-all`: the input header, one row per summary (an INPUT
    column when the runs' input conditions differ), and a note under it for a run that had fewer
    task slots than workers."""
    header, mixed = input_header(summaries)
    columns = COLUMNS[:-1] + [("input", "INPUT"), COLUMNS[-1]] if mixed else COLUMNS
    rows = [{**summary_row(s), "input": describe_input(s.get("input"))} for s in summaries]
    widths = {k: max(len(h), *(len(r[k]) for r in rows)) for k, h in columns}
    lines = [header, "  ".join(h.ljust(widths[k]) for k, h in columns)]
    lines += ["  ".join(r[k].ljust(widths[k]) for k, _ in columns) for r in rows]
    for s in summaries:
        if s.get("task_slots") is not None and s["task_slots"] < s["workers"]:
            lines.append(f"note: {s['grouping']} ran {s['workers']} workers on {s['task_slots']} task slots: workers "
                         "waited for a slot (its figures measure the slots, not the grouping)")
    return "\n".join(lines)
