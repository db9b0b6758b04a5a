"""Perf section "stages": where the topology's time goes, per record and per micro-batch.

`python -m bench.perf --only stages`; needs the local stack (Kafka), as the pipeline section does.
On the pipeline section's topic (2,000,000 COUNTRY_SKEW_R80 records, 10 partitions) it measures,
at two batch sizes (`BATCHES`), the steady rate of:

- the prefixes of the topology's query (`PREFIXES`), each a Spark query in a fresh process:
  `empty` (the spout into Spark's `noop` sink, which reads every row and does nothing with it: the
  batch cycle and per-record cost below which no query of the topic goes, issue 37's "limit,
  measured"), then queries that count the prefix's rows in `foreachBatch`: `read` (the spout: the
  Kafka source and the watermark; counting needs no column of the record, so Spark leaves out the
  spout's UTF-8 check), `split` (plus the splitter: UTF-8 check, parse, explode, its observed
  metrics), `route` (plus the grouping stage in the JVM, `bench.topology.jvm_stage`: KEY's
  instances in the state store);
- the whole topology: `bench run` with KEY at cost 0, W = S = P = 10, A = 1, as the pipeline
  section runs it (its data plane in the JVM: the route prefix, the worker task, the windows, the
  sink).

Issue 37's targets are two rows of the section: the topology's cost per record at most
PER_RECORD_TARGET times the read's, and its cost per batch at most PER_BATCH_TARGET times the read's.

A steady batch of B records takes B / rate(B) seconds. With two batch sizes that gives each
query's cost as `fixed + B x per_record` (`batch_cost`): the per-batch cost (planning, scheduling,
state store commits, task and Python worker start-up) and the per-record cost. The per-record cost
bounds the rate at any batch size (`1 / per_record`: what an infinitely large batch would reach);
the difference between consecutive prefixes is what each part of the pipeline adds.

Spark runs the stages of a micro-batch one after the other (each waits for the shuffle before
it), so a batch's time is the sum of its stages' times, and the whole topology cannot run faster
than its `route` prefix at the same batch size. The Storm peer (`bench.perf.peers`) runs its
spout, splitter, worker and aggregator executors at the same time; docs/performance.md compares
the two models with these figures.

A prefix's figure is the median of `PREFIX_RUNS` runs, the topology's one run, per batch size
(about 10 minutes in all). With 1,000,000-record batches the 2M topic has one steady batch, so a
1M figure is one batch per run: the per-record costs move by 10-20 % between sections on this
shared machine, and a difference between two neighbouring prefixes below that is noise.
"""

from __future__ import annotations

import statistics
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from bench.perf import pipeline
from bench.perf._harness import Row
from bench.run.input import ensure_topics
from bench.stack import StackConfig
from bench.topology import jvm_stage, splitter, spout
from bench.topology.config import TopologyConfig
from bench.topology.session import build_session
from datasets import get_dataset

SECTION = "stages"
BATCHES = (200_000, 1_000_000)
"""The two batch sizes (maxOffsetsPerTrigger): the pipeline section's, and half its topic."""

RUN_ID = "perf-stages"
"""The prefix queries' run id: their spout also subscribes to `<run id>.control`, created empty."""

PREFIXES = ("empty", "read", "split", "route")
"""Prefixes of the topology's query, in pipeline order (`prefix_frame`); `empty` is the spout into the
`noop` sink, the others count their rows in `foreachBatch`."""

PREFIX_RUNS = 3
"""Runs of each prefix query per batch size, interleaved (empty, read, split, route, empty, ...): each
figure is their median. A prefix run takes 15-25 s, most of it the JVM's start; the topology's
runs take about a minute each and are made once per batch size."""


PER_RECORD_TARGET = 2.5
PER_BATCH_TARGET = 2.0
"""The topology's cost per record and per batch, at most these multiples of the read's (issue 37)."""


@dataclass(frozen=True)
class BatchCost:
    """A query's time per steady micro-batch as `fixed_ms + records x per_record_us`.

    Attributes: fixed_ms: ms per batch whatever its size; per_record_us: µs per record (wall time,
    on the whole machine).
    """

    fixed_ms: float
    per_record_us: float

    @property
    def ceiling(self) -> float:
        """records/s with no per-batch cost: the rate an unbounded batch tends to (inf if free)."""
        return float("inf") if self.per_record_us <= 0 else 1e6 / self.per_record_us

    def rate(self, batch: int) -> float:
        """records/s at `batch` records per micro-batch."""
        return batch / ((self.fixed_ms / 1e3) + batch * self.per_record_us / 1e6)


def batch_cost(rates: dict[int, float]) -> BatchCost:
    """The `BatchCost` through two measured points.

    Args: rates: batch size (records) -> steady rate (records/s), exactly two sizes.
    Returns: the line through the two (size, seconds per batch) points. A noisy pair may give a
        negative fixed cost; it is returned as measured, not clipped.
    Raises: ValueError: not exactly two distinct sizes, or a rate <= 0.
    """
    if len(rates) != 2 or any(rate <= 0 for rate in rates.values()):
        raise ValueError(f"need two batch sizes with positive rates, got {rates}")
    (small, small_rate), (large, large_rate) = sorted(rates.items())
    if small == large:
        raise ValueError("the two batch sizes must differ")
    small_s, large_s = small / small_rate, large / large_rate
    per_record_s = (large_s - small_s) / (large - small)
    return BatchCost(fixed_ms=(small_s - small * per_record_s) * 1e3, per_record_us=per_record_s * 1e6)


