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
from pyspark import TaskContext
from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T
from pyspark.sql.streaming import StatefulProcessor, StatefulProcessorHandle

from bench.topology.handoff_router import CONTROL_KEY as HANDOFF_KEY
from bench.topology.handoff_router import HandoffState
from bench.topology.python_workers import freeze_after_warm_up
from groupings import create_grouping

PACKED_COLUMNS = ["offset", "idx", "event_ms", "key", "count"]
"""The per-tuple columns `pack` turns into arrays (named `<column>_list`)."""

PACKED_SCHEMA = T.StructType(
    [T.StructField("splitter", T.IntegerType()), T.StructField("partition", T.IntegerType())]
    + [T.StructField(f"{name}_list", T.ArrayType(kind)) for name, kind in
       zip(PACKED_COLUMNS, [T.LongType(), T.IntegerType(), T.LongType(), T.StringType(), T.LongType()])]
)

ROUTED_COLUMN = "routed"
"""What one splitter instance routed in one batch (`routing_summary`), as a JSON string on the
batch's first output row (NULL on the others); the worker stage's observed metrics collect them
(`bench.topology.worker`). A string, not arrays: pyspark converts array columns of a pandas output
element by element in Python (four nullable array columns cost 18 ms per 20,000 rows), a string
column goes to Arrow as is."""

OUTPUT_SCHEMA = T.StructType([
    T.StructField("event_ts", T.TimestampType()),
    T.StructField("key", T.StringType()),
    T.StructField("count", T.LongType()),
    T.StructField("worker", T.IntegerType()),
    T.StructField(ROUTED_COLUMN, T.StringType()),
])

STATE_SCHEMA = T.StructType([
    T.StructField("grouping", T.BinaryType()),
    T.StructField("clock_ms", T.LongType()),
    T.StructField("tuples", T.LongType()),
])


def timestamps_ms(series: pd.Series) -> np.ndarray:
    """Epoch milliseconds (int64) of a pandas timestamp column, naive (UTC) or tz-aware."""
    if getattr(series.dt, "tz", None) is not None:
        series = series.dt.tz_convert("UTC").dt.tz_localize(None)
    return series.to_numpy(dtype="datetime64[ms]").astype(np.int64)


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
    weight `counts[i]`). Returns `{"loads": [weight per worker], "tuples": [tuples per worker]}` (length
    W) and `"pairs": [[worker, key], ...]`, its distinct pairs sorted by (worker, key)."""
    # Key codes in sorted key order, so that sorting (worker, code) sorts (worker, key).
    codes, distinct_keys = pd.factorize(keys, sort=True)
    n_keys = max(len(distinct_keys), 1)
    pair_workers, pair_codes = np.divmod(np.unique(workers_of.astype(np.int64) * n_keys + codes), n_keys)
    return {
        "loads": np.bincount(workers_of, weights=counts, minlength=workers).astype(np.int64).tolist(),
        "tuples": np.bincount(workers_of, minlength=workers).tolist(),
        "pairs": [[w, k] for w, k in zip(pair_workers.tolist(), distinct_keys[pair_codes].tolist())],
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
                wall_ms: int | None = None, targets: tuple = (), width: int | None = None,
                handoff: HandoffState | None = None, batch_id: int = 0,
                watermark_ms: int | None = None) -> tuple[pd.DataFrame, tuple]:
    """Route one batch of one splitter instance. Pure: no Spark; the unit under test.

    Args: state: `(pickled grouping, clock_ms, tuples)` or None for a new instance; rows: the tuples
        of one splitter instance, columns `partition, offset, idx, event_ms` (Kafka timestamp, epoch
        ms), `key, count`, any order.
        targets: rescale targets to apply (`reschedule`, in order) before routing; width: length
        of the routing summary's per-worker lists (default `workers`; a rescale run's max parallelism).
        handoff: a HANDOFF in progress at this router (`bench.topology.handoff_router`, its controls
        of this batch applied), which routes, holds and releases the moved units' tuples; batch_id:
        the batch (recorded with the tuples it holds); watermark_ms: the batch's watermark.
    Returns: the rows in routing order as OUTPUT_SCHEMA columns (`event_ts` UTC; the batch's
        `routing_summary` on its first row, with `released`: `[[hold batch, tuples], ...]` when held
        tuples go out) and the new state.
    Raises: HeldBelowWatermarkError: see `HandoffState.route`.
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
    for target in targets:
        instance.reschedule(target)
    keys, counts = columns["key"], columns["count"].astype(np.int64, copy=False)
    released: list = []
    if handoff is not None and handoff.active:
        sent = handoff.route(instance, keys, counts, event_ms, now, batch_id, watermark_ms)
        keys, counts, event_ms, routed, released = sent.key, sent.count, sent.event_ms, sent.worker, sent.released
    else:
        routed = np.asarray(instance.route(keys, now) if len(keys) else np.empty(0), np.int32)
    out = pd.DataFrame({
        "event_ts": pd.to_datetime(event_ms, unit="ms", utc=True, cache=False),
        "key": keys,
        "count": counts,
        "worker": routed,
    })
    summary = np.full(len(keys), None, dtype=object)
    if len(keys):
        figures = routing_summary(routed, keys, counts, width or workers)
        if released:
            figures["released"] = released
        summary[0] = json.dumps(figures, separators=(",", ":"))
    out[ROUTED_COLUMN] = summary
    last = int(now[-1]) if len(now) else (int(state[1]) if state else wall)
    return out, (pickle.dumps(instance, protocol=pickle.HIGHEST_PROTOCOL), last, seen + len(keys))


