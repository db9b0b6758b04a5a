"""The workers' per-key state, in Spark's state store: what a rescale must move.

Each worker keeps, per key it processed: `count` (tuples), `sum` (of the tuples' `count` field),
`first_ts_ms`, `last_ts_ms` (Kafka timestamps, epoch ms) -- the simulator's `state.parquet`
columns (bench/simulate/rescale.py). The state is a `MapState` (user key = the key) of a JVM
`transformWithState` keyed by the worker's slot (`bench.topology.state_layout`), so worker w's
entries are in state partition w; one state-store entry per (worker, key).

Chain: worker task (placement check, cost, latency; `bench.topology.worker`) -> this operator
(bench/topology/jvm, `WorkerState.java`: apply the slot's state-transfer records, merge the batch
into the map, emit the tuples again with `event_ts` declared as the event-time column) -> worker
windows. The tuples stay in the JVM. The operator checks that it runs in the partition the layout
gives its worker (a Spark error starting `WorkerStatePlacementError` otherwise).

At the end of a run, `read_final_state` reads the map with Spark's state data source
(`format("statestore")`) from the checkpoint: `results/<run_id>/state.parquet`.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from bench.topology import jvm_stage
from bench.topology.checkpoint_log import batch_ids
from bench.topology.session import session_settings
from bench.topology.state_layout import slot_table
from bench.topology.state_transfer import TRANSFER_COLUMN

STATE_VAR = "per_key"
"""The MapState's name (the state data source's `stateVarName`; `WorkerState.STATE_VAR`)."""
STATE_COLUMNS = ["key", "worker", "count", "sum", "first_ts_ms", "last_ts_ms"]
"""state.parquet's columns, as the simulator writes them (one row per key and worker)."""

DONE_COLUMN = "done_us"
"""When the worker was done with a tuple, epoch µs: carried through the operator to the worker windows
(the real-time mode's per-tuple latency; `bench.topology.worker.DONE_COLUMN`)."""


def input_schema(spark) -> T.StructType:
    """The operator's input, as `WorkerState.INPUT` declares it: a worker's tuple (`slot, worker,
    event_ms, key, count, done_us`, `transfer` NULL), or a state-transfer record for a slot
    (`bench.topology.state_transfer`: `worker` -1, the tuple's columns NULL)."""
    return jvm_stage.java_schema(spark.sparkContext._jvm.bench.topology.WorkerState.INPUT)


def keep_state(worked: DataFrame, workers: int, partitions: int, transfers: DataFrame | None = None) -> DataFrame:
    """The worker stage's tuples (`event_ts, worker, key, count, ...`, DONE_COLUMN if measured, the
    real-time query's state-transfer records in TRANSFER_COLUMN if it has one) -> `event_ts, worker,
    key, count, done_us` rows, after each worker merged them into its per-key state; `event_ts` is
    the event-time column again (`done_us` NULL where the input had none).

    Args: workers: M (logical worker ids 0..M-1); partitions: N, the query's state partitions;
        transfers: a micro-batch rescale run's state-transfer rows (`input_schema`), or None.
    Raises: pyspark.errors.IllegalArgumentException (the JVM's, converted by PySpark) for N below 1.
    """
    slots = F.array(*[F.lit(s) for s in slot_table(workers, partitions)])
    tuples = worked.select(F.element_at(slots, F.col("worker") + 1).alias("slot"), "worker",
                           F.unix_millis("event_ts").alias("event_ms"), "key", "count",
                           (F.col(TRANSFER_COLUMN) if TRANSFER_COLUMN in worked.columns else F.lit(None))
                           .cast("string").alias(TRANSFER_COLUMN),
                           (F.col(DONE_COLUMN) if DONE_COLUMN in worked.columns else F.lit(None))
                           .cast("long").alias(DONE_COLUMN))
    if transfers is not None:
        tuples = tuples.unionByName(transfers)
    spark = worked.sparkSession
    return DataFrame(spark._jvm.bench.topology.WorkerState.apply(tuples._jdf, partitions), spark)


