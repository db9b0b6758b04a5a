"""Real-time mode's input audit: once every input record is in the topic, its records are read
again as a Spark batch (`spout.read_range`) through the splitter's own expressions (`splitter.parse`),
for what the real-time query's observed metrics would give only at the end of its batch: how many
records, how many malformed (written as dead letters, `splitter.dead_letters`, `DeadLetterSink`),
and the tuples and their weight. The driver waits until the latest partials hold exactly these
tuples before it closes the last windows, so a run never ends with a tuple still in flight, and
the run's checks compare the aggregated totals with the weight.
"""

from __future__ import annotations

from pyspark.sql import functions as F

from bench.topology import splitter, spout
from bench.topology.config import TopologyConfig
from bench.topology.sink import DeadLetterSink

AUDIT_BATCH_ID = 0
"""The dead letters' batch id (`dlq/batch-000000000.parquet`): one audit per run, written once."""


def audit_input(spark, config: TopologyConfig, splitter_sql, ends: dict[int, int], sink: DeadLetterSink) -> dict:
    """Count the input topic's records up to `ends` (next offset to read, per partition) and write
    their dead letters through `sink` (skipped when written before).

    Returns `{"records", "malformed", "tuples", "weight"}` (ints). Raises what Spark raises when a
    record in the range is gone from Kafka (`failOnDataLoss`)."""
    records = spout.read_range(spark, config, {}, ends)
    parsed = splitter.parse(records, splitter_sql, config.max_key_bytes)
    row = parsed.agg(
        F.count(F.lit(1)).alias("records"),
        F.count_if(F.col("tuples").isNull()).alias("malformed"),
        F.coalesce(F.sum(F.when(F.col("tuples").isNotNull(), F.size("tuples"))), F.lit(0)).alias("tuples"),
        F.coalesce(F.sum(F.expr("aggregate(tuples, 0L, (acc, t) -> acc + cast(t.count AS BIGINT))")), F.lit(0))
        .alias("weight"),
    ).first()
    sink(splitter.dead_letters(records, splitter_sql, config.max_key_bytes), AUDIT_BATCH_ID)
    return {name: int(row[name]) for name in ("records", "malformed", "tuples", "weight")}