BATCH_ID_PROPERTY = "streaming.sql.batchId"
"""The task-local property in which Spark's micro-batch execution gives every task its batch id."""


def due_targets(switches: tuple, applied: int, batch_id: int) -> list:
    """The rescale targets an instance that applied `applied` of `switches` ((switch batch, target),
    in order) applies before routing batch `batch_id`."""
    return [target for switch_batch, target in switches[applied:] if switch_batch <= batch_id]


CONTROL_COLUMN = "control"
"""A live rescale's switch record on the grouping stage's packed input (NULL on tuple rows):
`bench.topology.rescale_channel` gives every splitter instance a copy in the same batch."""

CONTROL_SCHEMA = T.StructType(PACKED_SCHEMA.fields + [T.StructField(CONTROL_COLUMN, T.StringType())])
"""The packed input of a live rescale's grouping stage: PACKED_SCHEMA and CONTROL_COLUMN."""


def live_targets(applied: list, records: list[str]) -> list:
    """The targets of the switch records `records` (JSON, `switch` = k for the run's k-th rescale,
    and `target`) that an instance which applied `applied` (the targets of switches 1..len(applied))
    has not applied yet, in order. A record without `switch` (a later HANDOFF step) has no target.

    Raises: ValueError: a switch is missing (they are published one by one, 1, 2, ...)."""
    new = sorted({int(r["switch"]): r["target"] for r in map(json.loads, records)
                  if "switch" in r and int(r["switch"]) > len(applied)}.items())
    for expected, (k, _) in enumerate(new, start=len(applied) + 1):
        if k != expected:
            raise ValueError(f"switch {k} before switch {expected}")
    return [target for _, target in new]


