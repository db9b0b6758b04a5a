"""The pure parts of a rescale on Spark: which entries move (bench.rescale.plan), the ownership
check (bench.rescale.ownership), the journal, the state-transfer records and their application,
and the grouping stage's switch at a batch."""

from __future__ import annotations

import json
import time

import pandas as pd
import pytest

from bench.rescale.journal import Journal
from bench.rescale.ownership import violations
from bench.rescale.plan import plan_move, routing_at
from bench.topology import state_transfer
from bench.topology.state_layout import slot_table

KEYS = [f"K{i:03d}" for i in range(60)]


def state_at(routing) -> pd.DataFrame:
    return pd.DataFrame({"key": KEYS, "worker": [routing.owner_of(k) for k in KEYS], "count": 2, "sum": 3,
                         "first_ts_ms": 10, "last_ts_ms": 20})


@pytest.mark.parametrize("grouping", ["KEY", "KEY_GROUP", "VNODE"])
def test_a_move_takes_every_key_whose_owner_changes_from_its_slot_to_the_new_owners(grouping):
    before, after = routing_at(grouping, 4, {}, []), routing_at(grouping, 4, {}, [6])
    move = plan_move(state_at(before), before, after, worker_space=6, partitions_before=2, partitions_after=2)
    moved = {k for k in KEYS if before.owner_of(k) != after.owner_of(k)}
    assert move.moved_keys == len(moved) > 0 and move.state_entries == len(KEYS)
    slots = slot_table(6, 2)
    assert sorted(k for keys in move.extracts.values() for k in keys) == sorted(moved)
    assert {e[0]: slot for slot, entries in move.installs.items() for e in entries} == \
        {k: slots[after.owner_of(k)] for k in moved}
    assert move.state_entries_relaid == 0


def test_a_new_physical_layout_moves_every_entry_whose_slot_changes():
    before, after = routing_at("VNODE", 4, {}, []), routing_at("VNODE", 4, {}, [6])
    move = plan_move(state_at(before), before, after, worker_space=6, partitions_before=2, partitions_after=6)
    old, new = slot_table(6, 2), slot_table(6, 6)
    expected = sum(1 for k in KEYS if old[before.owner_of(k)] != new[after.owner_of(k)])
    assert sum(len(v) for v in move.installs.values()) == expected
    assert move.state_entries_relaid == expected - move.moved_keys > 0


def test_state_at_a_worker_that_does_not_own_its_key_is_refused():
    before, after = routing_at("VNODE", 4, {}, []), routing_at("VNODE", 4, {}, [6])
    state = state_at(before)
    state.loc[0, "worker"] = (state.loc[0, "worker"] + 1) % 4
    with pytest.raises(ValueError, match="has state at worker"):
        plan_move(state, before, after, 6, 2, 2)


def test_the_ownership_check_sees_a_key_routed_to_its_new_owner_before_the_switch():
    before, after = routing_at("VNODE", 4, {}, []), routing_at("VNODE", 4, {}, [6])
    key = next(k for k in KEYS if before.owner_of(k) != after.owner_of(k))
    batches = {0: {"pairs": [[key, before.owner_of(key)]]}, 1: {"pairs": [[key, after.owner_of(key)]]},
               2: {"pairs": [[key, after.owner_of(key)]]}}
    assert violations(batches, [(2, after)], before) == [(1, after.owner_of(key), key)]
    assert violations(batches, [(1, after)], before) == []


def test_transfer_records_of_an_epoch_put_extracts_first():
    """What the worker-state operator does with them: tests/topology/test_worker_state.py."""
    recs = state_transfer.records(2, {7: ["a"]}, {7: [("b", 3, 4, 5, 6)]})
    assert [k for k, _ in recs] == ["2|7|extract|0", "2|7|install|0"]
    assert [json.loads(v) for _, v in recs] == [{"epoch": 2, "slot": 7, "chunk": 0, "extract": ["a"]},
                                                {"epoch": 2, "slot": 7, "chunk": 0, "install": [["b", 3, 4, 5, 6]]}]
    # the real-time query routes each record to its slot's worker
    assert {json.loads(v)["worker"] for _, v in state_transfer.records(2, {7: ["a"]}, {}, {7: 3})} == {3}


