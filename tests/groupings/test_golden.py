"""Every public golden vector of the spec (§15): scenarios, pool events, first routings, full
trace MD5s, small vectors B and D, thresholds. Built from the golden stream definition (§14)."""

from __future__ import annotations

import gzip
import hashlib
from functools import cache
from pathlib import Path

import numpy as np
import pytest
from golden_stream import T0, ProtocolRun, golden_keys, run_protocol

from bench.metrics import dist_cost_of_routing, std_dev_percent
from groupings import create_grouping
from groupings.dynamic_key import scale_thresholds


@cache
def protocol(name: str, n: int, sources: int, mode: str = "route") -> ProtocolRun:
    return run_protocol(name, n, sources, mode=mode)


# §15.1: (algo, n, S) -> (per-task counts, STD_DEV, pairs, Turkey's tasks)
SCENARIOS = {
    ("SHUFFLE", 5, 1): ([12000] * 5, 0.0, 1005, set(range(5))),
    ("KEY", 5, 1): ([50437, 1812, 2725, 2758, 2268], 32.0360, 201, {0}),
    ("PARTIAL_KEY", 5, 1): ([25113, 25114, 3257, 3258, 3258], 17.8452, 272, {0, 1}),
    ("DYNAMIC_KEY", 5, 1): ([14269, 13801, 13800, 13799, 4331], 6.3980, 369, {0, 1, 2, 3}),
    ("SHUFFLE", 10, 10): ([6000] * 10, 0.0, 2006, set(range(10))),
    ("KEY", 10, 10): ([1208, 840, 1171, 1705, 1298, 49229, 972, 1554, 1053, 970], 24.0199, 201, {5}),
    ("PARTIAL_KEY", 10, 10): (
        [1405, 1386, 1398, 1408, 1401, 24404, 24403, 1405, 1401, 1389], 15.3363, 329, {5, 6}
    ),
    ("DYNAMIC_KEY", 10, 10): (
        [8993, 1339, 1237, 1632, 1383, 9404, 9012, 9000, 9000, 9000], 6.2677, 411, {0, 5, 6, 7, 8, 9}
    ),
}


@pytest.mark.parametrize("scenario", list(SCENARIOS), ids=lambda s: f"{s[0]}-n{s[1]}-S{s[2]}")
def test_scenario_figures(scenario: tuple[str, int, int]) -> None:
    name, n, sources = scenario
    counts, std_dev, pairs, turkey_tasks = SCENARIOS[scenario]
    run = protocol(name, n, sources)
    per_task = np.bincount(run.tasks, minlength=n)
    assert per_task.tolist() == counts
    # Per-instance loads add up to the same per-task counts.
    assert sum(g.loads for g in run.instances).tolist() == counts
    assert round(std_dev_percent(per_task, n), 4) == pytest.approx(std_dev, abs=1e-9)
    cost, distinct_pairs, distinct_keys = dist_cost_of_routing(run.keys, run.tasks)
    assert (distinct_pairs, distinct_keys) == (pairs, 201)
    assert cost == pytest.approx(pairs / 201)
    keys = np.array(run.keys)
    assert set(run.tasks[keys == "Turkey"].tolist()) == turkey_tasks


@pytest.mark.parametrize(("name", "sources"), [("PARTIAL_KEY", 1), ("DYNAMIC_KEY", 1), ("DYNAMIC_KEY", 10)])
def test_route_equals_choose_on_the_golden_stream(name: str, sources: int) -> None:
    n = 5 if sources == 1 else 10
    fast, slow = protocol(name, n, sources), protocol(name, n, sources, "choose")
    assert np.array_equal(fast.tasks, slow.tasks)
    assert fast.instances == slow.instances  # the whole state, KeySpace included


