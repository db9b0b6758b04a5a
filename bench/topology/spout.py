"""Storm's Kafka spout: Spark's Kafka source on the input topic, from the earliest offset.

The query also subscribes to the run's control topic (`<run>.control`). The orchestrator writes
one record there once every input record has been consumed, with a Kafka timestamp past the last
window: the watermark (defined here, on the Kafka timestamp, before the splitter drops the
record) then closes the last worker and aggregator windows. The input topic is never written to,
so the four groupings of `run-all` read exactly the same records.
"""

from __future__ import annotations

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from bench.topology.config import TopologyConfig


def read_kafka(spark: SparkSession, config: TopologyConfig, *, with_control: bool = True) -> DataFrame:
    """Columns: `topic, partition, offset, kafka_ts (timestamp), value (string)`, with the event-time
    watermark on `kafka_ts` (delay `watermark_delay_s`)."""
    topics = [config.topic, config.control_topic] if with_control else [config.topic]
    reader = (
        spark.readStream.format("kafka")
        .option("kafka.bootstrap.servers", config.bootstrap_servers)
        .option("subscribe", ",".join(topics))
        .option("startingOffsets", "earliest")
        .option("failOnDataLoss", "true")
    )
    if config.max_offsets_per_trigger:
        reader = reader.option("maxOffsetsPerTrigger", str(config.max_offsets_per_trigger))
    df = reader.load().select(
        "topic",
        "partition",
        "offset",
        F.col("timestamp").alias("kafka_ts"),
        F.col("value").cast("string").alias("value"),
    )
    if with_control:
        df = df.withWatermark("kafka_ts", f"{config.watermark_delay_s} seconds")
    return df
