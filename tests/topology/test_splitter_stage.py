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


LONG_KEY_CASES = [
    None,  # parsed NULL: a record the dataset's rule rejected
    [],
    [("abc", 1)],
    [("a" * 9, 1)],  # 9 bytes: longer than 8
    [("é" * 4, 1)],  # 8 bytes in 4 characters: not longer
    [("é" * 5, 1)],  # 10 bytes
    [(None, 1)],
    [("abc", 1), ("defgh", 2)],
    [("abc", 1), ("a" * 9, 2)],
    [(None, 1), ("abc", 2)],
    [(None, 1), ("a" * 9, 2)],
]


def test_the_long_key_check_equals_exists_on_every_kind_of_record(spark):
    """`long_key` (a generated expression for one-tuple records) gives what `exists` gives, NULLs
    included, for records of zero, one and two tuples."""
    from bench.topology.splitter import long_key

    df = spark.createDataFrame([(i, v) for i, v in enumerate(LONG_KEY_CASES)],
                               "i int, parsed array<struct<key: string, count: bigint>>")
    rows = df.selectExpr("i", f"{long_key(8)} AS fast",
                         "exists(parsed, t -> octet_length(t.key) > 8) AS reference").orderBy("i").collect()
    assert [(r.fast, r.reference) for r in rows if r.fast != r.reference] == []
    assert [r.fast for r in rows] == [None, False, False, True, False, True, None, False, True, None, True]
