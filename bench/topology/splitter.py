"""Storm's SplitterBolt: the dataset's raw record -> `(key, count, event_ts, splitter)` tuples.

Pure Spark SQL (the dataset's `splitter_sql` expressions; no per-row Python). Splitter instance
s = Kafka partition mod S: with S = P (the reference: one spout partition per splitter) each
instance reads exactly one partition; the stage runs at most one task per task slot
(`in_slot_tasks`), each reading one or more partitions. A record that does not parse yields no
tuple here and is counted (`malformed`); `bench.topology.dead_letters` reads the batches that have
some once more and sends each such record, with its reason (`dead_letters` below), to `<run>.dlq`.
"""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from bench.metrics import SPLIT_TUPLES_METRICS, SPLITTER_METRICS
from bench.topology.config import TopologyConfig
from datasets.base import INVALID_UTF8, KEY_TOO_LONG, NULL_VALUE


def input_only(topic: str):
    """`topic = <input>`, written so that the optimizer cannot push it below the watermark.

    Spark pushes a filter that does not reference the event-time column below `withWatermark`; the
    end-of-input record would then be dropped before the watermark saw its timestamp. A single
    CASE over both columns cannot be split off and pushed.
    """
    return F.when(F.col("topic") == F.lit(topic), F.lit(True)).otherwise(F.unix_millis("kafka_ts") < F.lit(0))


def in_slot_tasks(df: DataFrame) -> DataFrame:
    """`df` read in at most one task per task slot of the cluster (`defaultParallelism`), instead of
    one per Kafka partition: a narrow `coalesce`, no shuffle, a no-op when the cluster has as many
    slots as the topic has partitions.

    The splitter stage ends in a Python round trip (`grouping_stage.pack`), and each Python task
    pays a fixed cost of its own (a worker connection, the function, the Arrow streams). With P = 10
    partitions on two cores (`local[*]`), ten such tasks took 0.40 s more per 200,000 tuples than two
    tasks reading five partitions each (1.42 s against 1.02 s, batch micro-benchmark of the
    splitter stage with `pack`, medians of 5 rounds, 2026-11-23). Splitter instances stay what they
    were (s = partition mod S, and `pack` groups by splitter and partition), so the routing is the
    same for any task count.
    """
    return df.coalesce(df.sparkSession.sparkContext.defaultParallelism)


def parse(df: DataFrame, splitter_sql, max_key_bytes: int) -> DataFrame:
    """`df` with `parsed` (the dataset's tuples) and `tuples`: `parsed`, or NULL when the record is a
    dead letter: a null or not UTF-8 value (`spout` makes `value` NULL), the dataset's rule says
    malformed, or a key longer than `max_key_bytes` bytes. `split` and `dead_letters` share it, so
    they agree on every record."""
    return (
        df.selectExpr("*", splitter_sql.prelude)
        .withColumn("parsed", F.when(F.col("value").isNotNull(), F.expr(splitter_sql.tuples)))
        .withColumn("tuples", F.when(~F.expr(long_key(max_key_bytes)), F.col("parsed")))
    )


def long_key(max_key_bytes: int) -> str:
    """SQL: whether a record's `parsed` tuples (array<struct<key, count>>) hold a key longer than
    `max_key_bytes` bytes; NULL wherever `exists` gives NULL (no longer key but a NULL key, or
    `parsed` NULL), since a NULL drops the record as a long key does.

    `exists` is a higher-order function, which Spark evaluates row by row without code generation
    (and looks up each element's physical type through `SQLConf.get`): Java Flight Recorder put
    12.6 % of the executor task threads' samples of a cost-0 KEY run there (2026-11-25). A record
    of one tuple, the common case (every key-only dataset), is checked by a generated expression
    equal to `exists` on one element; only records of several tuples evaluate `exists`."""
    n = int(max_key_bytes)
    return (f"CASE WHEN size(parsed) = 1 THEN octet_length(parsed[0].key) > {n} "
            f"ELSE exists(parsed, t -> octet_length(t.key) > {n}) END")


def split(df: DataFrame, config: TopologyConfig, splitter_sql) -> DataFrame:
    """`df` from `spout.read_kafka` -> one row per tuple:
    `splitter, partition, offset, idx, event_ts, key, count`.

    `idx` is the tuple's position inside its record, so that (partition, offset, idx) is the
    total order a splitter instance emits its tuples in. `event_ts` is the Kafka timestamp (it
    carries the watermark). Control-topic records are dropped here, after the watermark saw them.

    In real-time mode (`config.realtime`) the stage reads in one task per Kafka partition (Real-Time
    Mode refuses the coalesce of `in_slot_tasks`, `CoalesceExec`) and observes no metrics (they
    would reach the driver at the end of a real-time batch only; the input audit counts the records,
    `bench.topology.audit`).
    """
    realtime = config.realtime
    parsed = (
        parse((df if realtime else in_slot_tasks(df)).where(input_only(config.topic)), splitter_sql,
              config.max_key_bytes)
        .select(
            (F.col("partition") % F.lit(config.splitters)).cast("int").alias("splitter"),
            "partition",
            "offset",
            F.col("kafka_ts").alias("event_ts"),
            "tuples",
        )
    )
    if not realtime:
        parsed = parsed.observe(
            SPLITTER_METRICS,
            F.count(F.lit(1)).alias("records"),
            F.count_if(F.col("tuples").isNull()).alias("malformed"),
            F.max(F.unix_millis("event_ts")).alias("max_ts_ms"),
        )
    tuples = (
        parsed.where(F.col("tuples").isNotNull())
        .select("splitter", "partition", "offset", "event_ts", F.posexplode("tuples").alias("idx", "t"))
        .select(
            "splitter", "partition", "offset", F.col("idx").cast("int").alias("idx"), "event_ts",
            F.col("t.key").alias("key"), F.col("t.count").cast("long").alias("count"),
        )
    )
    return tuples if realtime else tuples.observe(
        SPLIT_TUPLES_METRICS, F.count(F.lit(1)).alias("tuples"),
        F.coalesce(F.sum("count"), F.lit(0)).cast("long").alias("weight"))


def dead_letters(df: DataFrame, splitter_sql, max_key_bytes: int) -> DataFrame:
    """Malformed input records of `df` (`spout.read_range`: input-topic records only):
    `partition, offset, kafka_ts, reason, value, value_base64, value_bytes`.

    A record is malformed exactly when `parse` gives it no tuples (the splitter drops it). Reason:
    `null value`, `invalid UTF-8` (then `value` is NULL and `value_base64` holds the bytes), `key
    too long`, else the dataset's `splitter_sql.error` (`unparsable record` as a guard).
    """
    return (
        parse(df, splitter_sql, max_key_bytes)
        .where(F.col("tuples").isNull())
        .select(
            "partition", "offset", "kafka_ts",
            F.when(F.col("raw").isNull(), F.lit(NULL_VALUE))
            .when(F.col("value").isNull(), F.lit(INVALID_UTF8))
            .when(F.col("parsed").isNotNull(), F.lit(KEY_TOO_LONG))
            .otherwise(F.coalesce(F.expr(splitter_sql.error), F.lit("unparsable record"))).alias("reason"),
            "value",
            F.when(F.col("value").isNull() & F.col("raw").isNotNull(), F.base64("raw")).alias("value_base64"),
            F.coalesce(F.octet_length("raw"), F.lit(0)).cast("long").alias("value_bytes"),
        )
    )
