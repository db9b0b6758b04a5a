"""Perf section "pipeline": the Spark topology's throughput, against what this machine allows.

Needs the local stack (`make perf` starts it). Two measurements, each in steady state: the rate is
the input-topic records of every micro-batch after the first (which pays JVM and Python worker
warm-up) over the time from the end of the first batch to the end of the last one with input
records, read from Spark's progress (the batches that only close the last windows are left out).

1. End to end: `bench run` with KEY, cost 0, W = S = P = 10 and A = 1 (below), over a
   2,000,000-record COUNTRY_SKEW_R80 topic, beside a Spark query that only counts the same topic
   (same batch size, same measurement) in the same run: the pipeline's ceiling on this machine.
   Target ratio >= 0.3.
2. Harness efficiency under cost: `bench run --cost-ms 1`, W = 10, on COUNTRY_SKEW_R80, for each
   grouping. The slowest worker bounds the throughput at 1 / (largest worker share x cost); the
   ratio is the measured rate over that bound. Target >= 0.8. The run uses `local[12]` so that all
   ten worker tasks can sleep at once on two cores (sleeping takes no CPU). Each batch holds
   COST_BATCH_S of work at the bound, and each run is COST_BATCHES full batches. In a micro-batch
   the workers wait while the same batch's splitter, grouping and window stages run, and that time
   grows with the batch: SHUFFLE's batches took 5-7 s more than their 20 s of work at 200,000
   records, and 10 s more than 40 s at 400,000 (2026-11-22). So the efficiency is about
   1 / (1 + bound x pipeline time per record), whatever the batch size.

A (aggregator partitions) is also the partition count of every stateful stage, and each stateful
partition pays a fixed cost per batch (state store load and commit, a Python worker round trip for
the grouping stage). On two cores, ten of them cost about 1.5 s per batch more than two (measured
with Spark's event log: a no-data batch took 3.0 s with A = 10 and 1.3 s with A = 2), and one is
faster still: interleaved cost-0 runs gave 45,200 and 50,700 records/s with A = 1 against 42,200
and 44,100 with A = 2 (2026-11-22), and again 109,200 and 120,200 against 94,900 and 112,200
(2026-11-24, after the splitter stage's coalesce). So the harness runs with A = 1; the aggregates
are the same for any A. With A = 1 the grouping stage is one task, which routes the ten splitter
instances in turn; on a machine with more cores than this one's two, that choice is not measured.

The cost-0 figures are medians over runs in fresh processes, made in the order RUN_ORDER: three
count-only runs and two topology runs, alternating. Single count-only runs ranged from 150,000 to
250,000 records/s on 2026-11-22 and from 290,000 to 430,000 on 2026-11-24 on this shared machine,
single topology runs from 93,000 to 144,000 on 2026-11-24. Each cost case is one run (about 1.5
minutes): its figure is the rate over all its steady batches, and the note gives the batch count.
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path

from confluent_kafka import Consumer, TopicPartition

from bench.perf._harness import Row
from bench.simulate.engine import figures, route_table
from bench.simulate.sources import VirtualClock, from_dataset
from bench.stack import StackConfig
from bench.topology.session import build_session
from bench.topology.spout import CONSUMER_OPTIONS
from datasets import get_dataset
from groupings import GROUPINGS
from producers import replay

SECTION = "pipeline"
TOPIC_RECORDS = 2_000_000
PARTITIONS = 10
BATCH = 200_000
COST_WORKERS = 10
COST_BATCH_S = 20.0  # work per micro-batch under cost, at the bound
COST_BATCHES = 3  # micro-batches per grouping under cost: the first pays start-up, 2 are measured
AGGREGATORS = 1  # see the module docstring
RUN_ORDER = "CTCTC"
"""The cost-0 measurement's runs in the order they are made: C a count-only run (about 5 s of
batches, the most variable), T a topology run. Alternating them, a machine that speeds up or slows
down during the section weighs on the ceiling and the topology alike."""
DATASET = "COUNTRY_SKEW_R80"


def steady_rate(batches: list[dict]) -> tuple[float, int]:
    """Input records/s over the batches after the first one with input records.

    Args: batches: dicts with `batch_id`, `records` (input-topic records of the batch: for a
        topology run the observer's splitter count, which leaves out the end-of-input control
        record, so the batches that only close the last windows are not counted), `end_ms`; any order.
    Returns: (records/s, batches counted). Raises: ValueError with fewer than 2 batches with records.
    """
    data = sorted((b for b in batches if b["records"] > 0), key=lambda b: b["batch_id"])
    if len(data) < 2:
        raise ValueError("steady state needs at least two micro-batches with data")
    rows = sum(b["records"] for b in data[1:])
    span_ms = data[-1]["end_ms"] - data[0]["end_ms"]
    return rows / (span_ms / 1000.0), len(data) - 1


def _ensure_topic(bootstrap: str, topic: str, records: int, length: int) -> None:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "perf-probe"})
    try:
        meta = consumer.list_topics(topic, timeout=30).topics.get(topic)
        if meta is not None and meta.error is None and meta.partitions:
            held = sum(consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=30)[1]
                       for p in meta.partitions)
            if held == records:
                return
            raise RuntimeError(f"topic {topic} holds {held} records, expected {records}: delete it and rerun")
    finally:
        consumer.close()
    summary = replay(get_dataset(DATASET, length=length), topic, bootstrap, partitions=PARTITIONS,
                     limit=records, progress=False)
    if not summary.ok:
        raise RuntimeError(f"replay into {topic} failed: {summary.errors[:3]}")


def _bench_run(topic: str, bootstrap: str, results: Path, run_id: str, grouping: str, *, master: str,
               cost_ms: float, max_offsets: int) -> tuple[dict, list[dict]]:
    """`python -m bench run` on an existing topic; returns (summary, per-batch progress)."""
    cmd = [sys.executable, "-m", "bench", "run", "--grouping", grouping, "--dataset", DATASET,
           "--topic", topic, "--no-replay", "--run-id", run_id, "--master", master,
           "--bootstrap-servers", bootstrap, "--no-influx", "--results-dir", str(results), "--no-progress",
           "--workers", str(COST_WORKERS), "--splitters", str(PARTITIONS), "--aggregators", str(AGGREGATORS),
           "--cost-ms", str(cost_ms),
           "--max-offsets-per-trigger", str(max_offsets), "--timeout-s", "1200"]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=1500)
    if proc.returncode != 0:
        raise RuntimeError(f"bench run {grouping} failed:\n{proc.stdout[-1500:]}\n{proc.stderr[-1500:]}")
    summary = json.loads((results / run_id / "summary.json").read_text())
    journal = results / run_id / "observer" / "progress.jsonl"
    batches = [json.loads(line) for line in journal.read_text().splitlines() if line.strip()]
    return summary, batches


def _count_only_in_fresh_process(topic: str, bootstrap: str, max_offsets: int) -> tuple[float, int]:
    """One count-only run in a fresh Python process and JVM, like the topology's `bench run` (a JVM
    that ran the query before is warmer): (records/s, steady batches)."""
    return rate_in_fresh_process(__name__, "_count_only_rate", topic, bootstrap, max_offsets, timeout_s=600)


def rate_in_fresh_process(module: str, function: str, *args, timeout_s: float = 900) -> tuple[float, int]:
    """`module.function(*args)`, a query's `(records/s, steady batches)`, called in a fresh Python
    process (and so a fresh JVM); `args` travel as JSON. Raises: RuntimeError with the process's
    last output if it fails."""
    code = (f"import json, sys; from {module} import {function}; "
            f"print(json.dumps({function}(*json.loads(sys.argv[1]))))")
    proc = subprocess.run([sys.executable, "-c", code, json.dumps(args)], capture_output=True, text=True,
                          timeout=timeout_s)
    if proc.returncode != 0:
        raise RuntimeError(f"{function}{args} failed:\n{proc.stdout[-1500:]}\n{proc.stderr[-1500:]}")
    rate, batches = json.loads(proc.stdout.strip().splitlines()[-1])
    return float(rate), int(batches)


def _count_only_rate(topic: str, bootstrap: str, max_offsets: int) -> tuple[float, int]:
    """A Spark query that only counts the topic: the pipeline's ceiling, measured the same way."""
    spark = build_session("local[*]", shuffle_partitions=AGGREGATORS)
    stream = (spark.readStream.format("kafka").option("kafka.bootstrap.servers", bootstrap)
              .option("subscribe", topic).option("startingOffsets", "earliest")
              .option("maxOffsetsPerTrigger", max_offsets).options(**CONSUMER_OPTIONS).load())
    rate = counting_rate(stream)
    spark.stop()
    return rate