def test_a_learners_lag_merged_into_its_warm_up_copy_gives_the_entry():
    from bench.rescale.learner import lag_entry

    entry, copy = ("k", 10, 25, 100, 900), [6, 15, 100, 500]
    key, count, total, first, last = lag_entry(entry, copy)
    assert (key, copy[0] + count, copy[1] + total, min(copy[2], first), max(copy[3], last)) == entry
    assert lag_entry(entry, None) == entry


def test_records_are_chunked():
    installs = {1: [(f"k{i}", 1, 1, 1, 1) for i in range(state_transfer.CHUNK_ENTRIES + 1)]}
    assert [k for k, _ in state_transfer.records(1, {}, installs)] == ["1|1|install|0", "1|1|install|1"]


def test_the_journal_survives_a_new_driver(tmp_path):
    journal = Journal(tmp_path)
    journal.record(0, event="60s:12", target=12, phase="stopped")
    assert not journal.reached(0, "repartitioned") and journal.switches() == []
    journal.record(0, phase="repartitioned", switch_batch=7, repartition_batch=6)
    again = Journal(tmp_path)
    assert again.reached(0, "savepoint") and again.switches() == [(7, 12)] and again.offline_batches() == {6}


def _options(rescale, protocol="STOP_THE_WORLD", handoff_batch=1):
    from types import SimpleNamespace

    return SimpleNamespace(rescale=rescale, protocol=protocol, handoff_batch=handoff_batch)


def _config(tmp_path, grouping="VNODE", workers=10):
    from bench.topology.config import TopologyConfig

    return TopologyConfig(run_id="r", grouping=grouping, dataset="NYC_FLIGHTS", topic="t", bootstrap_servers="-",
                          checkpoint_dir=tmp_path / "cp", results_dir=tmp_path / "r", workers=workers)


def test_a_rescale_run_is_sized_for_its_largest_worker_count(tmp_path):
    from bench.rescale.setup import rescale_config

    config = rescale_config(_options("60s:12,90s:8"), _config(tmp_path), topic_complete=False)
    assert (config.max_parallelism, config.worker_space, config.transfers, config.switches) == (12, 12, True, ())
    assert config.partitions == config.aggregators  # N: no checkpoint yet


def test_a_shared_state_run_fixes_its_layout_for_the_max_parallelism(tmp_path):
    from bench.rescale.setup import rescale_config

    config = rescale_config(_options("60s:12,90s:8", "SHARED_STATE"), _config(tmp_path), topic_complete=False)
    assert (config.worker_space, config.partitions, config.live_rescale, config.transfers, config.switches) == \
        (12, 12, True, False, ())  # N = max(A 10, M 12) from the first batch: no repartition later


def test_a_rescale_run_the_jvm_stage_cannot_route_is_refused(tmp_path):
    """The Python grouping stage does not rescale: a rescale run with a parameter only it takes
    (not an integer) is refused before Spark starts."""
    from dataclasses import replace

    from bench.rescale.setup import rescale_config

    config = replace(_config(tmp_path), grouping_params={"vnodes": 64.0})
    with pytest.raises(ValueError, match="routes in the JVM grouping stage, where VNODE takes the integer parameters "
                                         "vnodes; got --param"):
        rescale_config(_options("60s:12", "HANDOFF"), config, topic_complete=False)


