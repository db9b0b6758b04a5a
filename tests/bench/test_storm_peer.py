"""The Storm peer (`bench/peers/storm`): one end-to-end run on a small topic whose per-worker loads
must equal the simulator's (its Java groupings' own tests: tests/groupings/test_jvm_groupings.py).

Java 17 and Maven are prerequisites of the whole project (the Kafka broker and Spark's jars need
them); these tests skip only when they are not on PATH, and say so (the `maven` fixture, which also
marks them `maven`; `stack` marks the end-to-end run `integration`).
"""

from __future__ import annotations

import pytest

from bench.peers.storm import fitted_executors, latency_figures, run_storm_peer


@pytest.mark.parametrize("grouping", ["PARTIAL_KEY", "DYNAMIC_KEY"])
def test_storm_peer_processes_every_record_with_the_simulators_loads(stack, maven, grouping):
    from bench.perf.pipeline import _ensure_topic
    from bench.simulate.engine import figures, route_table
    from bench.simulate.sources import from_topic
    from datasets import get_dataset

    records = 20_000
    topic = f"test.storm-peer.n{records}.p10"
    _ensure_topic(stack.bootstrap_servers, topic, records, records)
    # A 1 s window: the aggregator holds every tuple 1-2 s after the last one (15 s is the reference's).
    # Fitted to two cores (10 tasks per component on 2 executors), as every command runs it
    # (`make perf`, `make capacity`): the tasks, and so the routing, are those of one executor per task.
    result = run_storm_peer(stack.bootstrap_servers, topic, records, grouping,
                            extra=["--window-s", "1", *fitted_executors(0.0, cores=2)], timeout_s=300)
    assert result["ok"] and result["outcome"] == "complete"
    assert result["records_read"] == result["tuples_processed"] == result["tuples_aggregated"] == records
    assert result["settings"]["storm_version"].startswith("2.8.")
    assert result["settings"]["tasks"] == {"spout": 10, "splitter": 10, "worker": 10, "aggregator": 1}
    assert result["settings"]["executors"] == {"spout": 2, "splitter": 2, "worker": 2, "aggregator": 1}
    assert result["steady_rate"] > 0
    # Every tuple after the warm-up share (10 %) has a latency (here the recorded records' age).
    latency = latency_figures(result)
    assert latency["latency_tuples"] == records - records // 10
    assert 0 < latency["latency_p50_ms"] <= latency["latency_p99_ms"] <= latency["latency_max_ms"]

    table, read, _ = from_topic(get_dataset("COUNTRY_SKEW_R80", length=records), topic, stack.bootstrap_servers, 10)
    assert read == records
    workers, _ = route_table(table, grouping, 10, 10)
    assert result["worker_loads"] == [int(x) for x in figures(table, workers, 10).worker_loads]


def test_a_storm_capacity_step_on_a_paced_topic_is_measured_and_decided(stack, maven):
    import os
    import time

    from bench.capacity.decision import Thresholds, step_holds
    from bench.capacity.storm import run_storm_step

    # 4 s of COUNTRY_SKEW_R80 paced at 1,000 rec/s into a fresh topic while the peer reads it, after a
    # warm-up step of 4 s at 500 rec/s in the same JVM (not counted), with Storm's producer batch
    # size at 100 (the peer reports the setting it ran with).
    # Whether the step holds depends on what else the two cores run (other tests run beside this
    # one): the test checks that it was measured and that its decision is the thresholds' own
    # verdict on its figures, not that it held.
    step = run_storm_step(stack.bootstrap_servers, "COUNTRY_SKEW_R80", "KEY", 0.0, 1000.0, 4.0, 1.0, Thresholds(),
                          f"test.storm-step.{time.time_ns()}", producer_batch=100, warm_up_rate=500.0)
    assert (step["system"], step["producer_batch"], step["rate"]) == ("storm-b100", 100, 1000.0)
    assert step["p50_ms"] is not None, step["why"]  # the peer ran, or why not
    assert 0 < step["p50_ms"] <= step["p99_ms"]
    assert step["lag_slope"] is not None and step["max_lag"] is not None  # samples after the 1 s warm-up
    assert (step["holds"], step["why"]) == step_holds(step["p99_ms"], step["lag_slope"], 1000.0, Thresholds())
    assert step["cpu_us_per_record"] > 0 and 0 < step["hottest_share"] <= 1
    fitted = min(os.cpu_count() or 1, 10)
    assert step["executors"] == {"spout": fitted, "splitter": fitted, "worker": fitted, "aggregator": 1}
