"""The rescale peers (bench/peers/flink, bench/peers/kstreams): their JUnit tests, run by Maven, and one
run of each against the real broker of the project's stack, whose final state must be exact.

Java 17 and Maven are prerequisites of the whole project; these tests skip only when they are not on
PATH, and say so (the `maven` fixture; `stack` marks the runs `integration`).
"""

from __future__ import annotations

import json
import subprocess
from collections import defaultdict

import pytest

from bench.peers.peer_contract import CONTRACT, CONTRACT_FILE, PeerContract, parse_contract
from bench.peers.rescale import PEERS, run_peer
from bench.stack.maven import PEER_CONTRACT_DIR, build
from groupings.key_group import assign_to_key_group, operator_index_for_key_group
from tests.junit import junit_suites

JUNIT_SUITES = {
    "flink": {"KeyGroupsTest", "PeerOptionsTest", "WorkerFunctionTest", "SavepointRescaleTest", "AdaptiveRescaleTest"},
    "kstreams": {"KeyStateTest", "PeerOptionsTest", "RescaleTopologyTest"},
}


@pytest.mark.parametrize("system", sorted(JUNIT_SUITES))
def test_a_peer_passes_its_junit_tests(maven, system):
    suites, ran, failed = junit_suites(maven, PEERS[system].project)
    assert {f"bench.peers.{system}.{s}" for s in JUNIT_SUITES[system]} <= suites
    assert ran >= 2 * len(JUNIT_SUITES[system]) and failed == 0


def test_the_peers_contract_passes_its_junit_tests(maven):
    """What the peers share (bench/peers/contract: the command line's pairs, the schedule's syntax, the
    files a run leaves, the result line), tested once for all."""
    suites, ran, failed = junit_suites(maven, PEER_CONTRACT_DIR)
    assert {"bench.peers.contract.RescaleScheduleTest", "bench.peers.contract.PeerContractTest"} <= suites
    assert ran >= 10 and failed == 0


def java_contract(maven, tmp_path, text: str) -> PeerContract:
    """`PeerContract.main`'s reading of `text`, in a JVM of its own."""
    source = tmp_path / "peer-contract.properties"
    source.write_text(text, encoding="utf-8")
    classpath = ":".join(str(p) for p in build(PEER_CONTRACT_DIR, "rescale-peer-contract.jar", "the peers' contract",
                                               quiet=True))
    done = subprocess.run(["java", "-cp", classpath, "bench.peers.contract.PeerContract", str(source)],
                          capture_output=True, text=True, timeout=120)
    if done.returncode != 0:
        raise ValueError(done.stderr)
    ready, prefix, trace, state = done.stdout.splitlines()
    return PeerContract(ready, prefix, tuple(trace.split(",")), tuple(state.split(",")))


def test_both_languages_follow_a_change_of_the_peer_contract(maven, tmp_path):
    """CONTRACT_FILE is the one source of the lines and columns the peers and their driver agree on:
    as shipped, Java's and Python's readings are the driver's; edited (other lines, the columns
    reordered), both follow and agree; broken, both refuse it."""
    text = CONTRACT_FILE.read_text(encoding="utf-8")
    assert java_contract(maven, tmp_path, text) == parse_contract(text) == CONTRACT
    edited = (text.replace("ready.line = RESCALE_PEER_READY", "ready.line=GO")
              .replace("result.prefix = PEER_RESULT", " result.prefix =  DONE ")
              .replace("trace.columns = key, unit, worker,", "trace.columns = worker,key,unit,"))
    expected = PeerContract("GO", "DONE", ("worker", "key", "unit", "release_ms", "processed_ms"),
                            CONTRACT.state_columns)
    assert java_contract(maven, tmp_path, edited) == parse_contract(edited) == expected
    for broken, error in ((edited.replace("GO", "GO NOW"), "one word"),
                          (edited.replace("first_ts_ms, ", ""), "once"),
                          (edited + "colour = blue\n", "colour")):
        with pytest.raises(ValueError, match=error):
            parse_contract(broken)
        with pytest.raises(ValueError, match=error):
            java_contract(maven, tmp_path, broken)


