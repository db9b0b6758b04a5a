"""The protocols that rescale inside the running query on Spark (docs/rescaling.md, "SHARED_STATE on
Spark", "LEARNER on Spark", "HANDOFF on Spark"): the query pauses between two micro-batches at the
rescale channel's barrier, the driver reads the barrier batch's state from the checkpoint, and the
next batch carries the new routing to every router and the moved state to the workers that gain it.
LEARNER first warms the new owners up with a snapshot, without a pause, and moves only the lag at
the barrier. HANDOFF never pauses: round by round, the routers hold the units in flight while their
state moves. No restart, no `repartition`. Real broker, real Spark."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from bench.run.stream import run_stream
from bench.run.preflight import prepare
from tests.conftest import E2E_DATASET, E2E_FAST, EVERY_PHASE, e2e_options
from tests.killing import HANDOFF_BATCH
from tests.live_rescale_runs import IN_QUERY_INPUT, RESCALE_SCHEDULE
from tests.topology.test_rescale_stop_the_world import assert_completed_exactly, simulate_stop_the_world

pytestmark = [pytest.mark.integration, pytest.mark.spark]

LIMIT = IN_QUERY_INPUT["limit"]
PROTOCOLS = ("SHARED_STATE", "LEARNER", "HANDOFF")


@pytest.fixture(scope="module", params=PROTOCOLS)
def live(request, live_rescale_runs) -> dict:
    """VNODE 4 -> 6 workers at 4 s of a 40 s live replay, with each protocol (tests/live_rescale_runs.py)."""
    return live_rescale_runs[f"live-{request.param}"]


def test_the_query_pauses_between_two_batches_and_is_never_restarted(live):
    from bench.rescale.driver import checkpoint_partitions
    from datasets import get_dataset

    run = live
    assert run["status"] == "completed", run["error"]
    if run["rescale"]["protocol"] == "HANDOFF":
        pytest.skip("HANDOFF does not pause (its own test below)")
    assert all(v is not False for v in run["checks"].values()), run["checks"]
    assert run["exact"]["total_count"] == get_dataset(E2E_DATASET).key_stats(LIMIT).weight
    assert run["rescale"]["ownership_violations"] == 0
    (event,) = run["rescale"]["events"]
    # the barrier is the last batch before the pause; the very next batch switches
    assert event["switch_batch"] == event["barrier_batch"] + 1
    # the layout was sized for 6 workers from the first batch: nothing to repartition
    assert (event["partitions_before"], event["partitions_after"]) == (6, 6) and "repartition_batch" not in event
    assert checkpoint_partitions(Path(run["results"]) / "checkpoint" / "main") == 6
    assert (event["workers_before"], event["workers_after"]) == (4, 6)
    assert event["moved_keys"] == event["state_entries_moved"] > 0
    assert event["pause_ms"] > 0 and event["resumed_wall_ms"] == event["stop_wall_ms"] + event["pause_ms"]
    replayed = json.loads((Path(run["results"]) / "run.json").read_text())["dataset"]["replay"]
    assert event["stop_wall_ms"] < replayed["last_timestamp_ms"]  # the pause came while the input ran
    for window in ("before", "during", "after"):
        assert event[f"throughput_tps_{window}"] > 0, window
        assert event[f"latency_ms_p99_{window}"] > 0, window


def test_the_checkpoint_records_which_plane_wrote_each_operator_and_a_resume_on_another_is_refused(live, tmp_path):
    """The three live protocols route on the JVM grouping stage and keep the worker state in the JVM
    operator. A resume that would build the other grouping stage (a `--param` value only the Python
    stage takes, as a run of an earlier version's Python stage would need) is refused before Spark
    starts (`bench.run.preflight._check_resumable`)."""
    from dataclasses import replace

    from bench.run.preflight import RunError, _check_resumable
    from bench.topology.config import TopologyConfig
    from bench.topology.jvm_stage import written_planes

    protocol = live["rescale"]["protocol"]
    checkpoint = Path(live["results"]) / "checkpoint"
    assert live["data_plane"] == "jvm"
    assert written_planes(checkpoint / "main") == {"grouping": "jvm", "per_key": "jvm"}
    config = TopologyConfig(run_id=Path(live["results"]).name, topic="t", bootstrap_servers="127.0.0.1:1",
                            checkpoint_dir=checkpoint, results_dir=tmp_path, grouping="VNODE", dataset=E2E_DATASET,
                            rescale_protocol=protocol)
    _check_resumable(config)  # the same plane: resumes
    with pytest.raises(RunError, match="whose grouping stage was written by the jvm operator"):
        _check_resumable(replace(config, grouping_params={"vnodes": 256.0}))


def test_shared_state_moves_every_entry_at_the_barrier(live):
    (event,) = live["rescale"]["events"]
    if live["rescale"]["protocol"] != "SHARED_STATE":
        pytest.skip("SHARED_STATE's figures")
    assert event["transfer_records"] == event["moved_keys"]
    assert set(event["steps"]) == {"barrier_wait_ms", "savepoint_ms", "publish_ms"}


def test_the_learner_warms_up_without_a_pause_and_moves_the_lag_at_the_barrier(live):
    (event,) = live["rescale"]["events"]
    if live["rescale"]["protocol"] != "LEARNER":
        pytest.skip("LEARNER's figures")
    assert set(event["steps"]) == {"warm_up_ms", "barrier_wait_ms", "savepoint_ms", "publish_ms"}
    # the warm-up snapshot, read while the query ran; a later batch applied it, then the barrier came
    assert event["warm_up_batch"] < event["warmed_batch"] <= event["barrier_batch"]
    assert event["warm_up_entries"] > 0 and event["transfer_records"] == event["lag_entries"] <= event["moved_keys"]
    assert event["changelog_records"] == event["warm_up_entries"] + event["lag_entries"]


def test_handoff_holds_only_the_units_in_flight_round_by_round_without_a_pause(live):
    from datasets import get_dataset

    run = live
    if run["rescale"]["protocol"] != "HANDOFF":
        pytest.skip("HANDOFF's figures")
    assert run["status"] == "completed", run["error"]
    assert all(v is not False for v in run["checks"].values()), run["checks"]
    assert run["exact"]["total_count"] == get_dataset(E2E_DATASET).key_stats(LIMIT).weight
    assert run["rescale"]["ownership_violations"] == 0 and run["rescale"]["handoff_batch"] == HANDOFF_BATCH
    (event,) = run["rescale"]["events"]
    rounds = event["rounds"]
    assert event["pause_ms"] == 0 and event["steps"]["rounds"] == len(rounds) >= 2
    assert sorted(u for r in rounds for u in r) == sorted(set(u for r in rounds for u in r))
    assert len(rounds[-1]) <= HANDOFF_BATCH and event["moved_groups"] == sum(len(r) for r in rounds)
    # one step per round and one more; each read by its own batch, in order, after the state's batch
    steps = event["step_batches"]
    assert len(steps) == len(rounds) + 1 and steps == sorted(set(steps))
    assert event["scaleup_batch"] < steps[0] and event["switch_batch"] == steps[-1]
    assert event["moved_keys"] == event["state_entries_moved"] == event["transfer_records"] > 0
    assert len(event["steps"]["state_read_ms"]) == len(rounds)
    # tuples of the units in flight waited for their state, and were sent once it had moved
    assert event["held_tuples"] > 0
    assert 0 < event["hold_delay_ms_p50"] <= event["hold_delay_ms_p99"] <= event["hold_delay_ms_max"]
    assert event["rescale_ms"] > event["hold_delay_ms_max"]
    assert event["resumed_wall_ms"] == event["stop_wall_ms"] + event["rescale_ms"]
    for window in ("before", "during"):  # the hand-off may outlast the input: no batch with data after it
        assert event[f"throughput_tps_{window}"] > 0, window


def test_the_final_state_is_the_simulators_on_the_same_topic(stack, live, tmp_path, monkeypatch):
    from bench.__main__ import main as bench_main

    protocol = live["rescale"]["protocol"]
    monkeypatch.setattr("bench.results.record.RESULTS_DIR", tmp_path)
    assert bench_main([
        "simulate", "--from-topic", live["topic"], "--bootstrap-servers", stack.bootstrap_servers,
        "--dataset", E2E_DATASET, "--grouping", "VNODE", "--workers", str(E2E_FAST["workers"]),
        "--splitters", str(E2E_FAST["splitters"]), "--run-id", "sim-live", "--no-progress",
        "--rescale", RESCALE_SCHEDULE, "--protocol", protocol,
    ] + (["--handoff-batch", str(HANDOFF_BATCH)] if protocol == "HANDOFF" else [])) == 0
    simulated = json.loads((tmp_path / "sim-live" / "summary.json").read_text())
    state = pd.read_parquet(Path(live["results"]) / "state.parquet")
    pd.testing.assert_frame_equal(state, pd.read_parquet(tmp_path / "sim-live" / "state.parquet"),
                                  check_dtype=False)  # owners included
    assert set(state["worker"]) - set(range(E2E_FAST["workers"]))  # keys now at the added workers 4 and 5
    (event,), (sim_event,) = live["rescale"]["events"], simulated["rescale"]["events"]
    assert event["moved_groups"] == sim_event["moved_groups"] and event["groups"] == sim_event["groups"]


@pytest.fixture(scope="module")
def simulated_on_the_shared_topic(stack, input_topic, stw_schedule, tmp_path_factory):
    """protocol -> the simulator's record of `stw_schedule` over the shared topic."""
    folder = tmp_path_factory.mktemp("live-sim")
    return {p: simulate_stop_the_world(stack, input_topic, stw_schedule, folder / p, protocol=p) for p in PROTOCOLS}


@pytest.mark.parametrize("killed", [pytest.param("SHARED_STATE/requested", marks=EVERY_PHASE),
                                    "SHARED_STATE/savepoint",
                                    pytest.param("SHARED_STATE/published", marks=EVERY_PHASE),
                                    "LEARNER/warming"], indirect=True)
def test_a_driver_killed_in_the_middle_of_a_rescale_resumes_exactly(stack, spark, input_topic, stw_schedule,
                                                                  simulated_on_the_shared_topic, stream_runs,
                                                                  killed):
    """SIGKILL right after the driver asked for the barrier (the query may not have paused yet),
    after it read the barrier batch's state (the epoch not published: the restarted query must
    wait at the same barrier), after it published the epoch (the query goes on), or after LEARNER
    published its warm-up (no barrier yet). The same run id finishes the run exactly: totals, 0
    ownership violations, the simulator's final state, the killed attempt's barrier and switch
    batches, and no epoch rewritten."""
    protocol, phase, run_id, folder = killed.protocol, killed.phase, killed.run_id, killed.results_dir
    options = e2e_options(stack, folder, input_topic.name, "VNODE", run_id, rescale=stw_schedule,
                          protocol=protocol, max_offsets_per_trigger=300)
    (journal,) = json.loads((folder / run_id / "rescale.json").read_text())["events"]
    channel = folder / run_id / "checkpoint" / "rescale-channel"
    published = {p.name: p.read_text() for p in channel.glob("epoch-*.jsonl")}
    assert sorted(published) == {"requested": [], "savepoint": [], "published": ["epoch-1.jsonl"],
                                 "warming": ["epoch-1.jsonl"]}[phase]

    resumed = run_stream(prepare(options), spark=spark, log=lambda *_: None)
    assert resumed["status"] == "completed" and resumed["resumed"], resumed["error"]
    assert_completed_exactly(stack, resumed, input_topic.total)
    assert resumed["rescale"]["ownership_violations"] == 0
    (event,) = resumed["rescale"]["events"]
    assert event["switch_batch"] == event["barrier_batch"] + 1
    if phase in ("savepoint", "published"):
        assert (event["barrier_batch"], event["switch_batch"]) == (journal["barrier_batch"], journal["switch_batch"])
    for name, text in published.items():
        assert (channel / name).read_text() == text  # not written again
    state = pd.read_parquet(folder / run_id / "state.parquet")
    pd.testing.assert_frame_equal(state, simulated_on_the_shared_topic[protocol][1], check_dtype=False)
    plain = pd.read_parquet(Path(stream_runs["VNODE"]["results"]) / "state.parquet")
    cols = ["key", "count", "sum", "first_ts_ms", "last_ts_ms"]
    pd.testing.assert_frame_equal(state[cols], plain[cols], check_dtype=False)  # as without rescaling


@pytest.mark.parametrize("killed", ["HANDOFF/handing_over"], indirect=True)
def test_a_driver_killed_in_the_middle_of_a_hand_off_resumes_exactly(stack, spark, input_topic, stw_schedule,
                                                                    simulated_on_the_shared_topic, stream_runs,
                                                                    killed):
    """SIGKILL right after HANDOFF published its first step (SCALEUP, and the routers hold round 0:
    held tuples are in the grouping stage's state when the query dies with its driver). The same run
    id finishes the hand-off exactly: totals, 0 ownership violations, the simulator's final state,
    the first step not rewritten."""
    run_id, folder = killed.run_id, killed.results_dir
    options = e2e_options(stack, folder, input_topic.name, "VNODE", run_id, rescale=stw_schedule,
                          protocol="HANDOFF", handoff_batch=HANDOFF_BATCH, max_offsets_per_trigger=300)
    (journal,) = json.loads((folder / run_id / "rescale.json").read_text())["events"]
    assert journal["published_steps"] == 1 and len(journal["rounds"]) >= 2
    channel = folder / run_id / "checkpoint" / "rescale-channel"
    published = {p.name: p.read_text() for p in channel.glob("epoch-*.jsonl")}
    assert sorted(published) == ["epoch-1.jsonl"]

    resumed = run_stream(prepare(options), spark=spark, log=lambda *_: None)
    assert resumed["status"] == "completed" and resumed["resumed"], resumed["error"]
    assert_completed_exactly(stack, resumed, input_topic.total)
    assert resumed["rescale"]["ownership_violations"] == 0
    (event,) = resumed["rescale"]["events"]
    assert event["rounds"] == journal["rounds"] and event["scaleup_batch"] == journal["scaleup_batch"]
    assert len(event["step_batches"]) == len(event["rounds"]) + 1
    assert (channel / "epoch-1.jsonl").read_text() == published["epoch-1.jsonl"]  # not written again
    state = pd.read_parquet(folder / run_id / "state.parquet")
    pd.testing.assert_frame_equal(state, simulated_on_the_shared_topic["HANDOFF"][1], check_dtype=False)
    plain = pd.read_parquet(Path(stream_runs["VNODE"]["results"]) / "state.parquet")
    cols = ["key", "count", "sum", "first_ts_ms", "last_ts_ms"]
    pd.testing.assert_frame_equal(state[cols], plain[cols], check_dtype=False)  # as without rescaling
