"""The rescale peers' figures, computed here from their traces the same way for every system, and the
check of their final state against the harness's (no JVM, no Kafka)."""

from pathlib import Path

import pandas as pd
import pytest

from bench.peers.rescale import (
    PEERS,
    cell_row,
    event_figures,
    order_across_engines,
    parse_peers,
    run_peer,
    state_check,
    table_markdown,
)


def trace(rows):
    """rows: (key, unit, worker, release_ms or None, processed_ms)."""
    return pd.DataFrame(rows, columns=["key", "unit", "worker", "release_ms", "processed_ms"]).astype(
        {"release_ms": float, "processed_ms": float})


EVENT = {"request_wall_ms": 1_000, "in_force_wall_ms": 1_500, "moved_units": [7]}


def test_pause_is_the_longest_wait_of_a_released_tuple_of_a_moved_unit_over_the_event():
    t = trace([
        ("a", 7, 0, 900, 905),    # before the request
        ("a", 7, 0, 990, 995),
        ("b", 3, 1, 1_100, 1_105),  # not moved: never part of the pause
        ("a", 7, 2, 1_200, 1_700),  # released at 1,200, processed at 1,700: waited 500 ms
        ("a", 7, 2, 1_710, 1_720),
    ])
    f = event_figures(t, EVENT)
    assert f["pause_ms"] == 500  # 1,700 - max(995, 1,200): the time before its release is no pause
    assert f["rescale_ms"] == 500


def test_a_tuple_released_when_nothing_is_pending_waits_only_its_latency_and_an_unknown_release_is_the_plain_gap():
    idle = trace([("a", 7, 0, 900, 905), ("a", 7, 2, 3_000, 3_001)])
    assert event_figures(idle, EVENT)["pause_ms"] == 1  # released when nothing was pending: its own 1 ms
    unknown = trace([("a", 7, 0, None, 905), ("a", 7, 2, None, 1_805)])
    assert event_figures(unknown, EVENT)["pause_ms"] == 900
    after_in_force = trace([("a", 7, 0, 900, 1_600), ("a", 7, 2, 1_600, 2_600)])
    assert event_figures(after_in_force, EVENT)["pause_ms"] == 0  # the gap starts after the event


def test_windows_give_throughput_and_latency_before_during_and_after():
    t = trace([("k", 1, 0, ms - 10, ms) for ms in range(0, 1_000, 10)]            # 100 tuples, 10 ms each
              + [("k", 1, 0, ms - 200, ms) for ms in range(1_000, 1_500, 50)]     # 10 tuples, 200 ms each
              + [("k", 1, 0, ms - 20, ms) for ms in range(1_500, 2_500, 20)])     # 50 tuples, 20 ms each
    f = event_figures(t, EVENT)
    assert f["before"]["tuples"] == 100 and f["before"]["throughput"] == pytest.approx(100.0)
    assert f["during"]["throughput"] == pytest.approx(20.0) and f["during"]["latency_ms_p99"] == 200
    assert f["after"]["latency_ms_p50"] == 20 and f["after"]["tuples"] == 50
    assert event_figures(t, EVENT, until_ms=2_000)["after"]["tuples"] == 25
    ended = event_figures(t, {**EVENT, "in_force_wall_ms": 60_000})  # the input ended long before
    assert ended["during"]["throughput"] == pytest.approx(60 / 1.481)  # over 1,000-2,481 ms, not 59 s
    assert ended["after"] == {"tuples": 0, "throughput": None, "latency_ms_p50": None, "latency_ms_p99": None}


def state(rows):
    return pd.DataFrame(rows, columns=["key", "worker", "count", "sum", "first_ts_ms", "last_ts_ms"])


HARNESS = state([("LAX", 4, 3, 3, 10, 30), ("LAX", 9, 0, 0, 0, 0), ("SFO", 1, 2, 5, 11, 12)])


def test_per_key_state_equal_to_the_harness_whatever_the_split_over_workers():
    # the harness may hold a key on two workers (a moved key's emptied entry): totals per key count
    peer = state([("LAX", 4, 3, 3, 10, 30), ("SFO", 1, 2, 5, 11, 12)])
    check = state_check(peer, HARNESS, owners=True)
    assert check == {"keys": 2, "differing_keys": 0, "equal": True, "example": None, "owners_equal": True}


