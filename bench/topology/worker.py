"""Storm's WorkerBolt ×W: `repartitionById(W, worker)`, simulated cost, per-window partial counts.

`repartitionById` puts the tuples of worker w in Spark partition w, so worker w is exactly one
Spark task per batch. Every row passes a filter evaluated in that task (`placement_check`): it fails
the query with `WorkerPlacementError` if a row of another worker reaches the task
(`spark_partition_id() != worker`). Then a vectorised pandas UDF (`make_worker_udf`) is the worker's
work: it sleeps the simulated cost and records each tuple's processing latency (`bench.latency`).
It runs even without cost (`--cost-ms 0`): the latency is measured in every run. The UDF adds a
column (a projection), not `mapInPandas`: a projection keeps the columns' attributes, and with them
the event-time watermark that the windowed stages after it need (mapInPandas drops it, and
re-declaring a watermark after a stateful stage is refused: see docs/topology.md).

The worker window (reference: 15 s tumbling window, `key -> sum`) is an event-time window keyed by
`(window, worker, key)`; its partial aggregation runs in the same worker task.
"""

from __future__ import annotations

import time

import numpy as np
import pandas as pd
from pyspark import TaskContext
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from bench import latency
from bench.topology import worker_state
from bench.topology.grouping_stage import ROUTED_COLUMN
from bench.topology.python_workers import freeze_after_warm_up

WORKER_METRICS = "workers"
"""Observed metrics of this stage, per batch: `rows` (tuples that reached the worker tasks) and
`routed` (the grouping stage's `routing_summary` of each splitter instance: per-worker weighted and
tuple counts, distinct key-worker pairs). The summaries are computed with numpy in the grouping
stage and ride on one row per splitter and batch, so observing them costs one aggregate per row;
the former `sum(CASE WHEN worker = w ...)` per worker cost about 20 ms per 200,000 rows and worker
(2 cores), 0.4 s per batch at W = 10."""

_carry: dict[int, int] = {}
"""Per task attempt: tuples since the last sleep, for --cost-every K > 1."""


class WorkerPlacementError(RuntimeError):
    """A tuple reached a task other than its worker's: the one-task-per-worker guarantee broke.
    Raised in the JVM as a Spark error whose message starts with this class's name."""


def sleeps_for(tuples: int, carry: int, every: int) -> tuple[int, int]:
    """Reference WorkerBolt speed rule over a chunk of `tuples`: `k += 1; if k >= every: sleep, k = 0`.

    Returns (number of sleeps, new carry). With every = 1, one sleep per tuple.
    """
    total = carry + tuples
    return total // every, total % every


def simulate_cost(tuples: int, cost_ms: float, every: int, task_id: int) -> float:
    """Sleep `cost_ms` once per `every` tuples of this task, in one call per chunk. Returns seconds slept."""
    if cost_ms <= 0 or tuples == 0:
        return 0.0
    n, _carry[task_id] = sleeps_for(tuples, _carry.get(task_id, 0), every)
    seconds = n * cost_ms / 1000.0
    if seconds > 0:
        time.sleep(seconds)
    return seconds


LATENCY_COLUMN = "latency_hist"
"""What the worker task did with one chunk of tuples, `<worker>|<first>|<last>|<encoded HDR histogram>`
(first and last tuple processed, epoch ms; the processing latencies, `bench.latency`), on the
chunk's last row (NULL on the others); the stage's observed metrics collect them, as they collect
the routing summaries."""