@pytest.mark.parametrize(
    ("n", "sources", "events", "pools", "old"),
    [
        (
            5, 1,
            [(60.015, 2, 3), (120.020, 3, 4), (180.030, 4, 3), (240.035, 3, 4)],
            {"Turkey": 4},
            "K008 K022 K035 K049 K054 K065 K071 K077 K125 Turkey",
        ),
        (
            10, 10,
            [(60.150, 2, 3), (120.200, 3, 4), (180.250, 4, 5), (240.300, 5, 6)],
            {"K000": 5, "K009": 3, "K060": 3, "K076": 3, "K125": 3, "Turkey": 6},
            "K000 K009 K035 K037 K070 K076 K110 K119 K125 Turkey",
        ),
    ],
)  # fmt: skip
def test_dkg_pool_events_and_final_state(n, sources, events, pools, old) -> None:  # type: ignore[no-untyped-def]
    run = protocol("DYNAMIC_KEY", n, sources, "choose")
    assert run.pool_events == [pytest.approx(e) for e in events]
    first = run.instances[0]
    assert first.pool_sizes() == pools
    assert sorted(key for key, _ in first.keyspace.old_items()) == old.split()


FIRST_30 = {
    "DYNAMIC_KEY": "0 1 0 1 2 0 1 0 1 3 0 1 0 4 1 0 1 0 1 2 0 4 1 0 1 0 1 4 0 1",
    "PARTIAL_KEY": "0 1 0 1 2 0 1 0 1 3 0 1 0 4 1 0 1 0 1 2 0 4 1 0 1 2 0 3 1 0",
    "KEY": "0 0 0 0 2 0 0 0 0 3 0 0 0 4 0 0 0 0 0 2 0 4 0 0 0 0 0 4 0 0",
    "SHUFFLE": "0 1 2 3 4 0 1 2 3 4 0 1 2 3 4 0 1 2 3 4 0 1 2 3 4 0 1 2 3 4",
}


def test_first_30_keys() -> None:
    expected = ["Turkey"] * 4 + ["K190", "Turkey", "K031", "Turkey", "Turkey", "K084"] + ["Turkey"] * 3
    expected += ["K192"] + ["Turkey"] * 5 + ["K041", "K142", "K015"] + ["Turkey"] * 3
    expected += ["K126", "Turkey", "K053", "Turkey", "Turkey"]
    assert golden_keys(30) == expected


@pytest.mark.parametrize("name", list(FIRST_30))
def test_first_30_routings(name: str) -> None:
    expected = [int(t) for t in FIRST_30[name].split()]
    assert protocol(name, 5, 1, "choose").tasks[:30].tolist() == expected
    assert protocol(name, 5, 1).tasks[:30].tolist() == expected


TRACES = {
    "SHUFFLE": ("trace_sg_n5_s1_skew80.txt.gz", "c4d07be296daf565ce21e5222993e2fc"),
    "KEY": ("trace_kg_n5_s1_skew80.txt.gz", "4e750b2474a8e2e89ca1af6635a78da1"),
    "PARTIAL_KEY": ("trace_pkg_n5_s1_skew80.txt.gz", "9f20bcee72819e599b27cafc5861a9d2"),
    "DYNAMIC_KEY": ("trace_dkg_n5_s1_skew80.txt.gz", "f24da4d0d2852666f5dc702049bcbc51"),
}


@pytest.mark.parametrize("mode", ["route", "choose"])
@pytest.mark.parametrize("name", list(TRACES))
def test_full_trace_md5(name: str, mode: str, golden_dir: Path) -> None:
    filename, md5 = TRACES[name]
    text = protocol(name, 5, 1, mode).trace_text(1)
    if hashlib.md5(text.encode("ascii")).hexdigest() != md5:
        reference = gzip.decompress((golden_dir / filename).read_bytes()).decode("ascii").splitlines()
        ours = text.splitlines()
        differs = (i for i, (a, b) in enumerate(zip(ours, reference)) if a != b)
        first = next(differs, min(len(ours), len(reference)))
        pytest.fail(f"{name} ({mode}) trace differs from {filename} first at line {first}: "
                    f"ours {ours[first:first + 1]} vs reference {reference[first:first + 1]}")


@pytest.mark.parametrize("name", list(TRACES))
def test_golden_files_match_their_published_md5(name: str, golden_dir: Path) -> None:
    filename, md5 = TRACES[name]
    text = gzip.decompress((golden_dir / filename).read_bytes())
    assert hashlib.md5(text).hexdigest() == md5
    assert text.count(b"\n") == 60_000 and text.endswith(b"\n")


