"""Storm's custom stream grouping: one `groupings` instance per splitter, kept in Spark's state store.

`transformWithStateInPandas` keyed by `splitter`: each micro-batch hands the processor all tuples of
one splitter instance; the processor restores that instance's grouping (a pickled object in a
`ValueState`), routes the tuples in Kafka order, stores it back, and emits each tuple with its
worker. The state store is checkpointed with the query, so a restarted query continues with the
very grouping objects it had (DYNAMIC_KEY's KeySpace, loads and check times included).

Packed input: pyspark 4.2 hands transformWithStateInPandas its input row by row (it builds a
pandas frame from Python tuples), which cost about two thirds of the stage's Python time. So the
splitter's task first packs its tuples, with `mapInArrow` (`pack`), into one row of arrays per
(splitter, Kafka partition) of each Arrow batch; the processor unpacks them with numpy
(`unpack`). The event-time column is re-declared on the processor's output
(`eventTimeColumnName`), so the watermark still reaches the window stages.

Order: a shuffle does not promise order, so the rows are sorted by (partition, offset, idx)
inside the stage. Clock (`--grouping-clock`):
- `kafka` (default): the tuple's Kafka timestamp, made monotone per instance (running maximum, kept
  in the state) so a splitter reading several partitions never sees time go back. Deterministic for
  a given topic, whatever the batch boundaries and the cluster.
- `processing`: the wall clock at the splitter when the batch is routed, as Storm did.
"""

from __future__ import annotations

import json
import pickle
import time
from collections.abc import Iterator

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import DataFrame
from pyspark.sql import types as T
from pyspark.sql.streaming import StatefulProcessor, StatefulProcessorHandle

from bench.stack.resources import ROUTING_SUMMARY
from bench.topology import jvm_stage
from bench.topology.python_workers import freeze_after_warm_up
from groupings import create_grouping

PACKED_COLUMNS = ["offset", "idx", "event_ms", "key", "count"]
"""The per-tuple columns `pack` turns into arrays (named `<column>_list`)."""

PACKED_SCHEMA = T.StructType(
    [T.StructField("splitter", T.IntegerType()), T.StructField("partition", T.IntegerType())]
    + [T.StructField(f"{name}_list", T.ArrayType(kind)) for name, kind in
       zip(PACKED_COLUMNS, [T.LongType(), T.IntegerType(), T.LongType(), T.StringType(), T.LongType()])]
)

STATE_SCHEMA = T.StructType([
    T.StructField("grouping", T.BinaryType()),
    T.StructField("clock_ms", T.LongType()),
    T.StructField("tuples", T.LongType()),
])


