"""Pure helpers of the topology: routing order and clock, cost rule, config, Kafka bookkeeping."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from bench.run import preflight
from bench.run.input import consumed
from bench.run.options import RunOptions
from bench.run.preflight import RunError, default_topic, prepare
from bench.topology.config import TopologyConfig
from bench.results.batches import timestamps_ms
from bench.topology.grouping_stage import clock_ms, pack, route_batch, routing_order, unpack
from bench.topology.session import FILE_SYSTEM_CHECKPOINT_MANAGER, LOCAL_FILE_SYSTEM, ROCKSDB_PROVIDER, session_conf
from bench.topology.sink import aggregate_messages
from bench.topology.spout import batch_offsets
from groupings import GROUPINGS
from producers import check_broker


def rows(n: int, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    keys = rng.choice(["a", "b", "c", "d", "Turkey"], size=n, p=[0.1, 0.1, 0.1, 0.1, 0.6])
    return pd.DataFrame({
        "partition": np.zeros(n, dtype=np.int32), "offset": np.arange(n, dtype=np.int64),
        "idx": np.zeros(n, dtype=np.int32),
        "event_ms": 1_700_000_000_000 + 37 * np.arange(n, dtype=np.int64),
        "key": keys, "count": np.ones(n, dtype=np.int64),
    })


@pytest.mark.parametrize("grouping", GROUPINGS)
def test_route_batch_equals_sequential_choose_whatever_the_batches_and_row_order(grouping):
    from groupings import create_grouping

    data = rows(3000)
    ts = data["event_ms"].to_numpy()
    reference = create_grouping(grouping, 5, start_ms=int(ts[0]))
    expected = [reference.choose(k, int(t)) for k, t in zip(data["key"], ts)]

    state, got = None, []
    for chunk in np.array_split(np.arange(len(data)), [700, 701, 2000]):
        shuffled = data.iloc[chunk].sample(frac=1.0, random_state=1)  # a shuffle does not keep order
        out, state = route_batch(state, shuffled, grouping=grouping, workers=5, params={}, clock="kafka",
                                 routed_column="routed")
        got.extend(out["worker"].tolist())
    assert got == expected
    assert state[2] == len(data)
    assert timestamps_ms(out["event_ts"]).tolist() == sorted(ts[chunk].tolist())


def test_routing_order_is_none_for_tuples_in_order_and_sorts_the_others():
    partition = np.array([0, 0, 0, 1, 1], dtype=np.int32)
    offset = np.array([5, 6, 6, 0, 9], dtype=np.int64)
    idx = np.array([0, 0, 1, 0, 0], dtype=np.int32)
    assert routing_order(partition, offset, idx) is None
    assert routing_order(partition[:1], offset[:1], idx[:1]) is None
    rng = np.random.default_rng(3)
    for _ in range(20):
        perm = rng.permutation(len(offset))
        if (perm == np.arange(len(offset))).all():
            continue
        order = routing_order(partition[perm], offset[perm], idx[perm])
        assert order is not None and (perm[order] == np.arange(len(offset))).all()
    # Equal (partition, offset, idx) twice is not "in order": a stable sort keeps them as they are.
    assert routing_order(np.zeros(2, np.int32), np.zeros(2, np.int64), np.zeros(2, np.int32)).tolist() == [0, 1]


def test_route_batch_puts_what_it_routed_on_the_first_row():
    data = rows(500).assign(count=np.arange(500, dtype=np.int64) % 3 + 1)
    out, _ = route_batch(None, data, grouping="PARTIAL_KEY", workers=4, params={}, clock="kafka", routed_column="routed")
    summary = json.loads(out["routed"].iloc[0])
    assert summary["loads"] == out.groupby("worker")["count"].sum().reindex(range(4), fill_value=0).tolist()
    assert summary["tuples"] == np.bincount(out["worker"], minlength=4).tolist()
    assert summary["pairs"] == [list(p) for p in sorted(set(zip(out["worker"].tolist(), out["key"].tolist())))]
    assert out["routed"].iloc[1:].isna().all()


def test_pack_then_unpack_gives_back_every_tuple_of_every_splitter_and_partition():
    import pyarrow as pa

    data = rows(1000)
    data["partition"] = np.arange(1000, dtype=np.int32) % 3
    data["splitter"] = (data["partition"] % 2).astype(np.int32)
    tuples = data.assign(event_ts=pd.to_datetime(data["event_ms"], unit="ms", utc=True)).drop(columns="event_ms")
    batches = pa.Table.from_pandas(tuples, preserve_index=False).to_batches(max_chunksize=128)

    packed = pa.Table.from_batches(list(pack(iter(batches)))).to_pandas()
    assert sorted(set(zip(packed["splitter"], packed["partition"]))) == [(0, 0), (0, 2), (1, 1)]
    assert packed["offset_list"].map(len).max() <= 128  # one row per (splitter, partition) and Arrow batch
    for splitter, group in packed.groupby("splitter"):
        got = unpack(group).sort_values(["partition", "offset"], ignore_index=True)
        want = data[data["splitter"] == splitter].drop(columns="splitter").sort_values(["partition", "offset"],
                                                                                       ignore_index=True)
        pd.testing.assert_frame_equal(got[want.columns], want, check_dtype=False)
    assert list(pack(iter([]))) == []


def test_kafka_clock_is_monotone_and_resumes_from_state():
    assert clock_ms(np.array([5, 3, 9, 7]), None, "kafka", 0).tolist() == [5, 5, 9, 9]
    assert clock_ms(np.array([5, 3]), 8, "kafka", 0).tolist() == [8, 8]
    assert clock_ms(np.array([5, 3]), None, "processing", 42).tolist() == [42, 42]


def test_config_validation_names_the_option(tmp_path):
    base = dict(run_id="r", grouping="KEY", dataset="D", topic="t", bootstrap_servers="b",
                checkpoint_dir=tmp_path, results_dir=tmp_path)
    TopologyConfig(**base).validate()
    with pytest.raises(ValueError, match="--workers"):
        TopologyConfig(**base, workers=0).validate()
    with pytest.raises(ValueError, match="multiple of --worker-window-s"):
        TopologyConfig(**base, worker_window_s=15, aggregator_window_s=50).validate()
    with pytest.raises(ValueError, match="--grouping-clock"):
        TopologyConfig(**base, grouping_clock="wall").validate()
    assert TopologyConfig(**base).to_dict()["topics"]["dlq"] == "r.dlq"


def test_a_live_rescale_keeps_a_minute_of_real_time_batches_for_its_state_reads(tmp_path):
    from bench.topology.realtime import REALTIME_RETENTION, realtime_retention

    base = dict(run_id="r", grouping="KEY_GROUP", dataset="D", topic="t", bootstrap_servers="b",
                checkpoint_dir=tmp_path, results_dir=tmp_path, mode="realtime")
    kept = "spark.sql.streaming.minBatchesToRetain"
    assert realtime_retention(TopologyConfig(**base, realtime_batch_s=5)) == REALTIME_RETENTION
    for protocol in ("HANDOFF", "SHARED_STATE", "LEARNER"):
        live = realtime_retention(TopologyConfig(**base, realtime_batch_s=5, rescale_protocol=protocol))
        assert live[kept] == "13" and live.items() >= {k: v for k, v in REALTIME_RETENTION.items() if k != kept}.items()
    assert realtime_retention(TopologyConfig(**base, realtime_batch_s=300, rescale_protocol="HANDOFF"))[kept] == "2"
    assert realtime_retention(TopologyConfig(**base, realtime_batch_s=30, rescale_protocol="HANDOFF"))[kept] == "3"


def test_session_conf_sets_rocksdb_and_keeps_the_master():
    conf = session_conf("spark://h:7077", 7, [Path("/x/a.jar")])
    assert conf["spark.master"] == "spark://h:7077"
    assert conf["spark.sql.streaming.stateStore.providerClass"] == ROCKSDB_PROVIDER
    assert conf["spark.sql.streaming.checkpointFileManagerClass"] == FILE_SYSTEM_CHECKPOINT_MANAGER
    assert conf["spark.sql.shuffle.partitions"] == "7" and conf["spark.jars"] == "/x/a.jar"
    assert conf["spark.driver.memory"] == "4g" and conf["spark.driver.extraJavaOptions"] == "-XX:+UseParallelGC -Xms4g"
    assert session_conf("local[2]", 1, extra={"spark.driver.memory": "8g"})["spark.driver.memory"] == "8g"
    # The ContextCleaner's full collection every 5 minutes, not Spark's 30: a long run's steady state.
    assert conf["spark.cleaner.periodicGC.interval"] == "5min"
    # The status store keeps 100 of each kind of finished work, not Spark's 1,000.
    assert (conf["spark.ui.retainedJobs"], conf["spark.ui.retainedStages"], conf["spark.sql.ui.retainedExecutions"]) == \
        ("100", "100", "100")


def test_the_local_file_system_is_set_for_masters_on_this_machine_only():
    stage = [Path("/x/stage.jar"), Path("/x/groupings.jar")]
    for master in ("local[2]", "local[*]", "local-cluster[2,1,1024]"):
        conf = session_conf(master, 2, stage, stage_jars=stage)
        assert conf["spark.hadoop.fs.file.impl"] == LOCAL_FILE_SYSTEM
        assert conf["spark.driver.extraClassPath"] == conf["spark.executor.extraClassPath"] == \
            "/x/stage.jar:/x/groupings.jar"
    for master, jars in (("spark://h:7077", stage), ("yarn", stage), ("local[2]", None)):
        conf = session_conf(master, 2, jars, stage_jars=jars)
        assert "spark.hadoop.fs.file.impl" not in conf and "spark.driver.extraClassPath" not in conf


def test_batch_offsets_read_the_progress_json():
    progress = {"sources": [{"startOffset": None,
                             "endOffset": json.dumps({"in": {"0": 5, "1": 7}, "ctl": {"0": 1}})}]}
    assert batch_offsets(progress, "in") == {0: 5, 1: 7} and batch_offsets(progress, "in", "startOffset") == {}
    assert batch_offsets({"sources": [{"startOffset": {"in": {"0": 2}}}]}, "in", "startOffset") == {0: 2}
    assert consumed(progress, "in", {0: 5, 1: 7}) and not consumed(progress, "in", {0: 6, 1: 7})
    assert consumed(progress, "in", {0: 0, 1: 7, 2: 0})


def test_aggregate_messages_are_keyed_by_window_and_key():
    frame = pd.DataFrame({"window_start": pd.to_datetime([60_000], unit="ms"), "window_end": pd.to_datetime([120_000], unit="ms"),
                          "key": ["k"], "count": [3], "tuples": [2], "first_ts": pd.to_datetime([61_000], unit="ms"),
                          "last_ts": pd.to_datetime([62_000], unit="ms")})
    [(key, value)] = aggregate_messages(frame, "r", 4, 99)
    assert key == b"60000|k"
    assert json.loads(value)["count"] == 3 and json.loads(value)["batch_id"] == 4


def test_default_topic_is_stable_and_legal():
    o = RunOptions(grouping="KEY", dataset="NYC_FLIGHTS", limit=1000, dataset_params={"key": "origin"})
    assert default_topic(o, 10) == "in.nyc_flights.key-origin.n1000.rmax.p10"


@pytest.mark.parametrize("change, message", [
    ({"grouping": "NOPE"}, "unknown grouping"),
    ({"dataset": "NOPE"}, "unknown dataset"),
    ({"dataset_params": {"colour": 1}}, "unknown parameter"),
    ({"limit": 0}, "--limit"),
    ({"workers": 0}, "num_workers|workers"),
])
def test_bad_options_fail_before_spark(change, message):
    options = RunOptions(**{"grouping": "KEY", "dataset": "NYC_FLIGHTS", "bootstrap_servers": "127.0.0.1:1", **change})
    with pytest.raises(RunError, match=message):
        prepare(options, ensure_stack=False)


def test_unreachable_broker_is_a_clear_error(monkeypatch):
    # the run waits 15 s for the broker; 1 s gives the same error
    monkeypatch.setattr(preflight, "check_broker", lambda bootstrap, timeout_s: check_broker(bootstrap, timeout_s=1))
    with pytest.raises(RunError, match="did not answer"):
        prepare(RunOptions(grouping="KEY", dataset="NYC_FLIGHTS", bootstrap_servers="127.0.0.1:1"), ensure_stack=False)


def test_batches_committed_but_never_seen_by_the_observer_are_listed(tmp_path):
    from types import SimpleNamespace

    from bench.run.summary import missed_batches

    commits = tmp_path / "main" / "commits"
    commits.mkdir(parents=True)
    for name in ("0", "1", "2", ".2.crc", "3"):
        (commits / name).write_text("v1")
    config = SimpleNamespace(checkpoint_dir=tmp_path, results_dir=tmp_path, realtime=False)
    assert missed_batches(config, SimpleNamespace(batches={0: {}, 1: {}, 3: {}})) == [2]
    assert missed_batches(config, SimpleNamespace(batches={0: {}, 1: {}, 2: {}, 3: {}, 4: {}})) == []
    assert missed_batches(SimpleNamespace(checkpoint_dir=tmp_path / "none", results_dir=tmp_path / "none",
                                          realtime=False), SimpleNamespace(batches={})) == []


def test_a_missed_batch_older_than_the_checkpoints_commits_is_found_by_its_sink_file(tmp_path):
    """Spark keeps its last 100 commits; the sink's file of every batch stays (make nemesis: a
    STOP_THE_WORLD stop lost batch 242's progress, and by the run's end the commits began at 370)."""
    from types import SimpleNamespace

    from bench.run.summary import missed_batches
    from bench.topology.sink import batch_file

    commits = tmp_path / "main" / "commits"
    commits.mkdir(parents=True)
    for name in ("370", "371"):
        (commits / name).write_text("v1")
    for batch_id in (241, 242, 244, 370, 371):  # 243: Spark's repartition wrote it (offline)
        batch_file(tmp_path / "aggregates", batch_id).parent.mkdir(parents=True, exist_ok=True)
        batch_file(tmp_path / "aggregates", batch_id).write_bytes(b"")
    seen = SimpleNamespace(batches={241: {}, 244: {}, 370: {}, 371: {}})
    config = SimpleNamespace(checkpoint_dir=tmp_path, results_dir=tmp_path, realtime=False)
    assert missed_batches(config, seen, offline={243}) == [242]
    assert missed_batches(SimpleNamespace(checkpoint_dir=tmp_path, results_dir=tmp_path, realtime=True), seen) == []


def test_a_resumed_query_waiting_for_data_is_ready_and_a_fresh_one_waits_for_its_first_batch():
    # make nemesis seed 2 (2026-12-02): the resumed query had committed its first, empty batch and
    # its topic was empty; Spark runs its next batch only for new input, which the replay, waiting
    # for that batch, never sent.
    from types import SimpleNamespace

    from bench.run.preflight import RunError
    from bench.run.progress import WAITING_FOR_DATA, wait_first_batch

    idle = SimpleNamespace(main=SimpleNamespace(status={"message": WAITING_FOR_DATA}), exception=lambda: None)
    no_batch = SimpleNamespace(latest=None)
    wait_first_batch(idle, no_batch, timeout_s=5, resumed=True)  # returns at once
    with pytest.raises(RunError, match="ran no micro-batch within"):
        wait_first_batch(idle, no_batch, timeout_s=0.3)  # a fresh query runs its first batch anyway
    wait_first_batch(idle, SimpleNamespace(latest={"batchId": 0}), timeout_s=0.3)