OTHERS = ["Germany", "France", "Spain", "Italy", "Brazil", "Japan", "Chile"]


def small_keys(count: int) -> list[str]:
    """§15.5: `Turkey` if i mod 10 < 8 else OTHERS[(i // 10) mod 7]."""
    return ["Turkey" if i % 10 < 8 else OTHERS[(i // 10) % 7] for i in range(count)]


@pytest.mark.parametrize("check_interval_ms", [60000, 0, -1, 10**12])
def test_small_vector_b(check_interval_ms: int) -> None:
    expected = "0 1 0 1 0 1 0 1 0 1 0 1 0 1 0 1 0 1 2 2 0 1 0 1 0 1 0 1 3 4 0 1 0 1 0 1 0 1 3 4"
    keys = small_keys(1000)
    for mode in ("choose", "route"):
        g = create_grouping("DYNAMIC_KEY", 5, start_ms=T0, check_interval_ms=check_interval_ms)
        if mode == "choose":
            tasks = [g.choose(k, T0) for k in keys]
        else:
            tasks = g.route(keys, T0).tolist()
        assert tasks[:40] == [int(t) for t in expected.split()], mode
        assert np.bincount(tasks, minlength=5).tolist() == [419, 411, 62, 59, 49], mode
        assert g.loads.tolist() == [419, 411, 62, 59, 49]
        assert g.pool_sizes() == {} and g.keyspace.old_items() == []


def _expand(text: str) -> list[int]:
    """'0 x18 1 1' -> [0]*18 + [1, 1]"""
    out: list[int] = []
    for token in text.split():
        if token.startswith("x"):
            out += [out.pop()] * int(token[1:])
        else:
            out.append(int(token))
    return out


@pytest.mark.parametrize(
    ("n", "name", "expected"),
    [
        (5, "KEY", "0 x18 1 1"),
        (5, "PARTIAL_KEY", "0 1 0 1 0 1 0 1 3 3 0 1 0 1 0 1 0 1 4 4"),
        (5, "SHUFFLE", "0 1 2 3 4 " * 4),
        (10, "KEY", "5 x18 1 1"),
        (10, "PARTIAL_KEY", "5 6 5 6 5 6 5 6 3 3 5 6 5 6 5 6 5 6 1 9"),
        (10, "SHUFFLE", "0 1 2 3 4 5 6 7 8 9 " * 2),
    ],
)
def test_small_vector_d(n: int, name: str, expected: str) -> None:
    keys = small_keys(20)
    g = create_grouping(name, n)
    assert [g.choose(k, 0) for k in keys] == _expand(expected)
    assert create_grouping(name, n).route(keys, 0).tolist() == _expand(expected)


# §6.2: n -> (up, down)
THRESHOLDS = {1: (110, 90), 2: (57, 42), 3: (39, 27), 4: (30, 20), 5: (24, 15), 10: (13, 6),
              20: (7, 2), 50: (3, 0), 100: (2, 0), 101: (1, 0), 261: (1, 0), 262: (0, 0), 1000: (0, 0)}
UP = {6: 20, 7: 18, 8: 16, 9: 14, 11: 12, 12: 11, 13: 10, 14: 9, 15: 9, 16: 8, 17: 8, 18: 7, 19: 7,
      20: 7, 21: 6, 25: 6, 26: 5, 31: 5, 32: 4, 41: 4, 42: 3, 58: 3, 59: 2, 100: 2}  # fmt: skip


def test_thresholds() -> None:
    for n, pair in THRESHOLDS.items():
        assert scale_thresholds(n) == pair, n
    for n, up in UP.items():
        assert scale_thresholds(n)[0] == up, n
    g = create_grouping("DYNAMIC_KEY", 10)
    assert (g.up, g.down) == (13, 6)


def test_perf_stream_is_the_golden_stream() -> None:
    """`make perf` keeps its own copy of the generator (bench must not import tests)."""
    from golden_stream import golden_now_ms

    from bench.perf import routing

    assert routing.golden_keys(5000) == golden_keys(5000)
    assert np.array_equal(routing.golden_now_ms(5000), golden_now_ms(5000))
