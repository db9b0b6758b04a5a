"""The worker task's filter (`bench.topology.worker.in_worker_task`) on a real Spark session."""

from __future__ import annotations

import pytest

from bench.topology.worker import WorkerPlacementError, in_worker_task

pytestmark = pytest.mark.spark


def worker_rows(spark, workers: int, per_worker: int):
    return spark.createDataFrame([(w, f"k{i}") for w in range(workers) for i in range(per_worker)],
                                 "worker int, key string")


@pytest.mark.parametrize("cost_ms", [0.0, 0.01])
def test_every_row_placed_by_repartition_by_id_passes(spark, cost_ms):
    from pyspark.sql import functions as F

    placed = worker_rows(spark, 3, 50).repartitionById(3, F.col("worker"))
    rows = placed.where(in_worker_task(cost_ms, 1)).groupBy("worker").count().collect()
    assert sorted((r["worker"], r["count"]) for r in rows) == [(0, 50), (1, 50), (2, 50)]


@pytest.mark.parametrize("cost_ms", [0.0, 0.01])
def test_a_row_in_another_workers_task_fails_the_query(spark, cost_ms):
    from pyspark.sql import functions as F

    # Every row of worker 2 lands in partition 0.
    misplaced = worker_rows(spark, 3, 5).repartitionById(3, F.col("worker") % F.lit(2))
    with pytest.raises(Exception, match=f"{WorkerPlacementError.__name__}: task of partition 0 received worker 2"):
        misplaced.where(in_worker_task(cost_ms, 1)).collect()
