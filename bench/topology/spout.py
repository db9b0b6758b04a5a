"""Storm's Kafka spout: Spark's Kafka source on the input topic, from the earliest offset.

The query also subscribes to the run's control topic (`<run>.control`). The orchestrator writes
one record there once every input record has been consumed, with a Kafka timestamp past the last
window: the watermark (defined here, on the Kafka timestamp, before the splitter drops the
record) then closes the last worker and aggregator windows. The input topic is never written to,
so the four groupings of `run-all` read exactly the same records.
"""

from __future__ import annotations

import json

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from bench.topology.config import TopologyConfig

EARLIEST = -2
"""Spark's Kafka offset JSON for "the partition's earliest offset"."""

CONSUMER_OPTIONS = {"kafka.fetch.max.wait.ms": "10", "kafka.max.poll.records": "10000"}
"""Kafka consumer settings of every read of a topic here (and of `make perf`'s count-only query, so
that it stays the pipeline's ceiling, and of its Storm peer's spout).

- `fetch.max.wait.ms` 10: a task that reads up to the end of the log otherwise waits for the
  broker's empty fetch (500 ms by default) before it ends: measured on a count-only query of 10
  tasks on 2 cores, the batch that reached the end of the log took 3.0-3.3 s instead of 0.6-1.0 s,
  and 0.56-0.76 s with 10 ms. A live run, paced below capacity, reaches the end of the log in
  every batch.
- `max.poll.records` 10,000 instead of Kafka's 500: Spark's Kafka reader asks the broker for the
  partition's earliest and latest offsets after every poll (`InternalKafkaConsumer.fetch` ->
  `getAvailableOffsetRange`, about 7 % of the executor task threads' Java Flight Recorder samples
  in a cost-0 run), so fewer, larger polls save those round trips. KEY at cost 0 on `make perf`'s
  2M-record topic, six interleaved pairs of runs (2026-11-25, load average 1.1-2.9): a median of
  115,800 records/s and 63.8 CPU-s per run, against 107,700 and 68.0 with 500; five pairs of six in
  favour. (On the slower host of 2026-11-22, with the topology at half today's rate, the same
  setting was within the spread; docs/topology.md.)"""


REALTIME_CONSUMER_OPTIONS = {"kafka.max.poll.records": CONSUMER_OPTIONS["kafka.max.poll.records"]}
"""The real-time query's consumers: Kafka's own `fetch.max.wait.ms` (500 ms). A real-time task polls
its partition all the time, and a fetch returns as soon as a record is there (`fetch.min.bytes`
1), so the wait bounds only how often an idle partition is asked: with 10 ms, ten idle partitions
cost the broker 0.37 cores and the executor tasks about a core at 500 records/s
(DYNAMIC_KEY, NYC_FLIGHTS, 2026-11-29)."""


def _columns(df: DataFrame) -> DataFrame:
    """`value` is the record as a string, NULL when it is not valid UTF-8 (or null); `raw` keeps the
    bytes, for the dead letters (read only where a plan uses it)."""
    return df.select(
        "topic",
        "partition",
        "offset",
        F.col("timestamp").alias("kafka_ts"),
        F.when(F.is_valid_utf8(F.col("value").cast("string")), F.col("value").cast("string")).alias("value"),
        F.col("value").alias("raw"),
    )


def read_kafka(spark: SparkSession, config: TopologyConfig, watermark: bool = True) -> DataFrame:
    """The streaming source of the input and control topics (in real-time mode the input topic
    only: its windows are closed downstream, `bench.topology.realtime`). Columns: `topic, partition,
    offset, kafka_ts (timestamp), value (string), raw (binary)`, with the event-time watermark on
    `kafka_ts` (delay `watermark_delay_s`) unless `watermark` is False: a query that defines its
    watermark further down (a real-time query without a rescale, `bench.topology.realtime`), since
    Spark refuses a watermark defined below another one ("Redefining watermark is disallowed")."""
    reader = (
        spark.readStream.format("kafka")
        .option("kafka.bootstrap.servers", config.bootstrap_servers)
        .option("subscribe", config.topic if config.realtime else f"{config.topic},{config.control_topic}")
        .option("startingOffsets", "earliest")
        .option("failOnDataLoss", "true")
        .options(**(REALTIME_CONSUMER_OPTIONS if config.realtime else CONSUMER_OPTIONS))
    )
    if config.max_offsets_per_trigger:
        reader = reader.option("maxOffsetsPerTrigger", str(config.max_offsets_per_trigger))
    frame = _columns(reader.load())
    return frame.withWatermark("kafka_ts", config.watermark_delay) if watermark else frame


def read_range(spark: SparkSession, config: TopologyConfig, start: dict[int, int], end: dict[int, int]) -> DataFrame:
    """A batch read of the input topic's records from `start` to `end` (next offset to read, per
    partition; a partition missing from `start` is read from its earliest offset). Columns as
    `read_kafka`, no watermark. Raises (when the DataFrame is evaluated) if a record in the range
    is gone from Kafka (`failOnDataLoss`)."""
    topic = config.topic
    return _columns(
        spark.read.format("kafka")
        .option("kafka.bootstrap.servers", config.bootstrap_servers)
        .option("assign", json.dumps({topic: sorted(end)}))
        .option("startingOffsets", json.dumps({topic: {str(p): start.get(p, EARLIEST) for p in end}}))
        .option("endingOffsets", json.dumps({topic: {str(p): offset for p, offset in end.items()}}))
        .option("failOnDataLoss", "true")
        .options(**CONSUMER_OPTIONS)
        .load()
    )


def batch_offsets(progress: dict | None, topic: str, which: str = "endOffset") -> dict[int, int]:
    """Offsets of `topic` in a micro-batch's progress dict: `which` = `startOffset` (where the batch
    began reading; empty for the first batch of a checkpoint) or `endOffset` (next offset to read)."""
    out: dict[int, int] = {}
    for source in (progress or {}).get("sources") or []:
        offsets = source.get(which)
        if isinstance(offsets, str):
            try:
                offsets = json.loads(offsets)
            except ValueError:
                continue
        if isinstance(offsets, dict) and topic in offsets:
            out.update({int(p): int(o) for p, o in offsets[topic].items()})
    return out