def test_the_channel_holds_the_query_at_a_barrier_until_the_epoch_is_published(tmp_path):
    """The source's `read` (called in the driver when the query asks for the latest offset, before
    it plans a batch) waits while an epoch is requested and not published, and gives the published
    records once, with the offset of the last epoch."""
    import threading

    from bench.topology import rescale_channel

    channel = rescale_channel.Channel(tmp_path)
    reader = rescale_channel.RescaleChannelSource({"folder": str(tmp_path)}).simpleStreamReader(None)
    rows, end = reader.read({"epoch": 0})
    assert (list(rows), end) == ([], {"epoch": 0})  # nothing requested: no wait
    channel.request(1)
    got = []
    waiting = threading.Thread(target=lambda: got.append(reader.read({"epoch": 0})), daemon=True)
    waiting.start()
    try:
        deadline = time.monotonic() + 10
        while channel.barrier_wall_ms(1) is None and time.monotonic() < deadline:
            time.sleep(0.01)
        assert channel.barrier_wall_ms(1) is not None and waiting.is_alive() and not got
        transfers = state_transfer.records(1, {0: ["a"]}, {4: [("a", 2, 3, 10, 20)]})
        assert channel.publish(1, transfers, switch=(1, 6)) == 3
        waiting.join(10)
    finally:
        channel.abort()  # the waiting thread ends whatever failed
    ((rows, end),) = got
    rows = list(rows)
    assert end == {"epoch": 1}
    assert [(e, slot) for e, slot, _ in rows] == [(1, -1), (1, 0), (1, 4)]
    assert json.loads(rows[0][2])["target"] == 6
    channel.publish(1, [], switch=(1, 8))  # a resumed driver does not rewrite a published epoch
    assert list(reader.readBetweenOffsets({"epoch": 0}, {"epoch": 1})) == rows  # a replayed batch
    rows, end = reader.read({"epoch": 1})
    assert (list(rows), end) == ([], {"epoch": 1})
    channel.publish(2, [])  # published without a request (a LEARNER warm-up): no barrier
    assert reader.read({"epoch": 1})[1] == {"epoch": 2} and channel.barrier_wall_ms(2) is None


def test_a_query_waiting_at_a_barrier_fails_when_the_driver_gives_up(tmp_path):
    from bench.topology import rescale_channel

    channel = rescale_channel.Channel(tmp_path)
    reader = rescale_channel.RescaleChannelSource({"folder": str(tmp_path)}).simpleStreamReader(None)
    channel.request(1)
    channel.abort()
    with pytest.raises(rescale_channel.RescaleAborted):
        reader.read({"epoch": 0})
    channel.reopen()  # a new driver attempt
    assert not (tmp_path / "abort").exists()


@pytest.mark.parametrize("grouping,protocol,batch,message", [
    ("DYNAMIC_KEY", "STOP_THE_WORLD", 1, "needs a routing that owns keys"),
    ("KEY", "HANDOFF", 1, "HANDOFF on Spark hands over key groups or vnodes"),
    ("VNODE", "HANDOFF", 0, "--handoff-batch must be an integer >= 1"),
    ("VNODE", "SHARED_STATE", 64, "--handoff-batch applies to HANDOFF only"),
    ("VNODE", "NOPE", 1, "unknown protocol"),
])
def test_a_rescale_spark_cannot_run_is_refused_before_it_starts(tmp_path, grouping, protocol, batch, message):
    from bench.rescale.setup import rescale_config

    with pytest.raises(ValueError, match=message):
        rescale_config(_options("60s:12", protocol, batch), _config(tmp_path, grouping), topic_complete=False)


def test_a_handoff_run_keeps_its_held_tuples_above_the_watermark(tmp_path):
    from dataclasses import replace

    from bench.rescale.handoff import HANDOFF_MIN_WATERMARK_DELAY_S
    from bench.rescale.setup import rescale_config

    config = rescale_config(_options("60s:12", "HANDOFF", 8), _config(tmp_path), topic_complete=False)
    assert config.live_rescale and config.watermark_delay_s == HANDOFF_MIN_WATERMARK_DELAY_S
    longer = replace(_config(tmp_path), watermark_delay_s=120)
    assert rescale_config(_options("60s:12", "HANDOFF"), longer, topic_complete=False).watermark_delay_s == 120
    # in real-time mode a tuple is held from a real-time batch's start until the next step's: three batches
    realtime = replace(_config(tmp_path), mode="realtime", realtime_batch_s=15)
    assert rescale_config(_options("60s:12", "HANDOFF"), realtime, topic_complete=False).watermark_delay_s == 45
    shared = rescale_config(_options("60s:12", "SHARED_STATE"), _config(tmp_path), topic_complete=False)
    assert shared.watermark_delay_s == _config(tmp_path).watermark_delay_s


def _checkpoint_with_offsets(folder, offsets: dict[int, list[str]], committed: list[int]):
    for batch, sources in offsets.items():
        (folder / "offsets").mkdir(parents=True, exist_ok=True)
        (folder / "offsets" / str(batch)).write_text("\n".join(["v1", '{"batchWatermarkMs":0}', *sources]))
    (folder / "commits").mkdir(parents=True, exist_ok=True)
    for batch in committed:
        (folder / "commits" / str(batch)).write_text("v1\n{}")
    return folder


