"""End to end against the real stack (Kafka, InfluxDB) and Spark, on a subset of a real dataset.

One input topic per session (NYC_FLIGHTS, 2,000 records, 4 partitions, plus 5 malformed records),
shared by every run, like `run-all` (fixtures `input_topic` and `stream_runs` in tests/conftest.py).
Small windows and no simulated cost keep each run short.
"""

from __future__ import annotations

import json
import time
import urllib.parse
import urllib.request
from pathlib import Path

import pandas as pd
import pytest

from bench.run.stream import run_stream
from bench.run.preflight import prepare
from bench.topology.jvm_stage import JVM_GROUPINGS
from bench.topology.sink import read_aggregates
from groupings import GROUPINGS
from tests.conftest import E2E_MALFORMED as MALFORMED
from tests.conftest import e2e_options

pytestmark = [pytest.mark.integration, pytest.mark.spark]

def options(stack, tmp_path, topic, grouping, run_id, **extra):
    return e2e_options(stack, tmp_path, topic, grouping, run_id, **extra)


def influx_count(stack, run_id: str) -> int:
    q = urllib.parse.urlencode({"db": stack.influx_database,
                                "q": f"SELECT count(std_dev) FROM observer WHERE run_id = '{run_id}'"})
    with urllib.request.urlopen(f"{stack.influx_url}/query?{q}", timeout=10) as r:
        series = json.load(r)["results"][0].get("series") or []
    return int(series[0]["values"][0][1]) if series else 0


def totals_by_key(aggregates: dict[str, dict]) -> dict[str, int]:
    out: dict[str, int] = {}
    for value in aggregates.values():
        out[value["key"]] = out.get(value["key"], 0) + value["count"]
    return out


@pytest.mark.parametrize("grouping", GROUPINGS)
def test_topology_end_to_end(stack, stream_runs, input_topic, grouping):
    weights, total = input_topic.weights, input_topic.total
    summary = stream_runs[grouping]
    run_id = Path(summary["results"]).name

    assert summary["status"] == "completed", summary["error"]
    assert all(v is not False for v in summary["checks"].values()), summary["checks"]
    # Every valid tuple is in <run>.aggregates exactly once (last value per window|key).
    aggregates = read_aggregates(stack.bootstrap_servers, f"{run_id}.aggregates")
    assert sum(v["count"] for v in aggregates.values()) == total
    assert totals_by_key(aggregates) == weights
    # Malformed records reached the dead-letter topic and were counted; valid totals stay exact.
    assert (summary["malformed"], summary["dead_letters"]) == (len(MALFORMED), len(MALFORMED)), summary
    assert len(read_aggregates(stack.bootstrap_servers, f"{run_id}.dlq")) == len(MALFORMED)
    if grouping == "KEY":
        assert summary["exact"]["dist_cost"] == 1.0 and summary["reference"]["dist_cost"] == 1.0
    assert summary["exact"]["total_count"] == total == summary["reference"]["total_count"], summary
    assert influx_count(stack, run_id) >= 1
    record = Path(summary["results"])
    assert {"run.json", "summary.json", "metrics.parquet"} <= {p.name for p in record.iterdir()}


def test_every_tick_samples_the_runs_memory_and_checkpoint(stream_runs):
    """A soak's figures (`bench.observer.resources`) on every tick of a run: the driver's and Spark's
    resident memory, and the checkpoint's size once the first batch committed."""
    metrics = pd.read_parquet(Path(stream_runs["KEY"]["results"]) / "metrics.parquet")
    assert (metrics["driver_rss_mib"] > 50).all() and (metrics["spark_rss_mib"] > 100).all(), metrics
    assert (metrics["spark_heap_committed_mib"] >= metrics["spark_heap_used_mib"]).all()
    assert (metrics["spark_heap_used_mib"] > 10).all()
    assert metrics["checkpoint_mib"].iloc[-1] > 0


