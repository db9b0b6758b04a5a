"""A run whose replay was stopped part way (a killed driver) resumes it with the same run id: the
missing records only, then exact totals (issue 27). Real Kafka and Spark (tests/conftest.py)."""

from __future__ import annotations

import json
import time
from dataclasses import replace

import pytest

from bench.__main__ import main as bench_main
from bench.run.stream import run_stream
from bench.run.preflight import RunError, default_topic, prepare
from bench.topology.sink import read_aggregates
from datasets import get_dataset
from producers import replay
from tests.conftest import E2E_DATASET, E2E_FAST, E2E_PARTITIONS, e2e_options

pytestmark = [pytest.mark.integration, pytest.mark.spark]

LIMIT, PREFIX, RATE = 1200, 700, 2000.0


def test_a_replay_stopped_part_way_is_resumed_with_exact_totals(stack, spark, tmp_path, monkeypatch):
    run_id = f"resume-replay-{int(time.time())}"
    options = e2e_options(stack, tmp_path, None, "KEY", run_id, limit=LIMIT, rate=RATE, partitions=E2E_PARTITIONS)
    topic = default_topic(options, E2E_PARTITIONS)
    # What a driver killed during its replay leaves: the first records of every partition.
    first = replay(get_dataset(E2E_DATASET), topic, stack.bootstrap_servers, partitions=E2E_PARTITIONS,
                   limit=PREFIX, rate=RATE, progress=False, key_stats=False)
    assert first.ok and first.records == PREFIX

    logs: list[str] = []
    summary = run_stream(prepare(options), spark=spark, log=logs.append)
    assert summary["status"] == "completed", summary["error"]
    assert any(f"holds {PREFIX} of the replay's {LIMIT:,} records" in m and "resuming" in m for m in logs), logs
    (attempt,) = summary["attempts"]
    assert attempt == {**attempt, "topic_state": "prefix", "records_in_topic_before": PREFIX,
                       "records_replayed": LIMIT - PREFIX, "status": "completed"}
    run_json = json.loads((tmp_path / run_id / "run.json").read_text())
    assert run_json["attempts"][0]["records_replayed"] == LIMIT - PREFIX

    stats = get_dataset(E2E_DATASET).key_stats(LIMIT)
    aggregates = read_aggregates(stack.bootstrap_servers, f"{run_id}.aggregates")
    assert sum(v["count"] for v in aggregates.values()) == stats.weight == summary["exact"]["total_count"]
    assert summary["checks"]["aggregated_equals_produced"] is True

    # every worker's load equals the simulator's on the same dataset and limit
    monkeypatch.setattr("bench.results.record.RESULTS_DIR", tmp_path)
    assert bench_main(["simulate", "--dataset", E2E_DATASET, "--grouping", "KEY", "--limit", str(LIMIT),
                       "--workers", str(E2E_FAST["workers"]), "--splitters", str(E2E_FAST["splitters"]),
                       "--run-id", f"{run_id}-sim", "--no-progress"]) == 0
    simulated = json.loads((tmp_path / f"{run_id}-sim" / "summary.json").read_text())
    assert simulated["exact"]["worker_loads"] == summary["exact"]["worker_loads"]

    # the same options again: the topic is complete, nothing is replayed
    again = run_stream(prepare(replace(options, run_id=f"{run_id}-b")), spark=spark, log=lambda *_: None)
    assert again["status"] == "completed" and again["attempts"][0]["records_replayed"] == 0
    assert again["exact"]["worker_loads"] == summary["exact"]["worker_loads"]


def test_a_topic_that_is_not_the_replay_is_a_clear_error(stack, tmp_path):
    options = e2e_options(stack, tmp_path, None, "KEY", "resume-mismatch", limit=50, rate=RATE,
                          partitions=E2E_PARTITIONS)
    topic = default_topic(options, E2E_PARTITIONS)
    replay(get_dataset(E2E_DATASET), topic, stack.bootstrap_servers, partitions=E2E_PARTITIONS, limit=60,
           progress=False, key_stats=False)
    with pytest.raises(RunError) as e:
        prepare(options)
    assert f"topic {topic!r} holds 60 of the replay's 50 records" in str(e.value)
    assert f"delete-topic {topic}" in str(e.value) and "--no-replay" in str(e.value)
    # --no-replay consumes it as it is (today's behaviour)
    assert prepare(replace(options, replay=False)).topic_exists
