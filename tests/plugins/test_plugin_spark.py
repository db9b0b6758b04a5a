"""`bench run` on the real stack runs a plugin grouping like a built-in one: the toy grouping,
registered only by the dist-info folder under tests/plugins/toy_site and found through PYTHONPATH by
the driver and by Spark's Python workers, routes every record of the e2e input topic, and its
per-worker loads equal the simulator's over the same topic.

The run is a `python -m bench run` with PYTHONPATH naming the plugin, in the session's cold runs
(tests/cold_runs.py, fixture `cold_runs`): the test session's Spark JVM (fixture `spark`) may have
started before PYTHONPATH named the plugin, and its workers inherit the environment the JVM started
with."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench.__main__ import main as bench_main
from tests.conftest import COLD_PLUGIN_PARAM as PARAM
from tests.conftest import E2E_DATASET, E2E_FAST, E2E_MALFORMED
from tests.plugins.conftest import TOY_NAME

pytestmark = [pytest.mark.integration, pytest.mark.spark]


def simulate_topic(stack, topic: str, results, monkeypatch) -> dict:
    """`bench simulate --from-topic` of the toy grouping with the run's W and S; its summary."""
    monkeypatch.setattr("bench.results.record.RESULTS_DIR", results)
    assert bench_main(["simulate", "--from-topic", topic, "--bootstrap-servers", stack.bootstrap_servers,
                       "--dataset", E2E_DATASET, "--grouping", TOY_NAME, "--param", PARAM,
                       "--workers", str(E2E_FAST["workers"]), "--splitters", str(E2E_FAST["splitters"]),
                       "--run-id", "sim-toy", "--no-progress"]) == 0
    return json.loads((results / "sim-toy" / "summary.json").read_text())


def test_a_plugin_grouping_runs_on_spark_with_the_simulators_loads(stack, input_topic, cold_runs, toy_plugin,
                                                                  tmp_path, monkeypatch):
    stream = cold_runs["plugin"]
    assert stream["status"] == "completed", stream.get("error")
    assert stream["grouping"] == TOY_NAME
    assert stream["data_plane"] == "python"  # no Java implementation: the Python grouping stage routed it
    # the TransformWithStateInPandas driver worker prints on every query start: into spark.log, not the console
    logs = stream["logs"]
    assert logs["spark"].get("pyspark_worker", 0) > 0, logs
    assert "Streaming TransformWithStateInPandas Python worker" in (Path(logs["folder"]) / "spark.log").read_text()
    assert all(v is not False for v in stream["checks"].values()), stream["checks"]
    assert stream["exact"]["total_count"] == stream["reference"]["total_count"] == input_topic.total
    assert stream["dead_letters"] == len(E2E_MALFORMED)

    simulated = simulate_topic(stack, input_topic.name, tmp_path / "sim", monkeypatch)
    sim, real = simulated["exact"], stream["exact"]
    assert sim["total_count"] == input_topic.total
    assert sim["worker_loads"] == real["worker_loads"]
    assert sim["worker_tuples"] == real["worker_tuples"]
    assert (sim["pairs"], sim["keys"]) == (real["pairs"], real["keys"])
    # ROUND_ROBIN_KEY keeps each key on one worker per splitter instance: S = 4 instances deal the
    # keys in turn from worker 1, so no worker is idle.
    assert min(real["worker_tuples"]) > 0
