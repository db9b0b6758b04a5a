"""`bench simulate --from-topic` over the input topic of a streaming run reproduces that run's
per-worker loads, DIST_COST and STD_DEV exactly, for every grouping: the Kafka timestamp is the
grouping clock and partition p feeds splitter p mod S, so the streaming routing is deterministic."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from bench.__main__ import main as bench_main
from groupings import GROUPINGS
from groupings.rescaling import RESCALABLE
from tests.conftest import E2E_FAST, E2E_MALFORMED

pytestmark = [pytest.mark.integration, pytest.mark.spark]


@pytest.fixture(scope="module")
def simulation(stack, input_topic, tmp_path_factory):
    """grouping -> the results folder of `bench simulate --from-topic` over the e2e input topic with
    the e2e runs' W and S (each grouping simulated once, on first use)."""
    folders: dict[str, Path] = {}

    def simulate(grouping: str) -> Path:
        if grouping not in folders:
            results = tmp_path_factory.mktemp(f"sim-{grouping.lower()}")
            run_id = f"sim-{grouping.lower()}"
            with pytest.MonkeyPatch.context() as mp:
                mp.setattr("bench.results.record.RESULTS_DIR", results)
                assert bench_main([
                    "simulate", "--from-topic", input_topic.name, "--bootstrap-servers", stack.bootstrap_servers,
                    "--dataset", "NYC_FLIGHTS", "--grouping", grouping, "--workers", str(E2E_FAST["workers"]),
                    "--splitters", str(E2E_FAST["splitters"]), "--run-id", run_id, "--no-progress",
                ]) == 0
            folders[grouping] = results / run_id
        return folders[grouping]

    return simulate


@pytest.mark.parametrize("grouping", GROUPINGS)
def test_simulate_from_topic_equals_the_streaming_run(stream_runs, simulation, grouping):
    stream = stream_runs[grouping]
    simulated = json.loads((simulation(grouping) / "summary.json").read_text())
    assert simulated["dead_letters"] == len(E2E_MALFORMED)
    sim, real = simulated["exact"], stream["exact"]
    assert sim["worker_loads"] == real["worker_loads"]
    assert sim["worker_tuples"] == real["worker_tuples"]
    assert (sim["pairs"], sim["keys"]) == (real["pairs"], real["keys"])
    assert sim["dist_cost"] == real["dist_cost"]
    assert sim["std_dev"] == pytest.approx(real["std_dev"], rel=0, abs=1e-12)
    assert Path(stream["results"]).is_dir()


@pytest.mark.parametrize("grouping", GROUPINGS)
def test_simulate_from_topic_equals_the_real_time_run(realtime_runs, simulation, grouping):
    simulated = json.loads((simulation(grouping) / "summary.json").read_text())["exact"]
    real = realtime_runs[f"realtime-{grouping}"]["exact"]
    assert (simulated["worker_loads"], simulated["worker_tuples"]) == (real["worker_loads"], real["worker_tuples"])
    assert (simulated["pairs"], simulated["keys"], simulated["dist_cost"]) == (real["pairs"], real["keys"],
                                                                              real["dist_cost"])


@pytest.mark.parametrize("grouping", GROUPINGS)
def test_the_workers_state_equals_simulate_from_topic(input_topic, stream_runs, simulation, grouping):
    """state.parquet of the streaming run (read from Spark's state store) is the simulator's, row for
    row: one row per key at its owner for KEY, KEY_GROUP and VNODE, one per (key, worker) otherwise."""
    stream = stream_runs[grouping]
    simulated = pd.read_parquet(simulation(grouping) / "state.parquet")
    streamed = pd.read_parquet(Path(stream["results"]) / "state.parquet")
    assert list(streamed.columns) == list(simulated.columns)
    pd.testing.assert_frame_equal(streamed, simulated, check_dtype=False)
    assert streamed["count"].sum() == stream["exact"]["total_count"] == input_topic.total
    assert stream["worker_state"]["rows"] == len(simulated)
    if grouping in RESCALABLE:
        assert not streamed["key"].duplicated().any()