def make_worker_udf(cost_ms: float, cost_every: int):
    """A pandas UDF `event_ms -> latency_hist` run in the worker task, over `unix_millis(event_ts)`
    (epoch ms, int64): it sleeps the simulated cost of its chunk of tuples, then records each
    tuple's processing latency (the moment its share of the chunk's work ended minus its Kafka
    timestamp) in an HDR histogram, sent with the task's partition id, which the placement check
    has made the worker id (`placement_check`).

    One int64 column in, where it used to take `(worker, event_ts)`: PySpark converts a timestamp
    column to a tz-aware pandas column and back, and every column crosses the Arrow round trip.
    Measured on 2026-11-25 (KEY, cost 0, the perf topic of 2M records, medians of 3 interleaved
    runs, load average 2.3-4.5): 101,100 records/s and 70.7 CPU-s per run, against 96,600 and
    75.6 with the two columns and 105,500 and 68.7 without the UDF (docs/performance.md)."""

    @F.pandas_udf("string")
    def worker_task(event_ms: pd.Series) -> pd.Series:
        start_ns = time.time_ns()
        context = TaskContext.get()
        simulate_cost(len(event_ms), cost_ms, cost_every, context.taskAttemptId())
        done_us = latency.processed_at_us(start_ns, time.time_ns(), len(event_ms))
        out = pd.Series(None, index=event_ms.index, dtype=object)
        if len(event_ms):
            histogram = latency.new_histogram()
            latency.record(histogram, done_us - 1000 * event_ms.to_numpy(dtype=np.int64))
            out.iloc[-1] = (f"{context.partitionId()}|{int(done_us[0]) // 1000}|{int(done_us[-1]) // 1000}|"
                            f"{latency.encode(histogram)}")
        freeze_after_warm_up("worker")
        return out

    # Non-deterministic: the optimizer must neither drop nor duplicate the call (it sleeps and reads
    # the clock).
    return worker_task.asNondeterministic()


def placement_check() -> Column:
    """The worker task's filter condition: true on every row of the task's own worker, a query
    failure otherwise. `spark_partition_id()` is non-deterministic, so the optimizer keeps the
    filter above the `repartitionById` exchange, in the worker's task."""
    return F.when(F.spark_partition_id() == F.col("worker"), F.lit(True)).otherwise(F.raise_error(
        F.format_string(f"{WorkerPlacementError.__name__}: task of partition %d received worker %d",
                        F.spark_partition_id(), F.col("worker"))))


def work(routed: DataFrame, workers: int, cost_ms: float, cost_every: int, window_s: int,
         state_partitions: int | None = None, transfers: DataFrame | None = None) -> DataFrame:
    """`grouping_stage` output -> worker partials:
    `wwin (struct start,end), worker, key, count, tuples, first_ts, last_ts, ts_sum_ms`.

    With `state_partitions` (a run with `--worker-state`, or a rescale run), each worker also
    merges its tuples into its per-key state (`bench.topology.worker_state`, in that many state
    partitions). One row per (worker window, worker, key), emitted once
    when the watermark passes the window. `transfers`: a rescale run's state-transfer channel
    (`bench.topology.state_transfer.read`), applied by the worker-state operator.
    """
    placed = routed.repartitionById(workers, F.col("worker")).where(placement_check())
    worked = placed.withColumn(LATENCY_COLUMN, make_worker_udf(cost_ms, cost_every)(F.unix_millis("event_ts")))
    observed = worked.observe(
        WORKER_METRICS,
        F.count(F.lit(1)).alias("rows"),
        F.collect_list(ROUTED_COLUMN).alias("routed"),  # NULLs are skipped: one per splitter and batch
        F.collect_list(LATENCY_COLUMN).alias("latency"),  # one per worker task and chunk
    )
    stateful = observed if state_partitions is None else \
        worker_state.keep_state(observed, workers, state_partitions, transfers)
    return stateful.groupBy(F.window("event_ts", f"{window_s} seconds").alias("wwin"), "worker", "key").agg(
        F.sum("count").alias("count"),
        F.count(F.lit(1)).alias("tuples"),
        F.min("event_ts").alias("first_ts"),
        F.max("event_ts").alias("last_ts"),
        F.sum(F.unix_millis("event_ts")).alias("ts_sum_ms"),
    )
