"""The splitter stage's task count (`bench.topology.splitter.in_slot_tasks`) on a real Spark session.

Its routing under a coalesced splitter stage is checked end to end by the exact `--from-topic`
cross-check (tests/simulate), whose input topic has more partitions than the session has slots.
"""

from __future__ import annotations

import pytest

from bench.topology.splitter import in_slot_tasks

pytestmark = pytest.mark.spark


def test_more_partitions_than_slots_are_read_in_one_task_per_slot(spark):
    slots = spark.sparkContext.defaultParallelism
    df = spark.range(0, 1000, numPartitions=slots * 2 + 1)
    coalesced = in_slot_tasks(df)
    assert coalesced.rdd.getNumPartitions() == slots
    assert sorted(r.id for r in coalesced.collect()) == list(range(1000))


def test_fewer_partitions_than_slots_are_left_as_they_are(spark):
    df = spark.range(0, 10, numPartitions=1)
    assert in_slot_tasks(df).rdd.getNumPartitions() == 1
