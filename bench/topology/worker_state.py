"""The workers' per-key state, in Spark's state store: what a rescale must move.

Each worker keeps, per key it processed: `count` (tuples), `sum` (of the tuples' `count` field),
`first_ts_ms`, `last_ts_ms` (Kafka timestamps, epoch ms) -- the simulator's `state.parquet`
columns (bench/simulate/rescale.py). The state is a `MapState` (user key = the key) of a
`transformWithStateInPandas` keyed by the worker's slot (`bench.topology.state_layout`), so worker
w's entries are in state partition w; one state-store entry per (worker, key).

Chain: worker task (placement check, cost, latency; `bench.topology.worker`) -> `pack` (mapInArrow
in the worker task: one row of arrays per worker and Arrow batch, as the grouping stage packs its
input, because transformWithStateInPandas converts its input row by row) -> this operator (unpack,
merge the batch into the map, emit the tuples again with `event_ts` declared as the event-time
column) -> worker windows. The operator checks that it runs in the partition the layout gives its
worker (`WorkerStatePlacementError` otherwise).

At the end of a run, `read_final_state` reads the map with Spark's state data source
(`format("statestore")`) from the checkpoint: `results/<run_id>/state.parquet`.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
from pyspark import TaskContext
from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T
from pyspark.sql.streaming import StatefulProcessor, StatefulProcessorHandle

from bench.topology.state_layout import slot_table, state_partition
from bench.topology.state_transfer import TRANSFER_COLUMN
from bench.topology.state_transfer import apply as apply_transfers

STATE_VAR = "per_key"
"""The MapState's name (the state data source's `stateVarName`)."""
STATE_KEY_SCHEMA = T.StructType([T.StructField("key", T.StringType())])
STATE_VALUE_SCHEMA = T.StructType([
    T.StructField("count", T.LongType()),
    T.StructField("sum", T.LongType()),
    T.StructField("first_ts_ms", T.LongType()),
    T.StructField("last_ts_ms", T.LongType()),
])
STATE_COLUMNS = ["key", "worker", "count", "sum", "first_ts_ms", "last_ts_ms"]
"""state.parquet's columns, as the simulator writes them (one row per key and worker)."""

PACKED_SCHEMA = T.StructType([
    T.StructField("slot", T.IntegerType()),
    T.StructField("worker", T.IntegerType()),
    T.StructField("event_ms_list", T.ArrayType(T.LongType())),
    T.StructField("key_list", T.ArrayType(T.StringType())),
    T.StructField("count_list", T.ArrayType(T.LongType())),
])
OUTPUT_SCHEMA = T.StructType([
    T.StructField("event_ts", T.TimestampType()),
    T.StructField("worker", T.IntegerType()),
    T.StructField("key", T.StringType()),
    T.StructField("count", T.LongType()),
])


class WorkerStatePlacementError(RuntimeError):
    """A worker's state operator ran in a state partition other than the one its slot gives."""