def touch_state_store_coordinator(spark) -> None:
    """Start the driver's StateStoreCoordinator, which Spark creates with the session's
    StreamingQueryManager. A session that has run no streaming query fails to read state with
    `CANNOT_LOAD_STATE_STORE.UNCATEGORIZED ... RpcEndpointNotFoundException: Cannot find endpoint:
    StateStoreCoordinator` (PySpark 4.2.0, measured): the state data source and
    `StreamingCheckpointManager.repartition` both need it."""
    spark.streams.active  # noqa: B018 -- the property creates the manager and its coordinator


def state_operator_id(spark, checkpoint: str) -> int:
    """The operator id of the worker-state operator in a query checkpoint (its `state-metadata`
    lists the state variables of each transformWithState operator; this one holds STATE_VAR).

    Raises: LookupError: no operator of the checkpoint holds STATE_VAR.
    """
    return operator_id(spark, checkpoint, lambda row: STATE_VAR in str(row["operatorProperties"] or ""),
                       f"the state variable {STATE_VAR!r}")


def operator_id(spark, checkpoint: str, matches, what: str) -> int:
    """The id of the first stateful operator of a query checkpoint whose `state-metadata` row
    `matches`. Raises LookupError (naming `what`) when none does."""
    for row in spark.read.format("state-metadata").load(checkpoint).collect():
        if matches(row):
            return int(row["operatorId"])
    raise LookupError(f"no operator of {checkpoint} holds {what}")


CHECKPOINT_FORMAT = "spark.sql.streaming.stateStore.checkpointFormatVersion"


def checkpoint_format(checkpoint: str) -> int:
    """The state store checkpoint format a query's checkpoint was written in: 2 when its last commit
    names the state stores' checkpoint ids (`stateUniqueIds`; Real-Time Mode writes only this
    format), 1 otherwise (Spark's default)."""
    commits = batch_ids(Path(checkpoint, "commits"))
    if not commits:
        return 1
    return 2 if "stateUniqueIds" in Path(checkpoint, "commits", str(commits[-1])).read_text() else 1


def read_final_state(spark, checkpoint: str, workers_of_slot: dict[int, int], batch_id: int | None = None) -> pd.DataFrame:
    """The per-key state of every worker at the checkpoint's last committed batch (or at committed
    batch `batch_id`), read with Spark's state data source: STATE_COLUMNS, sorted by (key, worker).

    The state data source reads with the session's checkpoint format (the offset log does not record
    it), and with format 1 it fails on a format-2 checkpoint: `CANNOT_LOAD_STATE_STORE.UNCATEGORIZED`,
    caused by `NumberFormatException: For input string: "1_<uuid>"` (PySpark 4.3.0, a real-time
    query's checkpoint, measured 2026-12-06). So the read takes the checkpoint's own format.

    Args: checkpoint: the query's checkpoint (`.../checkpoint/main`); workers_of_slot: slot -> worker.
    """
    touch_state_store_coordinator(spark)
    operator = state_operator_id(spark, checkpoint)
    reader = spark.read.format("statestore").option("operatorId", operator).option("stateVarName", STATE_VAR)
    if batch_id is not None:
        reader = reader.option("batchId", batch_id)
    with session_settings(spark, {CHECKPOINT_FORMAT: str(checkpoint_format(checkpoint))}):
        rows = (reader.load(checkpoint).selectExpr("key.slot AS slot", "user_map_key.key AS key", "user_map_value.*")
                .toPandas())
    frame = pd.DataFrame({
        "key": rows["key"].astype(str),
        "worker": rows["slot"].map(workers_of_slot).astype(np.int64),
        **{c: rows[c].astype(np.int64) for c in ("count", "sum", "first_ts_ms", "last_ts_ms")},
    })
    return frame.sort_values(["key", "worker"]).reset_index(drop=True)[STATE_COLUMNS]
