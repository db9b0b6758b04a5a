"""The workers' per-key state (bench.topology.worker_state) and its physical layout
(bench.topology.state_layout): the arithmetic on plain values, the hash against Spark's own."""

from __future__ import annotations

import numpy as np
import pytest

from bench.topology.state_layout import slot_table, spark_hash_int, state_partition
from bench.topology.worker_state import batch_partials, merge


@pytest.mark.parametrize("workers,partitions", [(1, 1), (4, 2), (10, 10), (12, 10), (12, 16), (256, 12)])
def test_each_worker_gets_a_distinct_slot_in_its_partition(workers, partitions):
    slots = slot_table(workers, partitions)
    assert len(set(slots)) == workers and min(slots) >= 0
    assert [state_partition(s, partitions) for s in slots] == [w % partitions for w in range(workers)]


def test_slot_table_refuses_an_empty_layout():
    with pytest.raises(ValueError, match="workers >= 1 and partitions >= 1"):
        slot_table(0, 4)


def test_batch_partials_and_merge_give_count_sum_first_last():
    partials = batch_partials(np.array(["a", "b", "a"], dtype=object), np.array([1, 5, 2]), np.array([30, 10, 20]))
    assert partials.loc["a"].tolist() == [2, 3, 20, 30] and partials.loc["b"].tolist() == [1, 5, 10, 10]
    assert merge(None, (2, 3, 20, 30)) == (2, 3, 20, 30)
    assert merge((4, 9, 5, 25), (2, 3, 20, 30)) == (6, 12, 5, 30)


@pytest.mark.spark
def test_spark_hash_int_is_sparks_murmur3(spark):
    values = [0, 1, -1, 7, 42, 123_456, 2**31 - 1, -(2**31)]
    rows = spark.createDataFrame([(v,) for v in values], "v int").selectExpr("v", "hash(v) AS h").collect()
    assert {r["v"]: r["h"] for r in rows} == {v: spark_hash_int(v) for v in values}
    # and HashPartitioning agrees: a slot's rows land in the partition state_partition gives
    slots = slot_table(6, 4)
    placed = (spark.createDataFrame([(s,) for s in slots], "slot int").repartition(4, "slot")
              .selectExpr("slot", "spark_partition_id() AS p").collect())
    assert {r["slot"]: r["p"] for r in placed} == {s: state_partition(s, 4) for s in slots}
