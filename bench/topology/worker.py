"""Storm's WorkerBolt ×W: `repartitionById(W, worker)`, simulated cost, per-window partial counts.

`repartitionById` puts the tuples of worker w in Spark partition w, so worker w is exactly one
Spark task per batch. Every row passes a filter evaluated in that task (`placement_check`): it fails
the query with `WorkerPlacementError` if a row of another worker reaches the task
(`spark_partition_id() != worker`). Then the worker's work runs in the JVM, in that task
(bench/topology/jvm, `WorkerTask.java`): per tuple, the reference's speed rule (a sleep of the
simulated cost every K tuples) and the moment it was done, from which the stage's observed metrics
build each worker's processing-latency histogram (`bench.latency`). It runs even without cost
(`--cost-ms 0`): the latency is measured in every run. The work is a column (a projection), not a
`mapPartitions`: a projection keeps the columns' attributes, and with them the event-time watermark
that the windowed stages after it need (a map drops it, and re-declaring a watermark after a
stateful stage is refused: see docs/topology.md).

The worker window (reference: 15 s tumbling window, `key -> sum`) is an event-time window keyed by
`(window, worker, key)`; its partial aggregation runs in the same worker task.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from bench.metrics import WORKER_METRICS
from bench.topology import jvm_stage, worker_state
from bench.topology.state_transfer import TRANSFER_COLUMN


DONE_COLUMN = worker_state.DONE_COLUMN
"""When the worker was done with the tuple, epoch µs (`WorkerTask.processedAtUs`); the worker-state
operator carries it through."""

LATENCY_LINE = "<worker>|<first>|<last>|<encoded HDR histogram>"
"""What the observed metrics' `latency` holds for each worker of a batch: the first and last tuple
it was done with (epoch ms) and the processing latencies of its tuples (the moment it was done
minus the tuple's Kafka timestamp, µs; HdrHistogram's compressed base64 form, `bench.latency`)."""


class WorkerPlacementError(RuntimeError):
    """A tuple reached a task other than its worker's: the one-task-per-worker guarantee broke.
    Raised in the JVM as a Spark error whose message starts with this class's name."""


def processed_at(spark, cost_ms: float, cost_every: int) -> Column:
    """The worker's work on each tuple of its task (`WorkerTask.processedAtUs`): a sleep of `cost_ms`
    every `cost_every` tuples, then the epoch µs it was done (int64, non-deterministic).

    Raises: pyspark.errors.IllegalArgumentException (the JVM's, converted by PySpark) for a negative
        cost or K below 1."""
    return Column(spark._jvm.bench.topology.WorkerTask.processedAtUs(float(cost_ms), int(cost_every)))


def latency_lines(spark) -> Column:
    """The aggregate of a batch's worker latencies (`WorkerTask.latencies`): an array of LATENCY_LINE,
    one per worker that had tuples, NULL for none."""
    jvm = spark._jvm.bench.topology.WorkerTask.latencies(
        F.col("worker")._jc, F.unix_millis("event_ts")._jc, F.col(DONE_COLUMN)._jc)
    return F.split(Column(jvm), "\n")


def placement_check() -> Column:
    """The worker task's filter condition: true on every row of the task's own worker, a query
    failure otherwise. `spark_partition_id()` is non-deterministic, so the optimizer keeps the
    filter above the `repartitionById` exchange, in the worker's task."""
    return F.when(F.spark_partition_id() == F.col("worker"), F.lit(True)).otherwise(F.raise_error(
        F.format_string(f"{WorkerPlacementError.__name__}: task of partition %d received worker %d",
                        F.spark_partition_id(), F.col("worker"))))


def placed_and_worked(routed: DataFrame, workers: int, cost_ms: float, cost_every: int) -> DataFrame:
    """`grouping_stage` output in the worker tasks (`repartitionById`, `placement_check`), each tuple
    worked (`processed_at`): the input's columns and DONE_COLUMN. A row with a state-transfer record
    (`state_transfer.TRANSFER_COLUMN`, the real-time query's) is placed, not worked."""
    placed = routed.repartitionById(workers, F.col("worker")).where(placement_check())
    done = processed_at(routed.sparkSession, cost_ms, cost_every)
    if TRANSFER_COLUMN in routed.columns:
        done = F.when(F.col(TRANSFER_COLUMN).isNull(), done)
    return placed.withColumn(DONE_COLUMN, done)


PARTIAL_AGGREGATES = {
    "count": lambda: F.sum("count"),
    "tuples": lambda: F.count(F.lit(1)),
    "first_ts": lambda: F.min("event_ts"),
    "last_ts": lambda: F.max("event_ts"),
    "ts_sum_ms": lambda: F.sum(F.unix_millis("event_ts")),
}
"""A worker window's partial, by column (the aggregator's input, `bench.topology.aggregator`)."""


def window_partials(worked: DataFrame, window_s: int, **more: Column) -> DataFrame:
    """The worker windows: `wwin (struct start,end), worker, key` and PARTIAL_AGGREGATES' columns,
    then `more` (name -> aggregate), per (event-time window of `window_s`, worker, key)."""
    aggregates = [make().alias(name) for name, make in PARTIAL_AGGREGATES.items()]
    aggregates += [column.alias(name) for name, column in more.items()]
    return worked.groupBy(F.window("event_ts", f"{window_s} seconds").alias("wwin"), "worker", "key").agg(*aggregates)


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
    spark = routed.sparkSession
    worked = placed_and_worked(routed, workers, cost_ms, cost_every)
    observed = worked.observe(
        WORKER_METRICS,
        F.count(F.lit(1)).alias("rows"),
        F.collect_list(jvm_stage.routed_column(spark)).alias("routed"),  # NULLs are skipped: one per splitter and batch
        latency_lines(spark).alias("latency"),
    )
    stateful = observed if state_partitions is None else \
        worker_state.keep_state(observed, workers, state_partitions, transfers)
    return window_partials(stateful, window_s)