def test_a_differing_count_a_missing_key_or_another_owner_is_reported():
    off = state([("LAX", 4, 3, 3, 10, 31), ("SFO", 2, 2, 5, 11, 12)])
    check = state_check(off, HARNESS, owners=True)
    assert not check["equal"] and check["differing_keys"] == 1 and check["owners_equal"] is False
    assert check["example"] == "LAX: count 3 vs 3, sum 3 vs 3, first_ts_ms 10 vs 10, last_ts_ms 31 vs 30"
    missing = state_check(state([("LAX", 4, 3, 3, 10, 30)]), HARNESS)
    assert missing["differing_keys"] == 1 and missing["example"].startswith("SFO: count nan vs 2")
    assert missing["owners_equal"] is None


def test_peers_are_parsed_by_name_and_an_unknown_one_is_refused():
    assert [p.system for p in parse_peers("kstreams, FLINK,flink")] == ["kstreams", "flink"]
    assert parse_peers("") == [] and parse_peers(None) == []
    with pytest.raises(ValueError, match="unknown peer.*spark.*valid are flink, kstreams"):
        parse_peers("flink,spark")


def summary(pause, throughput=100.0, equal=True):
    return {"version": "2.2.1", "figures": {"pause_ms": pause, "rescale_ms": pause + 100.0,
                                            **{w: {"tuples": 0 if w == "after" else 10, "throughput": throughput,
                                                   "latency_ms_p99": 5.0} for w in ("before", "during", "after")}},
            "steps_ms": {"savepoint": pause / 2, "restore": pause / 4}, "moved_units": 96, "units": 128,
            "moved_keys": 40, "state_entries_moved": 40, "state_bytes_moved": 9_000,
            "state_check": {"equal": equal, "owners_equal": True, "example": None if equal else "LAX: ..."},
            "settings": {}}


def test_a_peer_row_takes_medians_over_its_runs_and_keeps_failures_and_differences():
    row = cell_row(PEERS["flink"], "STOP_THE_WORLD", "12 -> 10", [summary(1_000.0), {"error": "no READY in 180 s"}, summary(3_000.0, equal=False),
                                    summary(2_000.0)])
    assert row["runs"] == 4 and row["errors"] == ["no READY in 180 s"]
    assert row["pause_ms"] == 2_000 and row["pause_ms_runs"] == [1_000.0, 3_000.0, 2_000.0]
    assert row["steps_ms"] == {"restore": 500, "savepoint": 1_000}
    assert row["state_equal"] is False and row["state_differences"] == ["LAX: ..."]
    text = table_markdown([row], "conditions")
    assert "| 12 -> 10 | Flink 2.2.1 | STOP_THE_WORLD | 3 of 4 | 2,000 | 1,000 / 3,000 / 2,000 |" in text
    assert "| 96 of 128 |" in text and "| NO | yes |" in text
    assert "- Flink STOP_THE_WORLD, 12 -> 10: run failed: no READY in 180 s" in text
    assert ("- Flink STOP_THE_WORLD, 12 -> 10: no tuple processed after the rescale in any run: the input ended before the new assignment "
            "was in force") in text


def test_the_order_across_engines_goes_by_median_pause_with_the_spread():
    text = order_across_engines([("Spark KEY_GROUP STOP_THE_WORLD", 29_100.0, [28_000.0, 29_100.0, 30_500.0]),
                                 ("Kafka Streams LEARNER", 0.0, [0.0, 0.0, 0.0]),
                                 ("Flink STOP_THE_WORLD", 1_800.0, [1_700.0, 1_800.0, 2_400.0]),
                                 ("Spark VNODE HANDOFF", None, [])])
    assert text == ("Kafka Streams LEARNER 0 (0-0) < Flink STOP_THE_WORLD 1,800 (1,700-2,400) < "
                    "Spark KEY_GROUP STOP_THE_WORLD 29,100 (28,000-30,500)")


def test_a_peer_runs_only_its_own_protocols():
    assert PEERS["flink"].protocols == ("STOP_THE_WORLD", "ADAPTIVE_RESCALE") and PEERS["kstreams"].protocols == ("LEARNER",)
    with pytest.raises(ValueError, match="runs LEARNER, not STOP_THE_WORLD"):
        run_peer(PEERS["kstreams"], "127.0.0.1:1", "t", 10, "1s:12", Path("unused"), protocol="STOP_THE_WORLD")
