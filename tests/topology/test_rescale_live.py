"""A STOP_THE_WORLD rescale during a live replay (`make bench GROUPING=VNODE RESCALE=...`): the
driver follows the batches while the records arrive (bench/run/input.py `BackgroundReplay`), so the
query stops when the input reaches the event's time, not once the whole replay has ended, and the
figures around the event have a processing latency before, during and after it."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from tests.conftest import E2E_DATASET, E2E_FAST
from tests.live_rescale_runs import RESCALE_SCHEDULE, STOP_THE_WORLD_INPUT

pytestmark = [pytest.mark.integration, pytest.mark.spark]

LIMIT = STOP_THE_WORLD_INPUT["limit"]


@pytest.fixture(scope="module")
def live_rescaled(live_rescale_runs) -> dict:
    """VNODE 4 -> 6 workers at 4 s of an 80 s live replay, STOP_THE_WORLD (tests/live_rescale_runs.py)."""
    return live_rescale_runs["live-STOP_THE_WORLD"]


def test_the_query_stops_at_the_event_while_the_replay_still_runs(live_rescaled):
    from datasets import get_dataset

    assert live_rescaled["status"] == "completed", live_rescaled["error"]
    assert all(v is not False for v in live_rescaled["checks"].values()), live_rescaled["checks"]
    assert live_rescaled["exact"]["total_count"] == get_dataset(E2E_DATASET).key_stats(LIMIT).weight
    assert live_rescaled["rescale"]["ownership_violations"] == 0
    replayed = json.loads((Path(live_rescaled["results"]) / "run.json").read_text())["dataset"]["replay"]
    (event,) = live_rescaled["rescale"]["events"]
    # The last record was due 80 s after the first (intended send time = Kafka timestamp); the
    # event is at 4 s: the stop must come before the input ended, not after the replay returned.
    assert event["stop_wall_ms"] < replayed["last_timestamp_ms"]
    # The condition the window after the event needs: records still arriving once the query resumed.
    assert event["resumed_wall_ms"] < replayed["last_timestamp_ms"], (
        f"the pause ({event['pause_ms']} ms) outlasted the input; steps: {event['steps']}")
    for window in ("before", "during", "after"):
        figures = {f: event[f"{f}_{window}"] for f in ("throughput_tps", "latency_ms_p99")}
        assert all(v is not None and v > 0 for v in figures.values()), (window, figures)  # live: a latency


def test_the_final_state_is_the_simulators_on_the_same_topic(stack, live_rescaled, tmp_path, monkeypatch):
    from bench.__main__ import main as bench_main

    monkeypatch.setattr("bench.results.record.RESULTS_DIR", tmp_path)
    assert bench_main([
        "simulate", "--from-topic", live_rescaled["topic"], "--bootstrap-servers", stack.bootstrap_servers,
        "--dataset", E2E_DATASET, "--grouping", "VNODE", "--workers", str(E2E_FAST["workers"]),
        "--splitters", str(E2E_FAST["splitters"]), "--run-id", "sim-stw-live", "--no-progress",
        "--rescale", RESCALE_SCHEDULE, "--protocol", "STOP_THE_WORLD",
    ]) == 0
    simulated = pd.read_parquet(tmp_path / "sim-stw-live" / "state.parquet")
    state = pd.read_parquet(Path(live_rescaled["results"]) / "state.parquet")
    pd.testing.assert_frame_equal(state, simulated, check_dtype=False)  # owners included
    assert set(state["worker"]) - set(range(E2E_FAST["workers"]))  # keys now at the added workers 4 and 5
