"""The workers' per-key state (bench.topology.worker_state, `WorkerState.java`) and its physical
layout (bench.topology.state_layout): the arithmetic on plain values, the hash against Spark's own,
the operator on a streaming query of files read back with Spark's state data source."""

from __future__ import annotations

import json

import pytest

from bench.topology.session import session_settings
from bench.topology.state_layout import slot_table, spark_hash_int, state_partition


@pytest.mark.parametrize("workers,partitions", [(1, 1), (4, 2), (10, 10), (12, 10), (12, 16), (256, 12)])
def test_each_worker_gets_a_distinct_slot_in_its_partition(workers, partitions):
    slots = slot_table(workers, partitions)
    assert len(set(slots)) == workers and min(slots) >= 0
    assert [state_partition(s, partitions) for s in slots] == [w % partitions for w in range(workers)]


def test_slot_table_refuses_an_empty_layout():
    with pytest.raises(ValueError, match="workers >= 1 and partitions >= 1"):
        slot_table(0, 4)


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


def _batch(spark, folder, name, rows, schema):
    """One file of `rows` in the streaming source's folder: one batch of an availableNow query."""
    staged = folder.parent / f"staged-{name}"
    spark.createDataFrame(rows, schema).coalesce(1).write.parquet(str(staged))
    folder.mkdir(exist_ok=True)
    for part in staged.glob("part-*.parquet"):
        part.rename(folder / f"{name}-{part.name}")


@pytest.mark.spark
def test_the_operator_merges_tuples_and_applies_transfers_once(spark, tmp_path):
    from datetime import datetime, timezone

    from bench.topology.state_transfer import records
    from bench.topology.worker_state import input_schema, keep_state, read_final_state

    def at(ms):
        return datetime.fromtimestamp(ms / 1000, timezone.utc)

    schema = input_schema(spark)  # WorkerState.INPUT, read from the JVM
    workers = partitions = 2
    slots = slot_table(workers, partitions)
    tuples_dir, transfers_dir = tmp_path / "tuples", tmp_path / "transfers"
    tuples_schema = "event_ts timestamp, worker int, key string, count long"
    checkpoint = str(tmp_path / "checkpoint")

    def run():
        tuples = spark.readStream.schema(tuples_schema).parquet(str(tuples_dir))
        transfers = spark.readStream.schema(schema).parquet(str(transfers_dir))
        out = keep_state(tuples.withWatermark("event_ts", "1 second"), workers, partitions, transfers)
        # N state partitions, whatever an earlier test of the session left set
        with session_settings(spark, {"spark.sql.shuffle.partitions": str(partitions)}):
            query = (out.writeStream.format("noop").option("checkpointLocation", checkpoint)
                     .trigger(availableNow=True).start())
        query.awaitTermination()
        return read_final_state(spark, checkpoint, {slot: w for w, slot in enumerate(slots)})

    def transfer_rows(epoch, extracts, installs):
        return [(slot, -1, None, None, None, value, None) for _, value in records(epoch, extracts, installs)
                for slot in [json.loads(value)["slot"]]]

    _batch(spark, tuples_dir, "b0", [(at(1000), 0, "a", 2), (at(3000), 0, "a", 5), (at(2000), 1, "b", 1)],
           tuples_schema)
    _batch(spark, transfers_dir, "t0", [], schema)
    first = run()
    assert first.values.tolist() == [["a", 0, 2, 7, 1000, 3000], ["b", 1, 1, 1, 2000, 2000]]

    # epoch 1 moves "a" from worker 0 to worker 1; the next tuple of "a" merges into the moved entry
    _batch(spark, transfers_dir, "t1", transfer_rows(1, {slots[0]: ["a"]}, {slots[1]: [("a", 2, 7, 1000, 3000)]}),
           schema)
    _batch(spark, tuples_dir, "b1", [(at(4000), 1, "a", 1)], tuples_schema)
    moved = run()
    assert moved.values.tolist() == [["a", 1, 3, 8, 1000, 4000], ["b", 1, 1, 1, 2000, 2000]]

    # epoch 1's records read again (a driver that wrote them twice) change nothing
    _batch(spark, transfers_dir, "t2", transfer_rows(1, {slots[0]: ["a"]}, {slots[1]: [("a", 2, 7, 1000, 3000)]}),
           schema)
    assert run().values.tolist() == moved.values.tolist()
