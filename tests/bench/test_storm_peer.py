"""The Storm peer (`bench/peers/storm`): one end-to-end run on a small topic whose per-worker loads
must equal the simulator's (its Java groupings' own tests: tests/groupings/test_jvm_groupings.py).

Java 17 and Maven are prerequisites of the whole project (the Kafka broker and Spark's jars need
them); these tests skip only when they are not on PATH, and say so (the `maven` fixture, which also
marks them `maven`; `stack` marks the end-to-end run `integration`).
"""

from __future__ import annotations

import pytest

from bench.perf.peers import run_storm_peer


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
    result = run_storm_peer(stack.bootstrap_servers, topic, records, grouping, extra=["--window-s", "1"],
                            timeout_s=300)
    assert result["ok"] and result["outcome"] == "complete"
    assert result["records_read"] == result["tuples_processed"] == result["tuples_aggregated"] == records
    assert result["settings"]["storm_version"].startswith("2.8.")
    assert result["steady_rate"] > 0

    table, read, _ = from_topic(get_dataset("COUNTRY_SKEW_R80", length=records), topic, stack.bootstrap_servers, 10)
    assert read == records
    workers, _ = route_table(table, grouping, 10, 10)
    assert result["worker_loads"] == [int(x) for x in figures(table, workers, 10).worker_loads]
