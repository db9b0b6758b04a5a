"""Storm's AggregatorBolt ×A: merge the worker partials per (window, key), fields grouping by key.

An event-time tumbling window (60 s by default) over the worker windows' `window_time`, keyed by
`(window, key)`; its state is hash-partitioned by those columns over A = `spark.sql.shuffle.partitions`
partitions. In append mode a `(window, key)` total is emitted once, when the watermark passes the
window: it is final. Each row also keeps the per-worker breakdown of its partials, so the run
record can recompute exact per-worker loads and key-worker pairs from the final totals alone.
"""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F


def aggregate(partials: DataFrame, window_s: int) -> DataFrame:
    """Worker partials -> `window_start, window_end, key, count, tuples, first_ts, last_ts,
    ts_sum_ms, per_worker array<struct<worker, count, tuples>>`."""
    merged = partials.groupBy(F.window(F.window_time("wwin"), f"{window_s} seconds").alias("window"), "key").agg(
        F.sum("count").alias("count"),
        F.sum("tuples").alias("tuples"),
        F.min("first_ts").alias("first_ts"),
        F.max("last_ts").alias("last_ts"),
        F.sum("ts_sum_ms").alias("ts_sum_ms"),
        F.collect_list(F.struct("worker", "count", "tuples")).alias("per_worker"),
    )
    return merged.select(
        F.col("window.start").alias("window_start"), F.col("window.end").alias("window_end"),
        "key", "count", "tuples", "first_ts", "last_ts", "ts_sum_ms", "per_worker",
    )
