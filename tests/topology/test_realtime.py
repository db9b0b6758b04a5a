"""Real-time mode end to end against the real stack and Spark's Real-Time Mode: every grouping over the
session's shared topic, a live run's latency and live figures, a driver SIGKILLed mid-run and
resumed with its run id (the runs: tests/realtime_runs.py, a child process with its own Spark), and
what a real-time run refuses before Spark starts."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pandas as pd
import pytest

from bench.__main__ import main as bench_main
from bench.run.options import RunOptions
from bench.run.preflight import RunError, prepare
from bench.topology.sink import read_aggregates
from datasets import get_dataset
from groupings import GROUPINGS
from tests.conftest import E2E_FAST, E2E_MALFORMED, EVERY_PHASE
from tests.topology.test_e2e import influx_count, totals_by_key

pytestmark = [pytest.mark.integration]

CHAOS_ONLY = pytest.mark.skipif(
    os.environ.get("BENCH_CHAOS") != "1",
    reason="LEARNER in real-time mode, whose switch is SHARED_STATE's: run with make chaos (BENCH_CHAOS=1)")
"""Marks the real-time LEARNER run, which `make test` leaves out to stay within its budget (the
real-time runs are the first of the tests' background chain; tests/realtime_runs.py CHAOS_ONLY)."""


@pytest.mark.parametrize("grouping", GROUPINGS)
def test_every_grouping_runs_in_real_time_with_exact_totals(stack, realtime_runs, input_topic, grouping):
    summary = realtime_runs[f"realtime-{grouping}"]
    run_id = Path(summary["results"]).name
    assert summary["status"] == "completed", summary["error"]
    assert summary["execution_mode"] == "realtime" and summary["data_plane"] == "jvm"
    assert all(v is not False for v in summary["checks"].values()), summary["checks"]
    # Every valid tuple is in <run>.aggregates once (last value per window|key), though the real-time
    # query's Kafka sink writes at least once.
    aggregates = read_aggregates(stack.bootstrap_servers, f"{run_id}.aggregates")
    assert totals_by_key(aggregates) == input_topic.weights
    assert summary["exact"]["total_count"] == input_topic.total == summary["reference"]["total_count"]
    # The input audit counted the records and wrote the malformed ones as dead letters.
    assert (summary["records"], summary["malformed"], summary["dead_letters"]) == \
        (2000 + len(E2E_MALFORMED), len(E2E_MALFORMED), len(E2E_MALFORMED))
    assert summary["realtime"]["audit"]["weight"] == input_topic.total
    assert len(read_aggregates(stack.bootstrap_servers, f"{run_id}.dlq")) == len(E2E_MALFORMED)
    assert influx_count(stack, run_id) >= 1


def test_the_real_time_and_micro_batch_runs_route_alike_and_keep_the_same_worker_state(realtime_runs, stream_runs):
    for grouping in GROUPINGS:
        realtime, micro = realtime_runs[f"realtime-{grouping}"], stream_runs[grouping]
        assert (realtime["exact"]["worker_loads"], realtime["exact"]["pairs"]) == \
            (micro["exact"]["worker_loads"], micro["exact"]["pairs"]), grouping
        # Both keep every worker's per-key state (--worker-state); the real-time run's is read from a
        # checkpoint of Real-Time Mode's format 2 (bench.topology.worker_state.checkpoint_format).
        kept = {name: pd.read_parquet(Path(run["results"]) / "state.parquet") for name, run in
                (("realtime", realtime), ("microbatch", micro))}
        assert len(kept["realtime"]) > 0 and kept["realtime"]["count"].sum() == 2000, grouping
        pd.testing.assert_frame_equal(kept["realtime"], kept["microbatch"], obj=grouping)


def test_a_live_real_time_run_reports_each_tuples_latency_while_it_runs(stack, realtime_runs):
    live = realtime_runs["realtime-live"]
    assert live["status"] == "completed", live["error"]
    assert live["input"]["mode"] == "live" and live["execution_mode"] == "realtime"
    latency = live["latency"]
    # Each tuple's latency is counted once, from the first partial update that carries it.
    assert latency["latency_tuples"] == live["exact"]["total_count"] == 2000
    assert 0 < latency["latency_p50_ms"] <= latency["latency_p99_ms"] <= latency["latency_p999_ms"] \
        <= latency["latency_max_ms"]
    assert latency["latency_p99_ms"] < live["window_latency"]["window_latency_p99_ms"]
    # The figures reached the run record and InfluxDB while the input was still coming in.
    ticks = pd.read_parquet(Path(live["results"]) / "metrics.parquet")
    during = ticks[(ticks["total_count"] > 0) & (ticks["total_count"] < 2000)]
    assert len(during) >= 1 and during["latency_p99_ms"].notna().all(), ticks[["tick", "total_count"]]
    assert influx_count(stack, Path(live["results"]).name) == ticks["std_dev"].notna().sum() >= 2


def test_a_killed_real_time_driver_resumes_with_exact_totals(stack, realtime_runs, tmp_path):
    summary = realtime_runs["realtime-killed"]
    results = Path(summary["results"])
    killed = json.loads((results / "killed.json").read_text())
    assert killed["killed_after_batches"] >= 2 and killed["realtime_commits"] >= 2, killed
    assert summary["status"] == "completed" and summary["resumed"], summary["error"]
    assert len(summary["attempts"]) == 2
    assert all(v is not False for v in summary["checks"].values()), summary["checks"]
    dataset = get_dataset("NYC_FLIGHTS")
    stats = dataset.key_stats(3000)
    aggregates = read_aggregates(stack.bootstrap_servers, f"{results.name}.aggregates")
    assert totals_by_key(aggregates) == dict(stats.weights)
    assert summary["exact"]["total_count"] == stats.weight
    # The aggregator's batches after a real-time batch ended carry the real-time query's state stores.
    journal = [json.loads(line) for line in (results / "observer" / "progress.jsonl").read_text().splitlines()]
    assert any(batch["state_memory_bytes"] > 0 for batch in journal)
    # Routed as the simulator routes the same topic: the grouping instances restored from the last
    # committed real-time batch, and the batch run again routed its tuples as the killed one had.
    simulated = simulate_the_run(stack, results, tmp_path, "DYNAMIC_KEY")["exact"]
    assert simulated["worker_loads"] == summary["exact"]["worker_loads"]


RESCALE_RUNS = [("realtime-rescale", "STOP_THE_WORLD"), ("realtime-rescale-killed", "STOP_THE_WORLD"),
                ("realtime-shared-state", "SHARED_STATE"),
                pytest.param("realtime-shared-state-killed", "SHARED_STATE", marks=EVERY_PHASE),
                pytest.param("realtime-learner", "LEARNER", marks=CHAOS_ONLY), ("realtime-handoff", "HANDOFF"),
                pytest.param("realtime-handoff-killed", "HANDOFF", marks=EVERY_PHASE)]
"""tests/realtime_runs.py's rescale runs and their protocols (its KILLED and CHAOS_ONLY)."""


@pytest.mark.parametrize(("run", "protocol"), RESCALE_RUNS)
def test_a_real_time_rescale_moves_the_state_as_the_simulator_does(stack, realtime_runs, tmp_path, run, protocol):
    """`...-killed`: its driver SIGKILLed in the first event, after the savepoint (HANDOFF: after its first
    step; tests/realtime_runs.py KILLED_PHASES),
    and resumed with its run id: the resumed driver went on as the journal told it (STOP_THE_WORLD:
    moved the state, gave the partials back and restarted the query; SHARED_STATE: published the
    epoch its routers waited for). LEARNER: its warm-up, then SHARED_STATE's steps with the lag.
    HANDOFF: its rounds, each step claimed by the routers for one real-time batch."""
    summary = realtime_runs[run]
    results = Path(summary["results"])
    assert summary["resumed"] == run.endswith("-killed")
    assert summary["status"] == "completed", summary["error"]
    assert all(v is not False for v in summary["checks"].values()), summary["checks"]
    stats = get_dataset("NYC_FLIGHTS").key_stats(2400)
    assert totals_by_key(read_aggregates(stack.bootstrap_servers, f"{results.name}.aggregates")) == dict(stats.weights)
    assert summary["exact"]["total_count"] == stats.weight
    rescale = summary["rescale"]
    assert rescale["protocol"] == protocol and rescale["ownership_violations"] == 0
    journal = json.loads((results / "rescale.json").read_text())["events"]
    assert [(e["workers_before"], e["workers_after"]) for e in rescale["events"]] == [(4, 6), (6, 5)]
    starts = sorted((results / "partials").glob("batch-*.generation"), key=lambda p: int(p.stem.split("-")[1]))
    if protocol == "STOP_THE_WORLD":
        assert [e["phase"] for e in journal] == ["restarted"] * 2
        # Each restart gave the aggregator the worker windows of the last committed real-time batch
        # back: the interrupted batch's tuples were counted once, under the new routing.
        assert [int(p.read_text()) for p in starts] == [1, 2]
    elif protocol == "HANDOFF":
        assert [e["phase"] for e in journal] == ["done"] * 2 and starts == []
        channel = Path(json.loads((results / "run.json").read_text())["config"]["checkpoint_dir"]) / "rescale-channel"
        for e in journal:  # each step claimed for a batch after the previous step's, the last one the switch
            steps = [json.loads((channel / f"barrier-{e['first_epoch'] + j}.json").read_text())["switch_batch"]
                     for j in range(len(e["rounds"]) + 1)]
            assert steps == e["query_step_batches"] == sorted(set(steps)) and steps[-1] == e["query_switch_batch"]
            assert e["barrier_batch"] < e["switch_batch"]
        assert all(e["held_tuples"] is None for e in rescale["events"])  # not measured in real-time mode
    else:
        assert [e["phase"] for e in journal] == ["switched"] * 2
        if protocol == "LEARNER":  # every moved entry warmed up (at the warm-up's batch) or in the lag
            assert all(e["warm_up_entries"] + e["lag_entries"] >= e["moved_keys"] for e in journal)
        assert starts == []  # no batch interrupted, nothing given back
        # The routers claimed the batch after the one that read the request, and waited in it.
        channel = Path(json.loads((results / "run.json").read_text())["config"]["checkpoint_dir"]) / "rescale-channel"
        for e in journal:
            epoch = e["index"] + 1 if protocol == "SHARED_STATE" else 2 * e["index"] + 2  # LEARNER's warm-up first
            claim = json.loads((channel / f"barrier-{epoch}.json").read_text())
            assert claim["switch_batch"] == e["query_switch_batch"] == e["query_barrier_batch"] + 1
            assert e["switch_batch"] == e["barrier_batch"] + 1
    simulated = simulate_the_run(stack, results, tmp_path, "KEY_GROUP", "--rescale", "8000ms:+4,+5,16000ms:-1",
                                 "--protocol", protocol)
    assert [e["moved_groups"] for e in rescale["events"]] == [e["moved_groups"] for e in simulated["rescale"]["events"]]
    # Every key's state at its last owner, equal row for row (the per-worker loads differ by the tuples
    # between an event's time, where the simulator switches, and the real-time batch Spark switches in).
    pd.testing.assert_frame_equal(pd.read_parquet(results / "state.parquet"),
                                  pd.read_parquet(tmp_path / "sim" / "state.parquet"))


def simulate_the_run(stack, results: Path, tmp_path: Path, grouping: str, *extra: str) -> dict:
    """summary.json of `bench simulate --from-topic` over the input topic of the run in `results`, with
    the e2e W and S, `grouping` and `extra`; its record is `tmp_path / "sim"`."""
    topic = json.loads((results / "run.json").read_text())["config"]["topics"]["input"]
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr("bench.results.record.RESULTS_DIR", tmp_path)
        assert bench_main(["simulate", "--from-topic", topic, "--bootstrap-servers", stack.bootstrap_servers,
                           "--dataset", "NYC_FLIGHTS", "--grouping", grouping, "--workers", str(E2E_FAST["workers"]),
                           "--splitters", str(E2E_FAST["splitters"]), "--run-id", "sim", "--no-progress", *extra]) == 0
    return json.loads((tmp_path / "sim" / "summary.json").read_text())


def refusal(stack, tmp_path, **settings) -> str:
    options = RunOptions(grouping=settings.pop("grouping", "DYNAMIC_KEY"), dataset="NYC_FLIGHTS", mode="realtime",
                         run_id=f"rt-refused-{time.time_ns()}", bootstrap_servers=stack.bootstrap_servers,
                         results_dir=tmp_path, no_influx=True, limit=100, **settings)
    with pytest.raises(RunError) as refused:
        prepare(options, ensure_stack=False)
    return str(refused.value)


def test_what_real_time_mode_cannot_run_exactly_is_refused_before_spark_starts(stack, tmp_path):
    python_only = refusal(stack, tmp_path, grouping="D_CHOICES", grouping_params={"t": 2})
    assert "JVM only" in python_only and "DYNAMIC_KEY" in python_only and "STDS_FAILED_TO_READ_OPERATOR_METADATA" \
        in python_only and "--mode microbatch" in python_only
    assert "P <= S" in refusal(stack, tmp_path, partitions=20, splitters=10)
    assert "--grouping-clock kafka" in refusal(stack, tmp_path, grouping_clock="processing")
    assert "task slots" in refusal(stack, tmp_path, master="local[10]")