def test_restart_resumes_with_exact_totals(stack, spark, tmp_path, input_topic):
    topic, weights, total = input_topic.name, input_topic.weights, input_topic.total
    run_id = f"e2e-restart-{int(time.time())}"
    first = run_stream(prepare(options(stack, tmp_path, topic, "DYNAMIC_KEY", run_id, max_offsets_per_trigger=400,
                                       stop_after_batches=2)), spark=spark, log=lambda *_: None)
    assert first["status"] == "stopped"
    # As if the driver died after the sink wrote its last batch and before Spark recorded the commit:
    # the resumed query re-runs a batch whose aggregates file exists, and the totals stay exact.
    commits = Path(first["results"]) / "checkpoint" / "main" / "commits"
    last = max(int(p.name) for p in commits.glob("[0-9]*"))
    assert (Path(first["results"]) / "aggregates" / f"batch-{last:09d}.parquet").exists()
    for name in (str(last), f".{last}.crc"):
        (commits / name).unlink(missing_ok=True)
    second = run_stream(prepare(options(stack, tmp_path, topic, "DYNAMIC_KEY", run_id, max_offsets_per_trigger=400)),
                        spark=spark, log=lambda *_: None)
    assert second["status"] == "completed" and second["resumed"], second["error"]
    assert all(v is not False for v in second["checks"].values()), second["checks"]
    aggregates = read_aggregates(stack.bootstrap_servers, f"{run_id}.aggregates")
    assert sum(v["count"] for v in aggregates.values()) == total
    assert totals_by_key(aggregates) == weights
    assert second["exact"]["total_count"] == total
    # As if the driver died after the last windows were written and before its summary: the
    # checkpoint has consumed everything, so Spark runs no batch until the end-of-input comes again
    # (the resumed driver waited for ever, make nemesis 2026-11-29).
    third = run_stream(prepare(options(stack, tmp_path, topic, "DYNAMIC_KEY", run_id, timeout_s=120)),
                       spark=spark, log=lambda *_: None)
    assert third["status"] == "completed", third["error"]
    assert read_aggregates(stack.bootstrap_servers, f"{run_id}.aggregates") == aggregates
    assert third["exact"]["total_count"] == total and third["exact"]["worker_loads"] == second["exact"]["worker_loads"]


def test_local_cluster_gives_identical_totals_and_loads(stream_runs, input_topic, cold_runs):
    """A `bench run` on `local-cluster[2,1,1024]` (the session's cold runs, tests/cold_runs.py)."""
    local, cluster = stream_runs["DYNAMIC_KEY"], cold_runs["local-cluster"]
    assert cluster["status"] == "completed", cluster["error"]
    assert cluster["exact"]["total_count"] == local["exact"]["total_count"] == input_topic.total
    assert cluster["exact"]["worker_loads"] == local["exact"]["worker_loads"]
    assert cluster["exact"]["worker_tuples"] == local["exact"]["worker_tuples"]


def test_latency_is_reported_only_for_a_run_that_replays_its_input_live(live_run, stream_runs):
    assert live_run["status"] == "completed", live_run["error"]
    assert live_run["input"]["mode"] == "live" and live_run["input"]["rate"] == 500.0
    latency = live_run["latency"]
    # Every tuple's processing latency is in the worker tasks' histograms (no warm-up cut here).
    assert latency["latency_tuples"] == live_run["exact"]["total_count"] == 2000
    assert 0 < latency["latency_p50_ms"] <= latency["latency_p99_ms"] <= latency["latency_p999_ms"] \
        <= latency["latency_max_ms"]
    assert len(latency["per_worker_p99_ms"]) == live_run["workers"]
    # A tuple is processed before its window closes and its total is written.
    window = live_run["window_latency"]
    assert latency["latency_p99_ms"] < window["window_latency_p99_ms"]
    # The shared topic was recorded before these runs: its records' age is not a pipeline latency.
    assert all(summary["latency"] == {} and summary["window_latency"] == {} for summary in stream_runs.values())
    assert all(summary["input"]["mode"] == "recorded" for summary in stream_runs.values())


def test_the_spark_log_is_in_the_run_folder(live_run):
    """The JVM's lines go to the run's spark.log, counted in the summary (the Python workers' lines
    too: tests/plugins/test_plugin_spark.py, a run on the Python grouping stage)."""
    logs = live_run["logs"]
    assert (Path(logs["folder"]) / "spark.log").is_file() and "spark" in logs, logs
    assert live_run["task_slots"] == 2  # the shared test session is local[2]