def pack(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """`mapInArrow` function: tuples -> PACKED_SCHEMA rows, one per (splitter, partition) of each
    Arrow batch (at most `spark.sql.execution.arrow.maxRecordsPerBatch` tuples, so rows stay small).

    Input columns: `splitter, partition, offset, idx, event_ts, key, count` (`splitter.split`).
    Order inside the arrays is not relied on: `route_batch` sorts.
    """
    for batch in batches:
        if batch.num_rows == 0:
            continue
        table = pa.Table.from_batches([batch])
        # Kafka timestamps are whole milliseconds; Spark sends microseconds.
        event_ms = pc.cast(pc.cast(table["event_ts"], pa.timestamp("ms", tz="UTC"), safe=False), pa.int64())
        packed = table.append_column("event_ms", event_ms).group_by(["splitter", "partition"], use_threads=False)
        packed = packed.aggregate([(name, "list") for name in PACKED_COLUMNS])
        yield from packed.select([field.name for field in PACKED_SCHEMA]).to_batches()
    freeze_after_warm_up("pack")


def unpack(packed: pd.DataFrame) -> pd.DataFrame:
    """PACKED_SCHEMA rows (pandas, arrays as numpy) -> one row per tuple:
    `partition, offset, idx, event_ms, key, count` (no particular order)."""
    sizes = packed["offset_list"].map(len).to_numpy(dtype=np.int64)  # int64 when empty too
    rows = {"partition": np.repeat(packed["partition"].to_numpy(dtype=np.int32), sizes)}
    for name in PACKED_COLUMNS:
        rows[name] = np.concatenate(packed[f"{name}_list"].to_list()) if len(packed) else np.empty(0)
    return pd.DataFrame(rows)


def clock_ms(event_ms: np.ndarray, last_ms: int | None, mode: str, wall_ms: int) -> np.ndarray:
    """The `now_ms` of each tuple, in routing order.

    kafka: running maximum of the Kafka timestamps, starting from the instance's last clock.
    processing: `wall_ms` for every tuple of the batch.
    """
    if mode == "processing":
        start = wall_ms if last_ms is None else max(wall_ms, last_ms)
        return np.full(len(event_ms), start, dtype=np.int64)
    now = np.maximum.accumulate(event_ms.astype(np.int64))
    if last_ms is not None:
        now = np.maximum(now, last_ms)
    return now


def routing_summary(workers_of: np.ndarray, keys: np.ndarray, counts: np.ndarray, workers: int) -> dict:
    """What one routed batch sent where: `workers_of[i]` is the worker of tuple i (key `keys[i]`,
    weight `counts[i]`). Returns the weight and the tuples per worker (`loads`, `tuples`: length W each)
    and its distinct `pairs` `[[worker, key], ...]` sorted by (worker, key), under the JSON keys of
    `bench.stack.resources.ROUTING_SUMMARY`."""
    # Key codes in sorted key order, so that sorting (worker, code) sorts (worker, key).
    codes, distinct_keys = pd.factorize(keys, sort=True)
    n_keys = max(len(distinct_keys), 1)
    pair_workers, pair_codes = np.divmod(np.unique(workers_of.astype(np.int64) * n_keys + codes), n_keys)
    loads = np.bincount(workers_of, weights=counts, minlength=workers).astype(np.int64)
    return {
        ROUTING_SUMMARY.loads: loads.tolist(),
        ROUTING_SUMMARY.tuples: np.bincount(workers_of, minlength=workers).tolist(),
        ROUTING_SUMMARY.pairs: [[w, k] for w, k in zip(pair_workers.tolist(), distinct_keys[pair_codes].tolist())],
    }


def routing_order(partition: np.ndarray, offset: np.ndarray, idx: np.ndarray) -> np.ndarray | None:
    """The permutation that sorts tuples by (partition, offset, idx), or None if they already are.

    A splitter instance that reads one Kafka partition usually gets its tuples in order (one map
    task wrote them in Kafka order), and the check costs one pass instead of a sort."""
    if len(offset) < 2:
        return None
    dp, do, di = np.diff(partition), np.diff(offset), np.diff(idx)
    if np.all((dp > 0) | ((dp == 0) & ((do > 0) | ((do == 0) & (di > 0))))):
        return None
    return np.lexsort((idx, offset, partition))


def route_batch(state: tuple | None, rows: pd.DataFrame, *, grouping: str, workers: int, params: dict, clock: str,
                routed_column: str, wall_ms: int | None = None) -> tuple[pd.DataFrame, tuple]:
    """Route one batch of one splitter instance. Pure: no Spark; the unit under test.

    Args: state: `(pickled grouping, clock_ms, tuples)` or None for a new instance; rows: the tuples
        of one splitter instance, columns `partition, offset, idx, event_ms` (Kafka timestamp, epoch
        ms), `key, count`, any order; routed_column: the output's summary column
        (`jvm_stage.routed_column`).
    Returns: the rows in routing order as the grouping stages' output columns
        (`jvm_stage.output_schema`: `event_ts` UTC; the batch's `routing_summary` on its first row, as
        a JSON string: pyspark converts array columns of a pandas output element by element in Python,
        four nullable array columns 18 ms per 20,000 rows, a string column goes to Arrow as is) and
        the new state.
    """
    columns = {name: rows[name].to_numpy() for name in ("partition", "offset", "idx", "event_ms", "key", "count")}
    order = routing_order(columns["partition"], columns["offset"], columns["idx"])
    if order is not None:
        columns = {name: values[order] for name, values in columns.items()}
    event_ms = columns["event_ms"].astype(np.int64, copy=False)
    wall = int(time.time() * 1000) if wall_ms is None else wall_ms
    if state is None:
        now = clock_ms(event_ms, None, clock, wall)
        instance = create_grouping(grouping, workers, start_ms=int(now[0]) if len(now) else wall, **params)
        seen = 0
    else:
        instance = pickle.loads(state[0])
        now = clock_ms(event_ms, int(state[1]), clock, wall)
        seen = int(state[2])
    keys, counts = columns["key"], columns["count"].astype(np.int64, copy=False)
    routed = np.asarray(instance.route(keys, now) if len(keys) else np.empty(0), np.int32)
    out = pd.DataFrame({
        "event_ts": pd.to_datetime(event_ms, unit="ms", utc=True, cache=False),
        "key": keys,
        "count": counts,
        "worker": routed,
    })
    summary = np.full(len(keys), None, dtype=object)
    if len(keys):
        summary[0] = json.dumps(routing_summary(routed, keys, counts, workers), separators=(",", ":"))
    out[routed_column] = summary
    last = int(now[-1]) if len(now) else (int(state[1]) if state else wall)
    return out, (pickle.dumps(instance, protocol=pickle.HIGHEST_PROTOCOL), last, seen + len(keys))


class GroupingProcessor(StatefulProcessor):
    """The stateful processor: state = one grouping instance per splitter key. A rescale run routes
    in the JVM (`bench.topology.jvm_stage`): this stage does not rescale."""

    def __init__(self, grouping: str, workers: int, params: dict, clock: str, routed_column: str):
        self.grouping = grouping
        self.workers = workers
        self.params = dict(params)
        self.clock = clock
        self.routed_column = routed_column

    def init(self, handle: StatefulProcessorHandle) -> None:
        self.state = handle.getValueState("grouping", STATE_SCHEMA)

    def handleInputRows(self, key, rows: Iterator[pd.DataFrame], timerValues) -> Iterator[pd.DataFrame]:
        frames = [f for f in rows if len(f)]
        if not frames:
            return
        # One state-API round trip, not two: `get` is None for a new instance (no `exists` first).
        stored = self.state.get()
        out, new_state = route_batch(tuple(stored) if stored is not None else None,
                                     unpack(pd.concat(frames, ignore_index=True)), grouping=self.grouping,
                                     workers=self.workers, params=self.params, clock=self.clock,
                                     routed_column=self.routed_column)
        self.state.update(new_state)
        if len(out):
            yield out
        freeze_after_warm_up(f"grouping:{self.grouping}")

    def close(self) -> None:
        pass


def apply_grouping(tuples: DataFrame, grouping: str, workers: int, params: dict, clock: str) -> DataFrame:
    """`splitter.split` output -> the grouping stages' output rows (`jvm_stage.output_schema`, the JVM
    stage's: one schema for both); `event_ts` is again the event-time column."""
    spark = tuples.sparkSession
    processor = GroupingProcessor(grouping, workers, params, clock, jvm_stage.routed_column(spark))
    return tuples.mapInArrow(pack, PACKED_SCHEMA).groupBy("splitter").transformWithStateInPandas(
        statefulProcessor=processor,
        outputStructType=jvm_stage.output_schema(spark),
        outputMode="Append",
        timeMode="None",
        eventTimeColumnName="event_ts",
    )
