"""Cost profiles (bench.simulate.cost_profiles) and their fit on the peers' runs (bench.experiments.cost_fit),
without a JVM or Kafka: the fits are given traces and results shaped as the peers write them."""

import json
from pathlib import Path

import pandas as pd
import pytest

from bench.experiments.cost_fit import fit_flink, fit_kstreams
from bench.peers.rescale import PEERS, PeerRun
from bench.simulate import cost_profiles
from bench.simulate.cost_profiles import cost_model, load_profile, profile_names, write_profile
from groupings.rescaling import CostModel


def test_a_profile_replaces_some_defaults_and_overrides_go_over_it():
    assert "spark" in profile_names() and cost_model(None) == CostModel()
    spark = cost_model("spark")
    assert (spark.control_latency_ms, spark.restart_ms) == (3_900, 25_245)  # a control step is a micro-batch
    assert spark.replay_entries_per_s == CostModel().replay_entries_per_s
    assert cost_model("SPARK", {"restart_ms": "3000"}).restart_ms == 3000


def test_every_stored_profile_loads_into_the_cost_model_and_says_what_it_was_fitted_on():
    for name in profile_names():
        profile = load_profile(name)
        assert profile["engine"] == name and profile["source"]
        assert isinstance(cost_model(name), CostModel)
        for check in profile.get("checks", []):
            assert set(check["error"]) == {"pause_ms", "rescale_ms"}


def test_an_unknown_profile_or_a_bad_cost_is_refused(tmp_path, monkeypatch):
    with pytest.raises(ValueError, match="unknown cost profile 'storm': stored are .*spark"):
        cost_model("storm")
    monkeypatch.setattr(cost_profiles, "PROFILES_DIR", tmp_path)
    with pytest.raises(ValueError, match="unknown cost parameter"):
        write_profile("x", {"warp": 9}, "test", {})
    with pytest.raises(ValueError, match="must be a number >= 0"):
        write_profile("x", {"restart_ms": -1}, "test", {})
    assert not list(tmp_path.iterdir())
    path = write_profile("Flink", {"restart_ms": 1500.0}, "test", {"restart_ms": {"value": 1500.0}}, checks=[{"a": 1}])
    assert path == tmp_path / "flink.json" and json.loads(path.read_text())["checks"] == [{"a": 1}]
    assert cost_model("flink").restart_ms == 1500


def run(result: dict, trace_rows=()) -> PeerRun:
    trace = pd.DataFrame(list(trace_rows), columns=["key", "unit", "worker", "release_ms", "processed_ms"]).astype(
        {"release_ms": float, "processed_ms": float})
    return PeerRun(PEERS["flink"], result, trace, pd.DataFrame(), Path("/nonexistent"))


def flink_run(pause_ms: float) -> PeerRun:
    # one moved unit (7) whose tuple released at 1,000 waits until the restored job processes it
    event = {"request_wall_ms": 1_000, "in_force_wall_ms": 1_000 + pause_ms, "moved_units": [7]}
    return run({"events": [event]}, [("a", 7, 0, 900, 905), ("a", 7, 1, 1_000, 1_000 + pause_ms)])


def test_flinks_restart_is_its_measured_pause_less_the_models_other_charges():
    costs, fit = fit_flink([flink_run(1_500), flink_run(2_500), flink_run(1_000)], other_charges_ms=100.0)
    assert costs == {"restart_ms": 1_400.0}
    assert fit["restart_ms"] == {"value": 1_400.0, "runs": [1_400.0, 2_400.0, 900.0], "min": 900.0, "max": 2_400.0}
    assert fit_flink([flink_run(50)], other_charges_ms=100.0)[0] == {"restart_ms": 0.0}  # never negative


def kstreams_run(assigned, restore, wait, switch, loaded):
    return run({"settings": {"acceptable.recovery.lag": 10},
                "events": [{"steps_ms": {"warm_up_assigned": assigned, "warm_up_restore": restore,
                                         "wait_for_rebalance": wait, "switch": switch},
                            "state_entries_loaded_by_warm_ups": loaded}]})


def test_kafka_streams_rebalance_replay_rate_and_promotion_wait_come_from_its_steps():
    costs, fit = fit_kstreams([kstreams_run(3_000, 4_000, 1_000, 5_000, 8_000),
                               kstreams_run(2_000, 2_000, 58_000, 2_000, 9_000),
                               kstreams_run(4_000, 5_000, 500, 4_000, 10_000)])
    assert costs == {"control_latency_ms": 4_000.0, "replay_entries_per_s": 2_000.0, "probing_interval_ms": 5_500.0,
                     "acceptable_lag_entries": 10}
    assert fit["probing_interval_ms"]["max"] == 60_000
    with pytest.raises(ValueError, match="no warm-up loaded any state"):
        fit_kstreams([kstreams_run(1, 0, 0, 1, 0)])
