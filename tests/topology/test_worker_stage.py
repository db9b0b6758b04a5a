"""The worker task (`bench.topology.worker`: placement check, cost, latency) on a real Spark session."""

from __future__ import annotations

import pytest

from bench.topology.worker import LATENCY_COLUMN, WorkerPlacementError, make_worker_udf, placement_check

pytestmark = pytest.mark.spark


def worker_rows(spark, workers: int, per_worker: int):
    from pyspark.sql import functions as F

    return spark.createDataFrame([(w, f"k{i}") for w in range(workers) for i in range(per_worker)],
                                 "worker int, key string").withColumn("event_ts", F.current_timestamp())


@pytest.mark.parametrize("cost_ms", [0.0, 0.01])
def test_every_row_placed_by_repartition_by_id_passes(spark, cost_ms):
    from pyspark.sql import functions as F

    placed = worker_rows(spark, 3, 50).repartitionById(3, F.col("worker"))
    rows = placed.where(placement_check()).groupBy("worker").count().collect()
    assert sorted((r["worker"], r["count"]) for r in rows) == [(0, 50), (1, 50), (2, 50)]


def test_a_row_in_another_workers_task_fails_the_query(spark):
    from pyspark.sql import functions as F

    # Every row of worker 2 lands in partition 0.
    misplaced = worker_rows(spark, 3, 5).repartitionById(3, F.col("worker") % F.lit(2))
    with pytest.raises(Exception, match=f"{WorkerPlacementError.__name__}: task of partition 0 received worker 2"):
        misplaced.where(placement_check()).collect()


def test_each_worker_task_sends_one_histogram_per_chunk_with_every_tuple_and_its_cost(spark):
    """Tuples stamped at the query's start, 2 ms of cost each: worker w's histogram counts its 40
    tuples, and the last one waited at least for the 40 sleeps before it."""
    from pyspark.sql import functions as F

    from bench import latency

    placed = worker_rows(spark, 3, 40).repartitionById(3, F.col("worker")).where(placement_check())
    out = placed.withColumn(LATENCY_COLUMN, make_worker_udf(2.0, 1)(F.unix_millis("event_ts")))
    sent = [r[LATENCY_COLUMN] for r in out.select(LATENCY_COLUMN).collect() if r[LATENCY_COLUMN] is not None]
    by_worker: dict[int, list[str]] = {}
    for text in sent:
        worker, first, last, encoded = text.split("|", 3)
        assert int(last) - int(first) >= 39 * 2.0 - 1  # 40 tuples of 2 ms in one chunk
        by_worker.setdefault(int(worker), []).append(encoded)
    assert sorted(by_worker) == [0, 1, 2]
    for encoded in by_worker.values():
        figures = latency.figures_ms(latency.merge(encoded))
        assert figures["latency_tuples"] == 40
        assert figures["latency_max_ms"] >= 40 * 2.0
        assert figures["latency_p50_ms"] <= figures["latency_p99_ms"] <= figures["latency_max_ms"]