def test_the_java_groupings_route_in_the_jvm_and_the_others_in_python(spark, stream_runs, live_run):
    """Each run says where its grouping stage ran; the JVM takes exactly the groupings the Java library
    has (`Groupings.NAMES`, read from the session's JVM, which loaded it from `spark.jars`)."""
    java_names = list(spark.sparkContext._jvm.groupings.Groupings.NAMES)
    assert sorted(java_names) == sorted(JVM_GROUPINGS)
    assert {g: run["data_plane"] for g, run in stream_runs.items()} == {
        g: "jvm" if g in java_names else "python" for g in GROUPINGS}
    assert live_run["data_plane"] == "jvm"  # DYNAMIC_KEY: the live latency figures come from that path


def test_a_run_with_simulated_cost_aggregates_every_produced_tuple(live_run):
    # live_run sleeps 1 ms per tuple in the worker task (WorkerTask.java).
    assert live_run["status"] == "completed", live_run["error"]
    assert live_run["checks"]["aggregated_equals_produced"] is True, live_run["checks"]
    assert all(v is not False for v in live_run["checks"].values()), live_run["checks"]


def test_the_worker_state_is_kept_only_when_asked(live_run, stream_runs):
    """live_run runs the default topology: no worker-state stage, no state.parquet; the e2e runs ask
    for it (`worker_state=True`) and write it."""
    assert "worker_state" not in live_run and not (Path(live_run["results"]) / "state.parquet").exists()
    assert all((Path(run["results"]) / "state.parquet").exists() for run in stream_runs.values())


def test_sparks_floor_is_the_empty_querys_batch_cycle_on_the_runs_topic(stack, spark, tmp_path, input_topic):
    from bench.capacity.ladder import step_floor
    from bench.run.floor import describe_floor, measure_floor
    from bench.run.input import ensure_topics
    from producers.broker import end_offsets

    prepared = prepare(options(stack, tmp_path, input_topic.name, "KEY", f"e2e-floor-{int(time.time())}"))
    config = prepared.config
    ensure_topics(stack.bootstrap_servers, {config.control_topic: 1})  # the run's spout reads it too
    (config.results_dir / "observer").mkdir(parents=True)
    # The run's batches that read records: 150, 250 and 200 records (median 200); one read none.
    (config.results_dir / "observer" / "progress.jsonl").write_text(
        "".join(json.dumps({"batch_id": i, "records": n}) + "\n" for i, n in enumerate([0, 150, 250, 200])))
    summary = measure_floor(spark, config, {"grouping": "KEY", "status": "completed"}, batches=4)
    floor = summary["spark_floor"]
    assert (floor["query"], floor["records_per_batch"], floor["batches"]) == ("spout -> noop", 200, 4)
    assert 0 < floor["cycle_p50_ms"] <= floor["cycle_max_ms"]
    assert json.loads((config.results_dir / "summary.json").read_text())["spark_floor"] == floor
    assert "200 records per batch" in describe_floor(summary) and describe_floor({"grouping": "KEY"}) is None
    # Beside a capacity step (`bench.capacity.ladder.step_floor`): the same query on the step's run,
    # its median cycle into the step; a run it cannot measure (no summary.json) gives None and says so.
    warnings: list[str] = []
    assert 0 < step_floor(spark, prepared, warnings.append) == \
        json.loads((config.results_dir / "summary.json").read_text())["spark_floor"]["cycle_p50_ms"]
    (config.results_dir / "summary.json").unlink()
    assert step_floor(spark, prepared, warnings.append) is None
    assert len(warnings) == 1 and "Spark's floor not measured" in warnings[0]
    # A topic that runs out first (2,005 records: about 11 batches of at most 200, Spark's rate limit
    # rounding each partition's share down): the query ends after its last batch and the floor says
    # how many batches it measured (the first not counted).
    records = sum(end_offsets(stack.bootstrap_servers, input_topic.name).values())
    short = measure_floor(spark, config, {"grouping": "KEY"}, batches=50)["spark_floor"]
    assert -(-records // 200) - 1 <= short["batches"] < 50
