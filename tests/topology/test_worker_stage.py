"""The worker task (`bench.topology.worker`: placement check; cost and latency in the JVM, WorkerTask.java) on a
real Spark session."""

from __future__ import annotations

import pytest

from bench.topology.worker import DONE_COLUMN, WorkerPlacementError, latency_lines, placement_check, processed_at

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


def observed_latency(spark, workers: int, per_worker: int, cost_ms: float, every: int) -> dict[int, tuple]:
    """Each worker's (first ms, last ms, figures) from the stage's observed `latency` over one batch of
    tuples stamped at the query's start, as the observer reads them."""
    from pyspark.sql import Observation
    from pyspark.sql import functions as F

    from bench import latency

    placed = worker_rows(spark, workers, per_worker).repartitionById(workers, F.col("worker"))
    worked = placed.where(placement_check()).withColumn(DONE_COLUMN, processed_at(spark, cost_ms, every))
    observation = Observation("workers")
    worked.observe(observation, latency_lines(spark).alias("latency")).collect()
    out = {}
    for line in observation.get["latency"]:
        worker, first, last, encoded = line.split("|", 3)
        out[int(worker)] = (int(first), int(last), latency.figures_ms(latency.merge([encoded])))
    return out


def test_each_worker_sends_one_histogram_with_every_tuple_and_its_cost(spark):
    """2 ms of cost per tuple: worker w's histogram counts its 40 tuples, and its last tuple waited at
    least for the 40 sleeps before it. (Not the span from its first tuple: the sleeps are paced, so a
    first sleep that overshot by 3 ms makes the next ones shorter, and the span 75 ms, not 78.)"""
    sent = observed_latency(spark, 3, 40, 2.0, 1)
    assert sorted(sent) == [0, 1, 2]
    for first, last, figures in sent.values():
        assert last >= first
        assert figures["latency_tuples"] == 40
        assert figures["latency_max_ms"] >= 40 * 2.0
        assert figures["latency_p50_ms"] <= figures["latency_p99_ms"] <= figures["latency_max_ms"]


def test_one_sleep_every_k_tuples(spark):
    """K = 10, 5 ms: 40 tuples sleep at tuples 10, 20, 30 and 40, so the last one is done at least
    20 ms after the query started, and after the first (done before any sleep) by the four sleeps,
    which add up to at least 20 ms however they were paced."""
    sent = observed_latency(spark, 2, 40, 5.0, 10)
    for first, last, figures in sent.values():
        assert last - first >= 4 * 5.0 - 1  # ms, the epoch ms of the two rounded down
        assert figures["latency_tuples"] == 40 and figures["latency_max_ms"] >= 4 * 5.0


def test_without_cost_the_latency_is_still_measured(spark):
    sent = observed_latency(spark, 2, 25, 0.0, 1)
    assert sorted(sent) == [0, 1]
    assert [figures["latency_tuples"] for _, _, figures in sent.values()] == [25, 25]


def test_a_negative_cost_is_refused(spark):
    with pytest.raises(Exception, match="cost must be >= 0 ms and cost-every >= 1"):
        processed_at(spark, -1.0, 1)