def make_pack(slots: list[int]):
    """`mapInArrow` function over `event_ts, worker, key, count` (one worker task's tuples): one
    PACKED_SCHEMA row per worker and Arrow batch, `slot = slots[worker]`."""
    table_of_slots = pa.array(slots, pa.int32())

    def pack(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            if batch.num_rows == 0:
                continue
            table = pa.Table.from_batches([batch])
            event_ms = pc.cast(pc.cast(table["event_ts"], pa.timestamp("ms", tz="UTC"), safe=False), pa.int64())
            grouped = pa.table({"worker": table["worker"], "event_ms": event_ms, "key": table["key"],
                                "count": table["count"]}).group_by("worker", use_threads=False)
            packed = grouped.aggregate([("event_ms", "list"), ("key", "list"), ("count", "list")])
            slot = pc.take(table_of_slots, packed["worker"])
            yield from pa.table({"slot": slot, "worker": packed["worker"],
                                 "event_ms_list": packed["event_ms_list"], "key_list": packed["key_list"],
                                 "count_list": packed["count_list"]}).to_batches()

    return pack


def batch_partials(keys: np.ndarray, counts: np.ndarray, event_ms: np.ndarray) -> pd.DataFrame:
    """One worker's tuples of one batch -> per key `count, sum, first_ts_ms, last_ts_ms`, indexed by key."""
    frame = pd.DataFrame({"key": keys, "count": counts, "ts": event_ms})
    return frame.groupby("key", sort=False).agg(
        count=("count", "size"), sum=("count", "sum"), first_ts_ms=("ts", "min"), last_ts_ms=("ts", "max"))


def merge(stored: tuple | None, partial) -> tuple[int, int, int, int]:
    """A key's stored `(count, sum, first_ts_ms, last_ts_ms)` (None: new) merged with a batch's."""
    c, s, f, l = (int(partial[0]), int(partial[1]), int(partial[2]), int(partial[3]))
    if stored is None:
        return c, s, f, l
    return int(stored[0]) + c, int(stored[1]) + s, min(int(stored[2]), f), max(int(stored[3]), l)


class WorkerStateProcessor(StatefulProcessor):
    """Keyed by slot (one logical worker); state: MapState key -> (count, sum, first, last). With
    `transfers`, also the last state-transfer epoch the slot applied (`transfer_epoch`)."""

    def __init__(self, partitions: int, transfers: bool = False):
        self.partitions = partitions
        self.transfers = transfers

    def init(self, handle: StatefulProcessorHandle) -> None:
        self.state = handle.getMapState(STATE_VAR, STATE_KEY_SCHEMA, STATE_VALUE_SCHEMA)
        if self.transfers:
            self.epoch = handle.getValueState("transfer_epoch", T.StructType([T.StructField("applied", T.LongType())]))

    def handleInputRows(self, key, rows: Iterator[pd.DataFrame], timerValues) -> Iterator[pd.DataFrame]:
        frames = [f for f in rows if len(f)]
        if not frames:
            return
        packed = pd.concat(frames, ignore_index=True)
        slot = int(key[0])
        partition = TaskContext.get().partitionId()
        if partition != state_partition(slot, self.partitions):
            raise WorkerStatePlacementError(f"slot {slot} ran in state partition {partition}")
        if self.transfers:
            # the state that moves to or from this worker, before any tuple of the batch
            moved = packed[TRANSFER_COLUMN].notna()
            if moved.any():
                stored = self.epoch.get()
                _, _, newest = apply_transfers(self.state, packed.loc[moved, TRANSFER_COLUMN].tolist(),
                                               int(stored[0]) if stored is not None else 0)
                self.epoch.update((newest,))
                packed = packed.loc[~moved]
            if not len(packed):
                return
        worker = int(packed["worker"].iloc[0])
        event_ms = np.concatenate(packed["event_ms_list"].to_list()).astype(np.int64, copy=False)
        keys = np.concatenate(packed["key_list"].to_list())
        counts = np.concatenate(packed["count_list"].to_list()).astype(np.int64, copy=False)
        partials = batch_partials(keys, counts, event_ms)
        for k, values in zip(partials.index.tolist(), partials.itertuples(index=False, name=None)):
            self.state.updateValue((k,), merge(self.state.getValue((k,)), values))
        yield pd.DataFrame({
            "event_ts": pd.to_datetime(event_ms, unit="ms", utc=True, cache=False),
            "worker": np.full(len(keys), worker, dtype=np.int32),
            "key": keys,
            "count": counts,
        })

    def close(self) -> None:
        pass


def keep_state(worked: DataFrame, workers: int, partitions: int, transfers: DataFrame | None = None) -> DataFrame:
    """The worker stage's tuples (`event_ts, worker, key, count, ...`) -> OUTPUT_SCHEMA rows, after
    each worker merged them into its per-key state; `event_ts` is the event-time column again.

    Args: workers: M (logical worker ids 0..M-1); partitions: N, the query's state partitions;
        transfers: a rescale run's state-transfer rows (PACKED_SCHEMA + `transfer`), or None.
    """
    pack = make_pack(slot_table(workers, partitions))
    packed = worked.select("event_ts", "worker", "key", "count").mapInArrow(pack, PACKED_SCHEMA)
    if transfers is not None:
        packed = packed.withColumn(TRANSFER_COLUMN, F.lit(None).cast("string")).unionByName(transfers)
    return packed.groupBy("slot").transformWithStateInPandas(
        statefulProcessor=WorkerStateProcessor(partitions, transfers is not None),
        outputStructType=OUTPUT_SCHEMA,
        outputMode="Append",
        timeMode="None",
        eventTimeColumnName="event_ts",
    )


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
    meta = spark.read.format("state-metadata").load(checkpoint).collect()
    for row in meta:
        if STATE_VAR in str(row["operatorProperties"] or ""):
            return int(row["operatorId"])
    raise LookupError(f"no operator of {checkpoint} holds the state variable {STATE_VAR!r}")


def read_final_state(spark, checkpoint: str, workers_of_slot: dict[int, int], batch_id: int | None = None) -> pd.DataFrame:
    """The per-key state of every worker at the checkpoint's last committed batch (or at committed
    batch `batch_id`), read with Spark's state data source: STATE_COLUMNS, sorted by (key, worker).

    Args: checkpoint: the query's checkpoint (`.../checkpoint/main`); workers_of_slot: slot -> worker.
    """
    touch_state_store_coordinator(spark)
    operator = state_operator_id(spark, checkpoint)
    reader = spark.read.format("statestore").option("operatorId", operator).option("stateVarName", STATE_VAR)
    if batch_id is not None:
        reader = reader.option("batchId", batch_id)
    rows = (reader.load(checkpoint).selectExpr("key.slot AS slot", "user_map_key.key AS key", "user_map_value.*").toPandas())
    frame = pd.DataFrame({
        "key": rows["key"].astype(str),
        "worker": rows["slot"].map(workers_of_slot).astype(np.int64),
        **{c: rows[c].astype(np.int64) for c in ("count", "sum", "first_ts_ms", "last_ts_ms")},
    })
    return frame.sort_values(["key", "worker"]).reset_index(drop=True)[STATE_COLUMNS]