def counting_rate(stream) -> tuple[float, int]:
    """Run `stream` (a streaming DataFrame) to the end of its input (`availableNow`), counting each
    batch's rows in `foreachBatch`: (records/s, steady batches) by `steady_rate`."""
    return writer_rate(stream.writeStream.foreachBatch(lambda df, _id: df.count()))


def writer_rate(writer) -> tuple[float, int]:
    """Run a streaming query (`writer`, a DataStreamWriter with its sink) to the end of its input
    (`availableNow`): (records/s, steady batches) by `steady_rate`."""
    with tempfile.TemporaryDirectory() as checkpoint:
        query = writer.option("checkpointLocation", checkpoint).trigger(availableNow=True).start()
        query.awaitTermination()
        progress = query.recentProgress
    batches = [{"batch_id": p["batchId"], "records": p["numInputRows"],
                "end_ms": _iso_ms(p["timestamp"]) + p["durationMs"]["triggerExecution"]} for p in progress]
    return steady_rate(batches)


def _iso_ms(text: str) -> int:
    return int(datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp() * 1000)


def run() -> list[Row]:
    """Measure the end-to-end pipeline against a count-only query, then each grouping under cost."""
    bootstrap = StackConfig.from_env().bootstrap_servers
    topic = f"perf.{DATASET.lower()}.n{TOPIC_RECORDS}.p{PARTITIONS}"
    _ensure_topic(bootstrap, topic, TOPIC_RECORDS, TOPIC_RECORDS)
    stamp = time.strftime("%Y%m%dT%H%M%S")
    with tempfile.TemporaryDirectory() as tmp:
        results = Path(tmp)
        baselines, topology = [], []
        for k, kind in enumerate(RUN_ORDER):
            if kind == "C":
                baselines.append(_count_only_in_fresh_process(topic, bootstrap, BATCH))
            else:
                summary, batches = _bench_run(topic, bootstrap, results, f"perf-pipeline-{stamp}-{k}", "KEY",
                                              master="local[*]", cost_ms=0.0, max_offsets=BATCH)
                topology.append((*steady_rate(batches), summary["status"]))
        ceiling = statistics.median(rate for rate, _ in baselines)
        rows = [Row.measured(SECTION, "baseline: Spark count-only query", ceiling, "records/s", ceiling,
                             note=f"median of {len(baselines)} runs in fresh JVMs, alternating with the "
                                  f"topology's ({', '.join(f'{rate / 1000:.1f}k' for rate, _ in baselines)}), "
                                  f"{baselines[0][1]} steady batches of {BATCH:,} each")]
        rate = statistics.median(rate for rate, _, _ in topology)
        rows.append(Row.measured(SECTION, "topology KEY, cost 0, 2M records", rate, "records/s", ceiling,
                                 note=f"median of {len(topology)} runs "
                                      f"({', '.join(f'{r / 1000:.1f}k' for r, _, _ in topology)}), "
                                      f"{topology[0][1]} steady batches each, A = {AGGREGATORS}; status "
                                      f"{', '.join(sorted({st for _, _, st in topology}))}; target is ratio >= 0.3"))
        rows[-1].target, rows[-1].meets_target = None, (rows[-1].ratio or 0) >= 0.3

        for grouping in GROUPINGS:
            # Size the run to COST_BATCHES batches of COST_BATCH_S of work at the bound the skew allows,
            # known from the simulator's exact loads for these records (same code, same order).
            share = _largest_share(grouping, topic, bootstrap)
            bound = 1000.0 / share  # records/s with 1 ms per tuple
            # A multiple of P: every partition gives the same share to every batch, and the run is
            # COST_BATCHES full batches (no short last batch to drag the rate down).
            max_offsets = max(2_000, int(bound * COST_BATCH_S) // PARTITIONS * PARTITIONS)
            records = min(TOPIC_RECORDS, max_offsets * COST_BATCHES)
            sub_topic = f"perf.{DATASET.lower()}.cost.n{records}.p{PARTITIONS}"
            _ensure_topic(bootstrap, sub_topic, records, records)
            summary, batches = _bench_run(sub_topic, bootstrap, results, f"perf-cost-{grouping.lower()}-{stamp}",
                                          grouping, master="local[12]", cost_ms=1.0, max_offsets=max_offsets)
            loads = summary["exact"]["worker_loads"]
            real_share = max(loads) / sum(loads)
            bound = 1000.0 / real_share
            rate, n = steady_rate(batches)
            row = Row.measured(SECTION, f"{grouping}, cost 1 ms, W=10", rate, "records/s", bound,
                               note=f"bound 1/(max share {real_share:.3f} x 1 ms); {records:,} records, "
                                    f"{n} steady batches; target is ratio >= 0.8")
            row.meets_target = (row.ratio or 0) >= 0.8
            rows.append(row)
    return rows


def _largest_share(grouping: str, topic: str, bootstrap: str) -> float:
    """Largest worker share of `grouping` on the first records of the 2M topic, from the simulator."""
    table, _, _ = from_dataset(get_dataset(DATASET, length=200_000), PARTITIONS, VirtualClock(rate=1000.0))
    workers, _ = route_table(table, grouping, COST_WORKERS, PARTITIONS)
    loads = figures(table, workers, COST_WORKERS).worker_loads
    return max(loads) / sum(loads)