class GroupingProcessor(StatefulProcessor):
    """The stateful processor: state = one grouping instance per splitter key.

    Rescales (`rescale`): with `switches` (STOP_THE_WORLD: the query is restarted with them), each
    instance counts the rescales it applied (`rescale_epoch`) and, in the batch a switch is due
    (known from the batch id Spark gives every task), reschedules its routing before it routes.
    Live (SHARED_STATE, LEARNER, HANDOFF: no restart), the switches arrive as CONTROL_COLUMN rows, and each
    instance keeps the targets it applied (`live_targets`), so that an instance created later
    starts with them too. With `handoff`, each instance also keeps its part of a hand-off in
    progress (`bench.topology.handoff_router.HandoffState`, kept apart from the grouping so that an
    instance without tuples yet keeps it too): the pending units, the held ones and their tuples."""

    def __init__(self, grouping: str, workers: int, params: dict, clock: str, switches: tuple = (),
                 width: int | None = None, rescale: bool = False, live: bool = False, handoff: bool = False):
        self.grouping = grouping
        self.workers = workers
        self.params = dict(params)
        self.clock = clock
        self.switches = tuple(switches)
        self.width = width
        self.rescale = rescale
        self.live = live
        self.handoff = handoff

    def init(self, handle: StatefulProcessorHandle) -> None:
        self.state = handle.getValueState("grouping", STATE_SCHEMA)
        if self.rescale:
            self.epoch = handle.getValueState("rescale_epoch", T.StructType([T.StructField("applied", T.LongType())]))
        if self.live:
            self.applied = handle.getValueState("live_targets", T.StructType([T.StructField("json", T.StringType())]))
        if self.handoff:
            self.handoff_state = handle.getValueState("handoff", T.StructType([T.StructField("state", T.BinaryType())]))

    def handleInputRows(self, key, rows: Iterator[pd.DataFrame], timerValues) -> Iterator[pd.DataFrame]:
        frames = [f for f in rows if len(f)]
        if not frames:
            return
        packed = pd.concat(frames, ignore_index=True)
        # One state-API round trip, not two: `get` is None for a new instance (no `exists` first).
        stored = self.state.get()
        previous = tuple(stored) if stored is not None else None
        targets: list = []
        if self.rescale:
            epoch = self.epoch.get()
            applied = int(epoch[0]) if epoch is not None else 0
            targets = due_targets(self.switches, applied, int(TaskContext.get().getLocalProperty(BATCH_ID_PROPERTY)))
            if targets:
                self.epoch.update((applied + len(targets),))
        handoff = None
        if self.live:
            control = packed[CONTROL_COLUMN].notna()
            records = packed.loc[control, CONTROL_COLUMN].tolist()
            if control.any() or previous is None:  # the kept targets matter only then (one round trip less)
                kept = self.applied.get()
                applied = json.loads(kept[0]) if kept is not None else []
                new = live_targets(applied, records) if control.any() else []
                if new:
                    self.applied.update((json.dumps(applied + new),))
                # a new instance starts at `workers` and takes every switch so far
                targets = new if previous is not None else applied + new
                packed = packed.loc[~control]
            if self.handoff:
                handoff = self._handoff(records)
            if not len(packed) and previous is None:
                return  # no instance yet: it is created, with `live_targets`, by its first tuples
        batch = unpack(packed)
        batch_id = watermark_ms = 0
        handoff_active = handoff is not None and handoff.active
        if handoff_active:
            batch_id = int(TaskContext.get().getLocalProperty(BATCH_ID_PROPERTY))
            watermark_ms = int(timerValues.getCurrentWatermarkInMs())
        out, new_state = route_batch(previous, batch, grouping=self.grouping, workers=self.workers,
                                     params=self.params, clock=self.clock, targets=tuple(targets), width=self.width,
                                     handoff=handoff, batch_id=batch_id, watermark_ms=watermark_ms)
        self.state.update(new_state)
        if handoff is not None and handoff_active:  # it may have held or released tuples
            self._store(handoff)
        if len(out):
            yield out
        freeze_after_warm_up(f"grouping:{self.grouping}")

    def _handoff(self, records: list[str]) -> HandoffState:
        """This instance's hand-off state with the HANDOFF steps of `records` (JSON control records)
        applied in epoch order, and stored when they changed it."""
        kept = self.handoff_state.get()
        handoff = pickle.loads(kept[0]) if kept is not None else HandoffState()
        steps = sorted((int(r["epoch"]), r[HANDOFF_KEY]) for r in map(json.loads, records) if HANDOFF_KEY in r)
        for epoch, step in steps:
            handoff.apply(epoch, step)
        if steps:
            self._store(handoff)
        return handoff

    def _store(self, handoff: HandoffState) -> None:
        self.handoff_state.update((pickle.dumps(handoff, protocol=pickle.HIGHEST_PROTOCOL),))

    def close(self) -> None:
        pass


def apply_grouping(tuples: DataFrame, grouping: str, workers: int, params: dict, clock: str,
                   switches: tuple = (), width: int | None = None, rescale: bool = False,
                   controls: DataFrame | None = None, handoff: bool = False) -> DataFrame:
    """`splitter.split` output -> OUTPUT_SCHEMA rows; `event_ts` is again the event-time column.
    `controls`: a live rescale's switch rows (CONTROL_SCHEMA, `rescale_channel.switch_rows`), or None; `handoff`:
    the instances keep a HANDOFF's state (`bench.topology.handoff_router`)."""
    packed = tuples.mapInArrow(pack, PACKED_SCHEMA)
    if controls is not None:
        packed = packed.withColumn(CONTROL_COLUMN, F.lit(None).cast("string")).unionByName(controls)
    return packed.groupBy("splitter").transformWithStateInPandas(
        statefulProcessor=GroupingProcessor(grouping, workers, params, clock, switches, width, rescale,
                                            live=controls is not None, handoff=handoff),
        outputStructType=OUTPUT_SCHEMA,
        outputMode="Append",
        # the watermark reaches the processor only in event-time mode: HANDOFF checks its held tuples against it
        timeMode="EventTime" if handoff else "None",
        eventTimeColumnName="event_ts",
    )
