"""Storm's custom stream grouping: one `groupings` instance per splitter, kept in Spark's state store.

`transformWithStateInPandas` keyed by `splitter`: each micro-batch hands the processor all tuples of
one splitter instance; the processor restores that instance's grouping (a pickled object in a
`ValueState`), routes the tuples in Kafka order, stores it back, and emits each tuple with its
worker. The state store is checkpointed with the query, so a restarted query continues with the
very grouping objects it had (DYNAMIC_KEY's KeySpace, loads and check times included).

Order: a shuffle does not promise order, so the rows are sorted by (partition, offset, idx)
inside the stage. Clock (`--grouping-clock`):
- `kafka` (default): the tuple's Kafka timestamp, made monotone per instance (running maximum, kept
  in the state) so a splitter reading several partitions never sees time go back. Deterministic for
  a given topic, whatever the batch boundaries and the cluster.
- `processing`: the wall clock at the splitter when the batch is routed, as Storm did.
"""

from __future__ import annotations

import pickle
import time
from collections.abc import Iterator

import numpy as np
import pandas as pd
from pyspark.sql import DataFrame
from pyspark.sql import types as T
from pyspark.sql.streaming import StatefulProcessor, StatefulProcessorHandle

ORDER = ["partition", "offset", "idx"]

OUTPUT_SCHEMA = T.StructType([
    T.StructField("event_ts", T.TimestampType()),
    T.StructField("splitter", T.IntegerType()),
    T.StructField("key", T.StringType()),
    T.StructField("count", T.LongType()),
    T.StructField("worker", T.IntegerType()),
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


def route_batch(state: tuple | None, rows: pd.DataFrame, *, grouping: str, workers: int, params: dict,
                clock: str, wall_ms: int | None = None) -> tuple[pd.DataFrame, tuple]:
    """Route one batch of one splitter instance. Pure: no Spark; the unit under test.

    Args: state: `(pickled grouping, clock_ms, tuples)` or None for a new instance; rows: columns
        `partition, offset, idx, event_ts, splitter, key, count`, any order.
    Returns: the rows in routing order with `worker` (OUTPUT_SCHEMA's columns) and the new state.
    """
    from groupings import create_grouping

    rows = rows.sort_values(ORDER, kind="stable", ignore_index=True)
    event_ms = timestamps_ms(rows["event_ts"])
    wall = int(time.time() * 1000) if wall_ms is None else wall_ms
    if state is None:
        now = clock_ms(event_ms, None, clock, wall)
        instance = create_grouping(grouping, workers, start_ms=int(now[0]) if len(now) else wall, **params)
        seen = 0
    else:
        instance = pickle.loads(state[0])
        now = clock_ms(event_ms, int(state[1]), clock, wall)
        seen = int(state[2])
    routed = instance.route(rows["key"].tolist(), now) if len(rows) else np.empty(0, dtype=np.int32)
    out = rows[["event_ts", "splitter", "key", "count"]].copy()
    out["worker"] = np.asarray(routed, dtype=np.int32)
    last = int(now[-1]) if len(now) else (int(state[1]) if state else wall)
    return out, (pickle.dumps(instance, protocol=pickle.HIGHEST_PROTOCOL), last, seen + len(rows))


class GroupingProcessor(StatefulProcessor):
    """The stateful processor: state = one grouping instance per splitter key."""

    def __init__(self, grouping: str, workers: int, params: dict, clock: str):
        self.grouping = grouping
        self.workers = workers
        self.params = dict(params)
        self.clock = clock

    def init(self, handle: StatefulProcessorHandle) -> None:
        self.state = handle.getValueState("grouping", STATE_SCHEMA)

    def handleInputRows(self, key, rows: Iterator[pd.DataFrame], timerValues) -> Iterator[pd.DataFrame]:
        frames = [f for f in rows if len(f)]
        if not frames:
            return
        batch = pd.concat(frames, ignore_index=True)
        previous = tuple(self.state.get()) if self.state.exists() else None
        out, new_state = route_batch(previous, batch, grouping=self.grouping, workers=self.workers,
                                     params=self.params, clock=self.clock)
        self.state.update(new_state)
        yield out

    def close(self) -> None:
        pass


def apply_grouping(tuples: DataFrame, grouping: str, workers: int, params: dict, clock: str) -> DataFrame:
    """`splitter.split` output -> OUTPUT_SCHEMA rows; `event_ts` stays the event-time column."""
    return tuples.groupBy("splitter").transformWithStateInPandas(
        statefulProcessor=GroupingProcessor(grouping, workers, params, clock),
        outputStructType=OUTPUT_SCHEMA,
        outputMode="Append",
        timeMode="None",
        eventTimeColumnName="event_ts",
    )
