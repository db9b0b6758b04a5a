"""Storm's WorkerBolt ×W: `repartitionById(W, worker)`, simulated cost, per-window partial counts.

`repartitionById` puts the tuples of worker w in Spark partition w, so worker w is exactly one
Spark task per batch. The cost runs in that task, as a vectorised pandas UDF (`worker_task`), not
in `mapInPandas`: a UDF column keeps the other columns' attributes, and with them the event-time
watermark that the windowed stages after it need (mapInPandas drops it, and re-declaring a
watermark after a stateful stage is refused: see docs/topology.md). The UDF checks that every row
it sees belongs to its own partition, and returns the task's attempt id, which the observed
metrics `workers` report per batch.

The worker window (reference: 15 s tumbling window, `key -> sum`) is an event-time window keyed by
`(window, worker, key)`; its partial aggregation runs in the same worker task.
"""

from __future__ import annotations

import time

import pandas as pd
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

WORKER_METRICS = "workers"
"""Observed metrics of this stage, per batch: rows, per-worker loads, key-worker pairs, tasks."""

_carry: dict[int, int] = {}
"""Per task attempt: tuples since the last sleep, for --cost-every K > 1."""


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


class WorkerPlacementError(RuntimeError):
    """A tuple reached a task other than its worker's: the one-task-per-worker guarantee broke."""


def make_worker_udf(cost_ms: float, cost_every: int):
    @F.pandas_udf("long")
    def worker_task(worker: pd.Series) -> pd.Series:
        from pyspark import TaskContext

        ctx = TaskContext.get()
        partition = ctx.partitionId()
        wrong = worker[worker != partition]
        if len(wrong):
            raise WorkerPlacementError(f"task of partition {partition} received worker {int(wrong.iloc[0])}")
        simulate_cost(len(worker), cost_ms, cost_every, ctx.taskAttemptId())
        return pd.Series([ctx.taskAttemptId()] * len(worker), dtype="int64")

    # Non-deterministic: the optimizer must neither drop nor duplicate the call (it sleeps).
    return worker_task.asNondeterministic()


def work(routed: DataFrame, workers: int, cost_ms: float, cost_every: int, window_s: int) -> DataFrame:
    """`grouping_stage` output -> worker partials:
    `wwin (struct start,end), worker, key, count, tuples, first_ts, last_ts, ts_sum_ms`.

    One row per (worker window, worker, key), emitted once when the watermark passes the window.
    """
    placed = routed.repartitionById(workers, F.col("worker"))
    worked = placed.withColumn("task", make_worker_udf(cost_ms, cost_every)(F.col("worker")))
    observed = worked.observe(
        WORKER_METRICS,
        F.count(F.lit(1)).alias("rows"),
        *[F.coalesce(F.sum(F.when(F.col("worker") == w, F.col("count"))), F.lit(0)).cast("long").alias(f"load_{w}")
          for w in range(workers)],
        *[F.count_if(F.col("worker") == w).alias(f"tuples_{w}") for w in range(workers)],
        F.collect_set(F.struct("worker", "key")).alias("pairs"),
        F.collect_set(F.struct("worker", F.col("task").alias("task"))).alias("tasks"),
    )
    return observed.groupBy(F.window("event_ts", f"{window_s} seconds").alias("wwin"), "worker", "key").agg(
        F.sum("count").alias("count"),
        F.count(F.lit(1)).alias("tuples"),
        F.min("event_ts").alias("first_ts"),
        F.max("event_ts").alias("last_ts"),
        F.sum(F.unix_millis("event_ts")).alias("ts_sum_ms"),
    )
