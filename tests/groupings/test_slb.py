"""D_CHOICES, W_CHOICES and their SpaceSaving summary (dkg-reference.md Appendix A).

The oracle is the authors' own code run on the real libraries: `slb_oracle/SlbTrace.java` is
SLBStorm's `DChoiceGrouping`/`WChoiceGrouping` on stream-lib's `StreamSummary` and Guava's
murmur3; `slb_oracle/vectors.json.gz` holds its output (every tuple's worker, and the final
`topK(100)` with counts and errors) for 13 cases on two 20,000-tuple streams.
"""

from __future__ import annotations

import gzip
import json
import math
import pickle
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from groupings import create_grouping
from groupings.hashing import as_long
from groupings.slb import choice_count, d_choice_index, d_choice_seeds, head_threshold
from groupings.space_saving import SpaceSaving

SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
ORACLE = json.loads(gzip.open(Path(__file__).parent / "slb_oracle" / "vectors.json.gz", "rt").read())
CASES = ORACLE["cases"]


def _case_id(case: dict) -> str:
    return f"{case['grouping']}-n{case['workers']}-T{case['t']}-{case['stream']}"


# -- the authors' code as oracle -----------------------------------------------------------------

@pytest.mark.parametrize("case", CASES, ids=_case_id)
def test_route_equals_the_authors_code(case: dict) -> None:
    keys = ORACLE["streams"][case["stream"]]
    g = create_grouping(case["grouping"], case["workers"], t=case["t"])
    tasks = np.concatenate([g.route(keys[i : i + 3001], 0) for i in range(0, len(keys), 3001)])
    first = np.flatnonzero(tasks != np.array(case["tasks"]))
    assert first.size == 0, f"first difference at tuple {first[0]} of {len(keys)}"
    assert [[c.key, c.count, c.error] for c in g.sketch.top_k()] == case["top_k"]


@pytest.mark.parametrize("case", [c for c in CASES if c["workers"] == 10], ids=_case_id)
def test_choose_equals_the_authors_code(case: dict) -> None:
    keys = ORACLE["streams"][case["stream"]][:5000]
    g = create_grouping(case["grouping"], case["workers"], t=case["t"])
    assert [g.choose(k, 0) for k in keys] == case["tasks"][:5000]


def test_oracle_covers_head_and_tail_and_every_d() -> None:
    """The cases exercise both paths: head shares between 17 % and 100 % of the tuples."""
    shares = []
    for case in CASES:
        g = create_grouping(case["grouping"], case["workers"], t=case["t"])
        g.route(ORACLE["streams"][case["stream"]], 0)
        shares.append(g.head_loads.sum() / g.messages)
    assert min(shares) < 0.2 and max(shares) == 1.0


# -- SpaceSaving against exact counts ------------------------------------------------------------

@SETTINGS
@given(
    keys=st.lists(st.integers(0, 60).map(lambda i: f"k{i}"), min_size=1, max_size=600),
    capacity=st.integers(1, 20),
)
def test_space_saving_error_bounds(keys: list[str], capacity: int) -> None:
    """Metwally et al.: count - error <= true <= count, sum of counts = m, error <= m/capacity,
    and every key more frequent than m/capacity is monitored."""
    sketch = SpaceSaving(capacity)
    for k in keys:
        sketch.offer(k)
    exact = Counter(keys)
    counters = sketch.top_k()
    assert len(counters) == min(capacity, len(exact))
    assert sum(c.count for c in counters) == len(keys)
    for c in counters:
        assert c.count - c.error <= exact[c.key] <= c.count
        assert c.error <= len(keys) / capacity
    top = sketch.top_slot  # kept up to date per offer; must be topK(1)
    assert sketch.table.key_of(int(sketch.ids[top])) == counters[0].key
    monitored = {c.key for c in counters}
    assert {k for k, v in exact.items() if v > len(keys) / capacity} <= monitored