def test_the_learner_knows_which_committed_batch_read_its_warm_up(tmp_path):
    from bench.rescale.learner import batch_reading

    kafka = '{"in":{"0":10}}'
    checkpoint = _checkpoint_with_offsets(tmp_path, {
        3: [kafka, '{"epoch": 0}', '{"epoch": 0}'],
        4: [kafka, '{"epoch": 1}', '{"epoch": 1}'],
        5: [kafka, '{"epoch": 1}', '{"epoch": 1}'],
    }, committed=[3])
    assert batch_reading(checkpoint, 1, after=2) is None  # planned, not committed: not caught up yet
    (tmp_path / "commits" / "4").write_text("v1\n{}")
    assert batch_reading(checkpoint, 1, after=2) == 4
    assert batch_reading(checkpoint, 2, after=2) is None


def _learner(tmp_path, workers=4, target=6):
    from bench.rescale.journal import LEARNER_PHASES
    from bench.rescale.learner import Learner
    from groupings.rescaling import parse_schedule

    config = _config(tmp_path, workers=workers)
    from dataclasses import replace

    config = replace(config, max_parallelism=target, state_partitions=target, rescale_protocol="LEARNER")
    return Learner(config, parse_schedule(f"1s:{target}"), Journal(tmp_path, LEARNER_PHASES))


def test_the_learners_switch_installs_only_the_lag_and_drops_every_moved_key(tmp_path):
    """The warm-up installed the moved entries of its snapshot; at the switch the old owners drop
    every moved key and the new owners get only the entries that changed since (or are new)."""
    learner = _learner(tmp_path)
    before, after = routing_at("VNODE", 4, {}, []), routing_at("VNODE", 4, {}, [6])
    *keys, new = [k for k in (f"k{i}" for i in range(400)) if before.owner_of(k) != after.owner_of(k)][:4]
    state = pd.DataFrame({"key": keys, "worker": [before.owner_of(k) for k in keys],
                          "count": [1, 2, 3], "sum": [1, 2, 3], "first_ts_ms": [10, 10, 10], "last_ts_ms": [10, 10, 10]})
    warm = plan_move(state, before, after, 6, 6, 6)
    learner.channel.publish(learner.warm_up_epoch(0), state_transfer.records(1, {}, warm.installs))
    later = state.copy()
    later.loc[1, ["count", "sum", "last_ts_ms"]] = [5, 9, 20]  # the old owner went on with key 1
    later = pd.concat([later, pd.DataFrame({"key": [new], "worker": [before.owner_of(new)], "count": [1],
                                            "sum": [1], "first_ts_ms": [30], "last_ts_ms": [30]})])
    # the warm-up copies are in the state read at the switch too, at the new owners
    copies = state.assign(worker=[after.owner_of(k) for k in keys])
    read = pd.concat([later, copies], ignore_index=True)
    held = learner._held(read, 0, before)
    assert len(held) == len(later)  # the copies are not moved from
    move = plan_move(held, before, after, 6, 6, 6)
    records, figures = learner._transfers(0, learner.switch_epoch(0), move)
    installed = {e[0] for _, v in records for e in json.loads(v).get("install", [])}
    extracted = {k for _, v in records for k in json.loads(v).get("extract", [])}
    assert installed == {keys[1], new}  # unchanged keys 0 and 2 are warm already; `new` has state since
    assert extracted == {*keys, new}
    assert (figures["lag_entries"], figures["changelog_records"]) == (2, 3 + 2)
    assert all(json.loads(v)["epoch"] == learner.switch_epoch(0) == 2 for _, v in records)