def prefix_frame(spark, prefix: str, topic: str, bootstrap: str, batch: int):
    """The streaming DataFrame of the topology's query up to `prefix` (`PREFIXES`), built by the
    topology's own modules with the pipeline section's settings (S = 10)."""
    if prefix not in PREFIXES:
        raise ValueError(f"unknown prefix {prefix!r}: one of {', '.join(PREFIXES)}")
    config = TopologyConfig(run_id=RUN_ID, grouping="KEY", dataset=pipeline.DATASET,
                            topic=topic, bootstrap_servers=bootstrap, checkpoint_dir=Path("unused"),
                            results_dir=Path("unused"), splitters=pipeline.PARTITIONS,
                            max_offsets_per_trigger=batch)
    ensure_topics(bootstrap, {config.control_topic: 1})  # the spout subscribes to it; it stays empty
    frame = spout.read_kafka(spark, config)
    if prefix in ("empty", "read"):
        return frame
    frame = splitter.split(frame, config, get_dataset(pipeline.DATASET, length=1).splitter_sql)
    if prefix == "split":
        return frame
    return jvm_stage.apply_grouping(frame, config.grouping, pipeline.COST_WORKERS, config.grouping_clock)


def prefix_rate(prefix: str, topic: str, bootstrap: str, batch: int) -> tuple[float, int]:
    """Steady rate of one prefix query (`availableNow`; rows counted in `foreachBatch`, or the `noop`
    sink for `empty`), in this process: (records/s, steady batches), as `pipeline.steady_rate`
    computes it."""
    spark = build_session("local[*]", shuffle_partitions=pipeline.AGGREGATORS)
    frame = prefix_frame(spark, prefix, topic, bootstrap, batch)
    rate = (pipeline.writer_rate(frame.writeStream.format("noop")) if prefix == "empty"
            else pipeline.counting_rate(frame))
    spark.stop()
    return rate


def rows_of(rates: dict[str, dict[int, float]]) -> list[Row]:
    """The section's rows from measured rates: query ("empty", "read", "split", "route", "topology") ->
    batch size -> records/s. One row per query: its per-record ceiling, with its `BatchCost`, its
    rates and what it adds to the query before it in the note; `baseline_rate` is the per-record
    ceiling of `read` (so `ratio` compares each query with reading the topic alone). With a
    "topology", two rows more hold issue 37's targets: its per-record ceiling against the read's
    over PER_RECORD_TARGET, and its batches/s with no record (1000 / fixed ms) against the read's
    over PER_BATCH_TARGET."""
    costs = {name: batch_cost(by_batch) for name, by_batch in rates.items()}
    ceiling = costs["read"].ceiling
    rows, before = [], None
    for name, cost in costs.items():
        small, large = sorted(rates[name])
        added = "" if before is None else (
            f"; adds {cost.fixed_ms - costs[before].fixed_ms:+.0f} ms/batch and "
            f"{cost.per_record_us - costs[before].per_record_us:+.2f} µs/record to {before}")
        rows.append(Row.measured(
            SECTION, f"{name}: per-record ceiling", cost.ceiling, "records/s", ceiling,
            note=(f"{cost.fixed_ms:.0f} ms/batch + {cost.per_record_us:.2f} µs/record; measured "
                  f"{rates[name][small] / 1e3:.1f}k records/s at {small:,}, {rates[name][large] / 1e3:.1f}k at "
                  f"{large:,}{added}")))
        before = name
    if "topology" in costs:
        read, topology = costs["read"], costs["topology"]
        rows.append(Row.measured(
            SECTION, "topology: per-record ceiling, target", topology.ceiling, "records/s", read.ceiling,
            target=read.ceiling / PER_RECORD_TARGET,
            note=f"cost per record at most {PER_RECORD_TARGET}x the read's (issue 37): "
                 f"{topology.per_record_us / read.per_record_us:.2f}x"))
        rows.append(Row.measured(
            SECTION, "topology: batches/s with no record, target", 1e3 / topology.fixed_ms, "batches/s",
            1e3 / read.fixed_ms, target=1e3 / read.fixed_ms / PER_BATCH_TARGET,
            note=f"cost per batch at most {PER_BATCH_TARGET}x the read's (issue 37): "
                 f"{topology.fixed_ms / read.fixed_ms:.2f}x"))
    return rows


def run() -> list[Row]:
    """Measure the prefixes (`PREFIX_RUNS` interleaved runs each) and the topology (one run) at
    both batch sizes, then derive every query's per-batch and per-record cost."""
    bootstrap = StackConfig.from_env().bootstrap_servers
    topic = f"perf.{pipeline.DATASET.lower()}.n{pipeline.TOPIC_RECORDS}.p{pipeline.PARTITIONS}"
    pipeline._ensure_topic(bootstrap, topic, pipeline.TOPIC_RECORDS, pipeline.TOPIC_RECORDS)
    stamp = time.strftime("%Y%m%dT%H%M%S")
    rates: dict[str, dict[int, float]] = {name: {} for name in (*PREFIXES, "topology")}
    with tempfile.TemporaryDirectory() as tmp:
        for batch in BATCHES:
            runs: dict[str, list[float]] = {prefix: [] for prefix in PREFIXES}
            for _ in range(PREFIX_RUNS):
                for prefix in PREFIXES:
                    rate, _ = pipeline.rate_in_fresh_process(__name__, "prefix_rate", prefix, topic, bootstrap, batch)
                    runs[prefix].append(rate)
            for prefix, measured in runs.items():
                rates[prefix][batch] = statistics.median(measured)
            _, batches = pipeline._bench_run(topic, bootstrap, Path(tmp), f"perf-stages-{stamp}-{batch}", "KEY",
                                             master="local[*]", cost_ms=0.0, max_offsets=batch)
            rates["topology"][batch] = pipeline.steady_rate(batches)[0]
    return rows_of(rates)