def test_space_saving_finds_the_top_keys() -> None:
    rng = np.random.default_rng(3)
    keys = [f"z{int(x)}" for x in rng.zipf(1.5, 50_000)]
    sketch = SpaceSaving(100)
    for k in keys:
        sketch.offer(k)
    exact_top = [k for k, _ in Counter(keys).most_common(10)]
    assert [c.key for c in sketch.top_k(10)] == exact_top


def test_space_saving_tie_rules_of_stream_lib() -> None:
    """Evict the counter longest in the smallest bucket; topK: count down, then bucket order."""
    sketch = SpaceSaving(2)
    for k in ["a", "b", "c"]:  # c takes a's counter: a joined bucket 1 first
        sketch.offer(k)
    assert [(c.key, c.count, c.error) for c in sketch.top_k()] == [("c", 2, 1), ("b", 1, 0)]
    sketch.offer("d")  # b is alone in the smallest bucket
    assert [(c.key, c.count, c.error) for c in sketch.top_k()] == [("c", 2, 1), ("d", 2, 1)]
    sketch.offer("e")  # bucket 2 holds c then d: c goes
    assert [(c.key, c.count, c.error) for c in sketch.top_k()] == [("e", 3, 2), ("d", 2, 1)]
    assert sketch.counter("c") is None and sketch.counter("e").count == 3


def test_space_saving_pickles_with_its_keys() -> None:
    sketch = SpaceSaving(5)
    for k in "abcabcdefgaa":
        sketch.offer(k)
    copy = pickle.loads(pickle.dumps(sketch))
    assert copy == sketch and copy.top_k() == sketch.top_k()
    copy.offer("z")
    assert copy != sketch


# -- the pure rules ------------------------------------------------------------------------------

def test_seeds_are_consecutive_primes_from_two() -> None:
    assert d_choice_seeds(8) == (2, 3, 5, 7, 11, 13, 17, 19)


@pytest.mark.parametrize("key", ["Turkey", "K000", "", "ÅÄÖ"])
def test_d_choice_index_is_guava_as_int_mod_n(key: str) -> None:
    """`asInt()` is the low 32 bits of the first long (Guava's HashCode contract)."""
    for seed in d_choice_seeds(6):
        low = as_long(seed, key) & 0xFFFFFFFF
        signed = low - 2**32 if low >= 2**31 else low
        for n in (1, 5, 10, 7):
            assert d_choice_index(seed, key, n) == abs(int(math.fmod(signed, n)))


def test_head_threshold_is_java_float() -> None:
    assert head_threshold(10, 10) == np.float32(0.02)
    assert head_threshold(3, 7).dtype == np.float32


@SETTINGS
@given(
    n=st.integers(2, 60),
    p_top=st.floats(0.001, 1.0),
    rest=st.floats(0.0, 1.0),
    head_size=st.integers(1, 100),
)
def test_choice_count_is_the_smallest_d_from_round_p_top_n(
    n: int, p_top: float, rest: float, head_size: int
) -> None:
    p_head = p_top + rest * (1 - p_top)
    d = choice_count(p_top, p_head, head_size, n, 1e-4)
    start = max(1, math.floor(p_top * n + 0.5))
    assert d >= start

    def holds(x: int) -> bool:
        b = (n - 1) / n
        h, t = 1 - b ** (head_size * x), 1 - b**x
        return (
            p_head + (1 - p_head) * h * h <= h + 1e-4
            and p_top + (p_head - p_top) * t**x + (1 - p_head) * t * t <= t + 1e-4
        )

    assert all(not holds(x) for x in range(start, min(d, n)))
    if start <= d < n:
        assert holds(d)