@pytest.fixture(scope="module")
def recorded(stack):
    """2,000 NYC_FLIGHTS records on 10 partitions recorded at 2,000 records/s (1 s of Kafka
    timestamps), the exact per-key state they give ({key: [count, sum, first_ts_ms, last_ts_ms]}) and
    the records as `read_recorded` gives them."""
    from datasets import get_dataset
    from producers import replay
    from producers.recorded import read_recorded

    topic = "test.rescale-peers.nyc.n2000"
    assert replay(get_dataset("NYC_FLIGHTS"), topic, stack.bootstrap_servers, partitions=10, limit=2_000, rate=2_000,
                  progress=False, resume=True).ok
    expected: dict[str, list[int]] = {}
    recorded = read_recorded(stack.bootstrap_servers, topic)
    for r in recorded[1]:
        key = json.loads(r.value)["dest"]
        s = expected.setdefault(key, [0, 0, r.ts_ms, r.ts_ms])
        s[0] += 1
        s[1] += 1
        s[2], s[3] = min(s[2], r.ts_ms), max(s[3], r.ts_ms)
    return topic, expected, recorded


def state_of(run) -> dict[str, list[int]]:
    out: dict[str, list[int]] = defaultdict(lambda: [0, 0, 2**63, 0])
    for row in run.state.itertuples():
        s = out[row.key]
        s[0] += row.count
        s[1] += row.sum
        s[2], s[3] = min(s[2], row.first_ts_ms), max(s[3], row.last_ts_ms)
    return dict(out)


@pytest.mark.parametrize("protocol, steps", [("STOP_THE_WORLD", {"savepoint", "restore"}),
                                             ("ADAPTIVE_RESCALE", {"request", "wait_for_checkpoint", "restart"})])
def test_flink_rescales_10_to_12_and_keeps_every_keys_state_at_its_key_groups_owner(
        stack, maven, recorded, tmp_path, protocol, steps):
    """Either way Flink rescales (a savepoint and a restore; the adaptive scheduler restarting the running
    job from a checkpoint, which may replay records: each still counts once)."""
    topic, expected, records = recorded
    run = run_peer(PEERS["flink"], stack.bootstrap_servers, topic, 10, "500ms:12", tmp_path / "flink", timeout_s=300,
                   recorded=records, protocol=protocol)
    assert run.result["tuples_processed"] == run.result["records_read"] == 2_000
    assert len(run.trace) == 2_000  # one row per tuple, at its last processing
    assert state_of(run) == expected
    owners = {row.key: row.worker for row in run.state.itertuples()}
    assert owners == {k: operator_index_for_key_group(128, 12, assign_to_key_group(k, 128)) for k in expected}
    event = run.result["events"][0]
    assert (event["from_workers"], event["to_workers"]) == (10, 12)
    assert sorted(event["moved_units"]) == [g for g in range(128) if operator_index_for_key_group(128, 10, g)
                                            != operator_index_for_key_group(128, 12, g)]
    assert run.result["protocol"] == protocol and set(event["steps_ms"]) >= steps


def test_kafka_streams_scales_out_with_warm_up_tasks_and_keeps_every_keys_state(stack, maven, recorded, tmp_path):
    topic, expected, _ = recorded
    run = run_peer(PEERS["kstreams"], stack.bootstrap_servers, topic, 10, "500ms:12", tmp_path / "kstreams",
                   timeout_s=300)
    assert run.result["tuples_processed"] == run.result["records_read"] == 2_000
    assert state_of(run) == expected
    event = run.result["events"][0]
    assert (event["from_workers"], event["to_workers"]) == (10, 12) and event["moved_units"]
    assert run.result["protocol"] == "LEARNER" and event["state_entries_loaded_by_warm_ups"] > 0
    assert set(run.state["worker"]) <= set(range(12))
