"""STOP_THE_WORLD on Spark (docs/rescaling.md, "On Spark"): the query stops at a batch boundary,
its state is repartitioned (Spark's `StreamingCheckpointManager.repartition`), the keys that change
owner move through `<run>.state`, and it restarts from the same checkpoint with the new worker
count. Real broker, real Spark; the shared e2e topic and its VNODE run without rescaling."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pandas as pd
import pytest

from bench.__main__ import main as bench_main
from bench.run import prepare, run_stream
from bench.topology.sink import read_aggregates
from tests.conftest import E2E_FAST, e2e_options

pytestmark = [pytest.mark.integration, pytest.mark.spark]

@pytest.fixture(scope="module")
def schedule(stack, input_topic) -> str:
    """4 -> 6 workers half-way through the shared topic's valid tuples on the simulator's clock (the
    topic was replayed as fast as possible: its 2,000 records span a few ms; its malformed records,
    written after them, do not count); with A = 2, N goes from 2 to 6."""
    from bench.simulate.sources import from_topic
    from datasets import get_dataset

    table = from_topic(get_dataset("NYC_FLIGHTS"), input_topic.name, stack.bootstrap_servers,
                       E2E_FAST["splitters"])[0]
    return f"{(int(table.ts_ms.max()) - int(table.ts_ms.min())) // 2}ms:6"


@pytest.fixture(scope="module")
def rescaled(stack, spark, input_topic, schedule, tmp_path_factory):
    run_id = f"e2e-stw-{int(time.time())}"
    options = e2e_options(stack, tmp_path_factory.mktemp("stw"), input_topic.name, "VNODE", run_id,
                          rescale=schedule, protocol="STOP_THE_WORLD", max_offsets_per_trigger=300)
    return run_stream(prepare(options), spark=spark, log=lambda *_: None)


@pytest.fixture(scope="module")
def simulated(stack, input_topic, schedule, tmp_path_factory):
    folder = tmp_path_factory.mktemp("stw-sim")
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr("bench.results.record.RESULTS_DIR", folder)
        simulate_ok = bench_main([
            "simulate", "--from-topic", input_topic.name, "--bootstrap-servers", stack.bootstrap_servers,
            "--dataset", "NYC_FLIGHTS", "--grouping", "VNODE", "--workers", str(E2E_FAST["workers"]),
            "--splitters", str(E2E_FAST["splitters"]), "--run-id", "sim-stw", "--no-progress",
            "--rescale", schedule, "--protocol", "STOP_THE_WORLD",
        ])
    assert simulate_ok == 0
    return (json.loads((folder / "sim-stw" / "summary.json").read_text()),
            pd.read_parquet(folder / "sim-stw" / "state.parquet"))


def test_totals_are_exact_and_the_checks_hold(stack, rescaled, input_topic):
    assert rescaled["status"] == "completed", rescaled["error"]
    assert all(v is not False for v in rescaled["checks"].values()), rescaled["checks"]
    run_id = Path(rescaled["results"]).name
    aggregates = read_aggregates(stack.bootstrap_servers, f"{run_id}.aggregates")
    assert sum(v["count"] for v in aggregates.values()) == input_topic.total
    assert rescaled["exact"]["total_count"] == input_topic.total


def test_the_event_is_recorded_with_the_figures_of_part_1(rescaled, simulated):
    rescale = rescaled["rescale"]
    assert rescale["ownership_violations"] == 0 and rescale["worker_id_space"] == 6
    (event,) = rescale["events"]
    (sim_event,) = simulated[0]["rescale"]["events"]
    assert (event["workers_before"], event["workers_after"]) == (4, 6)
    assert event["moved_groups"] == sim_event["moved_groups"] and event["groups"] == 256
    assert event["ownership_violations"] == 0
    assert event["switch_batch"] > event["barrier_batch"]
    assert (event["partitions_before"], event["partitions_after"]) == (2, 6)
    assert event["pause_ms"] > 0 and event["state_entries_moved"] == event["moved_keys"]
    assert event["state_entries_read"] >= event["moved_keys"]


def test_the_final_state_is_the_simulators_and_that_of_the_run_without_rescaling(rescaled, simulated, stream_runs):
    state = pd.read_parquet(Path(rescaled["results"]) / "state.parquet")
    pd.testing.assert_frame_equal(state, simulated[1], check_dtype=False)  # owners included
    assert not state["key"].duplicated().any()
    plain = pd.read_parquet(Path(stream_runs["VNODE"]["results"]) / "state.parquet")
    cols = ["key", "count", "sum", "first_ts_ms", "last_ts_ms"]
    pd.testing.assert_frame_equal(state[cols], plain[cols], check_dtype=False)
    assert set(state["worker"]) - set(range(4))  # keys now at the added workers 4 and 5


def _children(pid: int) -> list[int]:
    out = []
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            out += [int(c) for c in (task / "children").read_text().split()]
        except OSError:
            pass
    return out


def _wait_gone(pids: list[int], timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while any(Path(f"/proc/{p}").exists() for p in pids) and time.monotonic() < deadline:
        time.sleep(0.2)


@pytest.mark.parametrize("phase", ["repartitioned"])
def test_a_driver_killed_in_the_middle_of_a_rescale_resumes_exactly(stack, spark, input_topic, schedule, simulated,
                                                                  tmp_path, phase):
    """SIGKILL after Spark's repartition wrote its batch and before the moved state reached
    `<run>.state`; the same run id finishes the rescale and the run, exactly."""
    import os
    import signal
    import subprocess
    import sys

    from bench.rescale.stop_the_world import HANG_AFTER

    run_id = f"e2e-stw-kill-{int(time.time())}"
    options = e2e_options(stack, tmp_path, input_topic.name, "VNODE", run_id, rescale=schedule,
                          protocol="STOP_THE_WORLD", max_offsets_per_trigger=300)
    cmd = [sys.executable, "-m", "bench", "run", "--grouping", "VNODE", "--dataset", "NYC_FLIGHTS",
           "--topic", input_topic.name, "--no-replay", "--run-id", run_id, "--master", "local[2]",
           "--bootstrap-servers", stack.bootstrap_servers, "--influx-url", stack.influx_url,
           "--influx-database", stack.influx_database, "--results-dir", str(tmp_path), "--no-progress",
           "--workers", "4", "--splitters", str(E2E_FAST["splitters"]), "--aggregators", "2", "--cost-ms", "0",
           "--worker-window-s", "5", "--aggregator-window-s", "10", "--watermark-delay-s", "2",
           "--observer-tick-s", "2", "--trigger-s", "0.5", "--max-offsets-per-trigger", "300",
           "--rescale", schedule, "--protocol", "STOP_THE_WORLD", "--timeout-s", "600"]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            env={**os.environ, HANG_AFTER: phase})
    journal = tmp_path / run_id / "rescale.json"
    deadline = time.monotonic() + 600
    try:
        while not (journal.exists() and json.loads(journal.read_text())["events"][0]["phase"] == phase):
            assert proc.poll() is None, f"the driver ended (exit {proc.returncode}) before the rescale's {phase}"
            assert time.monotonic() < deadline, "no rescale within 600 s"
            time.sleep(0.2)
        jvms = _children(proc.pid)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(30)
        _wait_gone(jvms, 60)  # Spark's JVM ends when its driver's pipe closes
    finally:
        if proc.poll() is None:
            proc.kill()
    assert not state_topic_has_epoch(stack, run_id)

    resumed = run_stream(prepare(options), spark=spark, log=lambda *_: None)
    assert resumed["status"] == "completed" and resumed["resumed"], resumed["error"]
    assert all(v is not False for v in resumed["checks"].values()), resumed["checks"]
    aggregates = read_aggregates(stack.bootstrap_servers, f"{run_id}.aggregates")
    assert sum(v["count"] for v in aggregates.values()) == input_topic.total
    assert resumed["rescale"]["ownership_violations"] == 0
    (event,) = resumed["rescale"]["events"]
    assert (event["partitions_before"], event["partitions_after"]) == (2, 6)
    state = pd.read_parquet(tmp_path / run_id / "state.parquet")
    pd.testing.assert_frame_equal(state, simulated[1], check_dtype=False)


def state_topic_has_epoch(stack, run_id: str) -> bool:
    from bench.topology import state_transfer

    return 1 in state_transfer.written_epochs(stack.bootstrap_servers, run_id)