# -- the groupings -------------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["D_CHOICES", "W_CHOICES"])
def test_head_and_tail_rules_tuple_by_tuple(name: str) -> None:
    """Head tuples: W to the least loaded worker, D to the least loaded of its d hash choices
    (every worker when d >= n); tail tuples: PARTIAL_KEY's rule on the same local loads."""
    rng = np.random.default_rng(11)
    keys = [f"z{int(x)}" for x in rng.zipf(1.3, 4000)]
    n = 8
    g = create_grouping(name, n)
    pkg = create_grouping("PARTIAL_KEY", n)
    heads = 0
    for k in keys:
        before, head_before = g.loads, g.head_loads.sum()
        task = g.choose(k, 0)
        if g.head_loads.sum() > head_before:
            heads += 1
            assert g.is_head(k)
            if name == "W_CHOICES" or g.head_choices() >= n:
                candidates = list(range(n))
            else:
                candidates = [d_choice_index(s, k, n) for s in d_choice_seeds(g.head_choices())]
            assert before[task] == min(before[c] for c in candidates) and task in candidates
        else:
            assert not g.is_head(k)
            a, b = pkg.choices(k)
            assert task == (b if before[a] > before[b] else a)
    assert 500 < heads < len(keys)


def test_route_equals_choose_and_pickles_mid_stream() -> None:
    rng = np.random.default_rng(5)
    keys = [f"z{int(x)}" for x in rng.zipf(1.2, 12_000)]
    for name in ("D_CHOICES", "W_CHOICES"):
        a, b = create_grouping(name, 12, t=5), create_grouping(name, 12, t=5)
        first = [a.choose(k, 0) for k in keys[:6000]]
        assert first == b.route(keys[:6000], 0).tolist()
        assert a == b
        b = pickle.loads(pickle.dumps(b))  # a Spark checkpoint between batches
        assert a == b
        assert [a.choose(k, 0) for k in keys[6000:]] == b.route(keys[6000:], 0).tolist()


def test_w_choices_is_at_least_as_balanced_as_pkg_on_a_hot_key() -> None:
    keys = ["hot" if i % 2 else f"k{i % 97}" for i in range(20_000)]
    loads = {}
    for name in ("PARTIAL_KEY", "W_CHOICES", "D_CHOICES"):
        g = create_grouping(name, 10)
        g.route(keys, 0)
        loads[name] = g.loads
    assert loads["W_CHOICES"].max() - loads["W_CHOICES"].min() <= 2 < np.ptp(loads["PARTIAL_KEY"])
    assert loads["D_CHOICES"].max() < loads["PARTIAL_KEY"].max()


@pytest.mark.parametrize(
    ("params", "named"),
    [
        ({"t": 0}, "t (T"),
        ({"t": -1.5}, "t (T"),
        ({"t": float("nan")}, "t (T"),
        ({"t": True}, "t (T"),
        ({"epsilon": -0.1}, "epsilon"),
        ({"epsilon": float("inf")}, "epsilon"),
    ],
)
def test_bad_parameters_name_the_parameter(params: dict, named: str) -> None:
    name = "D_CHOICES" if "epsilon" in params else "W_CHOICES"
    with pytest.raises(ValueError, match=r"must be a finite number") as err:
        create_grouping(name, 10, **params)
    assert named in str(err.value)


def test_w_choices_takes_no_epsilon() -> None:
    with pytest.raises(TypeError, match="epsilon"):
        create_grouping("W_CHOICES", 10, epsilon=0.1)


@pytest.mark.parametrize("name", ["D_CHOICES", "W_CHOICES"])
def test_a_key_cache_restart_changes_no_decision(name: str, monkeypatch) -> None:
    """Past CACHE_LIMIT keys the hash cache starts afresh; the summary moves onto the new one."""
    rng = np.random.default_rng(9)
    keys = [f"z{int(x)}" for x in rng.zipf(1.2, 20_000)]
    expected = create_grouping(name, 7).route(keys, 0)
    monkeypatch.setattr("groupings.slb.CACHE_LIMIT", 64)
    g = create_grouping(name, 7)
    tasks = np.concatenate([g.route(keys[i : i + 500], 0) for i in range(0, len(keys), 500)])
    assert np.array_equal(tasks, expected)
    assert len(g._table) < len(set(keys))  # the cache did restart
