"""`bench.topology.python_workers.freeze_after_warm_up` in real PySpark workers and in the driver."""

from __future__ import annotations

import gc

import pytest

from bench.topology.python_workers import freeze_after_warm_up


def test_outside_a_spark_task_nothing_is_frozen():
    before = gc.get_freeze_count()
    assert freeze_after_warm_up("driver") is False
    assert gc.get_freeze_count() == before


@pytest.mark.spark
def test_a_worker_process_freezes_once_per_tag(spark):
    def probe(frames):
        import gc as worker_gc

        import pandas as pd

        from bench.topology.python_workers import freeze_after_warm_up as freeze

        for frame in frames:
            first, again, other = freeze("probe"), freeze("probe"), freeze("probe-other")
            yield pd.DataFrame({"first": [first], "again": [again], "other": [other],
                                "frozen": [worker_gc.get_freeze_count()], "left": [len(worker_gc.get_objects())]})

    rows = spark.range(1, numPartitions=1).mapInPandas(
        probe, "first boolean, again boolean, other boolean, frozen long, left long").collect()
    row = rows[0]
    # A reused worker may have frozen "probe" in an earlier run of this test: then no call freezes.
    assert (row["first"], row["again"], row["other"]) in {(True, False, True), (False, False, False)}
    assert row["frozen"] > 10_000  # pandas, pyarrow and pyspark's objects went to the permanent generation
    assert row["left"] < row["frozen"] / 10  # what a collection still walks
