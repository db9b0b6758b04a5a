"""The worker windows' partials as a real-time query's last committed batch left them: what a
STOP_THE_WORLD in real-time mode gives the aggregator back before it restarts the query
(`bench.topology.realtime_aggregator`, "Rescales").

The worker windows are Spark's streaming aggregation (`bench.topology.worker.window_partials`), so
Spark's state data source reads their store: per (window, worker, key), the aggregation buffers in
the order of the aggregates (`sum(count)`, `count(1)`, `min(event_ts)`, `max(event_ts)`,
`sum(unix_millis(event_ts))`, then the real-time mode's two), whose names repeat (`sum`, `max`), so
they are read by position. The windows in the store are the ones the batch did not close: a window
closes when the batch's watermark (`batchWatermarkMs` of its offset-log entry) reaches its end.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
from pyspark.sql import functions as F

from bench.topology.checkpoint_log import batch_ids
from bench.topology.session import session_settings
from bench.topology.worker_state import CHECKPOINT_FORMAT, checkpoint_format, operator_id, touch_state_store_coordinator

AGGREGATION_OPERATOR = "Aggregate"
"""Part of the worker windows' `operatorName` in a checkpoint's operator metadata
(`StatefulStreamlineAggregate` in Real-Time Mode, `stateStoreSave` in a micro-batch)."""
COLUMNS = ["wstart_ms", "worker", "key", "count", "tuples", "first_ms", "last_ms", "ts_sum_ms"]


def last_committed(checkpoint: Path) -> int:
    """The checkpoint's last committed batch.

    Raises: LookupError: no batch is committed."""
    commits = batch_ids(Path(checkpoint) / "commits")
    if not commits:
        raise LookupError(f"{checkpoint} has no committed batch")
    return commits[-1]


def batch_watermark_ms(checkpoint: Path, batch: int) -> int:
    """The event-time watermark batch `batch` ran with (epoch ms; its offset-log entry's
    `batchWatermarkMs`): the windows it closed end at or before it."""
    metadata = (Path(checkpoint) / "offsets" / str(batch)).read_text().splitlines()[1]
    return int(json.loads(metadata)["batchWatermarkMs"])


def aggregation_operator_id(spark, checkpoint: Path) -> int:
    """The operator id of the worker windows in a query checkpoint.

    Raises: LookupError: the checkpoint has no streaming aggregation."""
    def aggregation(row) -> bool:
        return AGGREGATION_OPERATOR.lower() in str(row["operatorName"]).lower()
    return operator_id(spark, str(checkpoint), aggregation, "a streaming aggregation")


def committed_partials(spark, checkpoint: Path, batch: int) -> pd.DataFrame:
    """The worker windows' partials of committed batch `batch` (COLUMNS; times epoch ms), one row per
    (window, worker, key) that the batch left open, sorted by them."""
    touch_state_store_coordinator(spark)
    operator = aggregation_operator_id(spark, checkpoint)
    reader = spark.read.format("statestore").option("operatorId", operator).option("batchId", batch)
    with session_settings(spark, {CHECKPOINT_FORMAT: str(checkpoint_format(str(checkpoint)))}):
        frame = reader.load(str(checkpoint))
        fields = frame.schema["value"].dataType.fields
        value = F.col("value").cast("struct<" + ",".join(f"v{i}:{f.dataType.simpleString()}"
                                                          for i, f in enumerate(fields)) + ">")
        rows = frame.select(
            F.unix_millis(F.col("key.window.start")).alias("wstart_ms"), F.col("key.worker").alias("worker"),
            F.col("key.key").alias("key"), value["v0"].alias("count"), value["v1"].alias("tuples"),
            F.unix_millis(value["v2"]).alias("first_ms"), F.unix_millis(value["v3"]).alias("last_ms"),
            value["v4"].alias("ts_sum_ms")).toPandas()
    rows = rows.astype({c: "int64" for c in COLUMNS if c != "key"})
    return rows.sort_values(["wstart_ms", "worker", "key"]).reset_index(drop=True)[COLUMNS]