def test_a_run_resumed_after_its_last_event_summarises_it_on_the_input_clock(tmp_path, monkeypatch):
    """An attempt resumed after the schedule's last event (make nemesis: a SIGKILLed driver) never
    anchored the schedule's clock while it ran; its summary anchors it (the run ended on a
    TypeError before)."""
    from types import SimpleNamespace

    from bench.rescale import driver
    from bench.rescale.setup import rescale_config, rescale_summary
    from bench.rescale.stop_the_world import StopTheWorld
    from groupings.rescaling import parse_schedule

    config = rescale_config(_options("60s:12"), _config(tmp_path), topic_complete=False)
    journal = Journal(config.results_dir)
    journal.record(0, event="60s:12", target=12, phase="restarted", switch_batch=2, stop_wall_ms=1_500)
    monkeypatch.setattr(driver, "first_timestamp", lambda servers, topic: 1_000)
    batches = {b: {"batch_id": b, "start_ms": 1_000 * b, "end_ms": 1_000 * b + 900, "rows": 10, "tuples": [5, 5],
                   "loads": [5, 5], "pairs": [], "max_ts_ms": 61_000 + 1_000 * b} for b in range(4)}
    rescaler = StopTheWorld(config, parse_schedule("60s:12"), journal)
    assert rescaler.t_first_ms is None
    observer = SimpleNamespace(batches=batches, batch_details=lambda: batches, live_input=False)
    (event,) = rescale_summary(rescaler, observer, "STOP_THE_WORLD")["events"]
    assert event["done_ms"] == 62_000  # the switch batch's newest timestamp, from the input's first


def test_watermark_offsets_are_asked_again_while_the_partition_has_no_leader():
    """A NOT_LEADER_FOR_PARTITION (a new topic's partition on a busy broker) is asked again; any
    other error is raised at once."""
    from confluent_kafka import KafkaError, KafkaException, TopicPartition

    from bench.rescale.kafka_clock import watermark_offsets

    class Consumer:
        def __init__(self, errors):
            self.errors, self.calls = list(errors), 0

        def get_watermark_offsets(self, partition, timeout):
            self.calls += 1
            if self.errors:
                raise KafkaException(KafkaError(self.errors.pop(0)))
            return 0, 5

    leaderless = Consumer([KafkaError.NOT_LEADER_FOR_PARTITION, KafkaError.NOT_LEADER_FOR_PARTITION])
    assert watermark_offsets(leaderless, TopicPartition("t", 0), 5.0) == (0, 5) and leaderless.calls == 3
    with pytest.raises(KafkaException):
        watermark_offsets(Consumer([KafkaError.TOPIC_AUTHORIZATION_FAILED]), TopicPartition("t", 0), 5.0)


def _committed_batch(checkpoint, batch: int, state_offset: int, run_id: str) -> None:
    """A committed batch in a query checkpoint's logs, as Spark writes them: `offsets/<batch>` (the
    version, the batch's metadata, then one line per source) and `commits/<batch>`."""
    for folder in ("offsets", "commits"):
        (checkpoint / folder).mkdir(parents=True, exist_ok=True)
    sources = [{f"in.{run_id}": {"0": 600}}, {state_transfer.topic(run_id): {"0": state_offset}}]
    (checkpoint / "offsets" / str(batch)).write_text("\n".join(
        ["v1", json.dumps({"batchWatermarkMs": 0, "conf": {}})] + [json.dumps(s) for s in sources]))
    (checkpoint / "commits" / str(batch)).write_text('v1\n{"nextBatchWatermarkMs":0}')


def test_a_real_time_event_waits_for_a_committed_batch_that_read_the_previous_events_whole_transfer(tmp_path):
    """CI, 2026-12-07: a committed real-time batch after the restart had not read the previous event's
    state transfer yet (a loaded machine), and the next event's savepoint found a moved key at its
    old owner. The journal is read back from JSON, as a resumed driver reads it (partitions as
    strings)."""
    from types import SimpleNamespace

    from bench.rescale.stop_the_world_realtime import RealtimeStopTheWorld
    from groupings.rescaling import parse_schedule

    run_id, checkpoint = "r", tmp_path / "checkpoint" / "realtime"
    Journal(tmp_path).record(0, phase="restarted", target=6, query_barrier_batch=0, switch_batch=12,
                             transfer_ends={0: 10})
    driver = RealtimeStopTheWorld(config=SimpleNamespace(state_checkpoint=checkpoint, run_id=run_id),
                                  events=parse_schedule("8000ms:+4,+5,16000ms:-1"), journal=Journal(tmp_path),
                                  t_first_ms=1_000)
    observer = SimpleNamespace(batches={12: {"max_ts_ms": 1_000 + 17_000}})
    _committed_batch(checkpoint, 0, 0, run_id)
    assert not driver.due(observer)
    _committed_batch(checkpoint, 1, 4, run_id)  # the batch after the restart, the transfer partly read
    assert not driver.due(observer)
    _committed_batch(checkpoint, 2, 10, run_id)
    assert driver.due(observer)
