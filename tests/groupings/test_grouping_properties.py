"""Property tests (hypothesis): batch routing equals tuple routing, KEY is a pure function of
the key, PARTIAL_KEY picks one of its two choices, DKG pools stay in bounds, and pickling mid-stream
changes nothing."""

from __future__ import annotations

import pickle
from typing import Any

import numpy as np
from hypothesis import HealthCheck, assume, event, given, settings
from hypothesis import strategies as st

from groupings import GROUPINGS, VARIANTS, create_grouping
from groupings.hashing import index

SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# A few keys, drawn with a skew, so that keys repeat, reach old space and scale their pools.
KEYS = ["Turkey", "Germany", "K000", "K001", "K002", "K003", "Türkiye", "", "a\ud800b"]
key_st = st.one_of(
    st.sampled_from(KEYS[:1]), st.sampled_from(KEYS[:1]), st.sampled_from(KEYS), st.integers(0, 3)
)


@st.composite
def streams(draw: Any, min_size: int = 0, max_size: int = 300) -> tuple[list[Any], list[int]]:
    """Keys and times; times mostly advance by 0-40 ms, with occasional jumps and steps back."""
    keys = draw(st.lists(key_st, min_size=min_size, max_size=max_size))
    steps = draw(
        st.lists(
            st.one_of(st.integers(0, 40), st.integers(-50, 0), st.integers(0, 5000)),
            min_size=len(keys), max_size=len(keys),
        )
    )  # fmt: skip
    start = draw(st.integers(-1000, 10**6))
    return keys, (start + np.cumsum(steps, dtype=np.int64)).tolist() if keys else []


@st.composite
def groupings_params(draw: Any, dkg_only: bool = False) -> tuple[str, int, dict[str, Any]]:
    """A grouping name, n and parameters; half of the DKG draws favour pool scaling."""
    dkg_names = tuple(name for name in GROUPINGS + VARIANTS if name.startswith("DYNAMIC_KEY"))
    name = draw(st.sampled_from(dkg_names if dkg_only else GROUPINGS + VARIANTS))
    params: dict[str, Any] = {"start_ms": draw(st.integers(-1000, 10**6))}
    if not name.startswith("DYNAMIC_KEY"):
        return name, draw(st.integers(1, 12)), params
    if draw(st.booleans()):  # anything goes
        n = draw(st.integers(1, 12))
        params.update(
            distinct_key_count=draw(st.integers(0, 30)),
            warm_up_ms=draw(st.integers(-10, 200)),
            check_interval_ms=draw(st.integers(-5, 300)),
            initial_pool_size=draw(st.integers(1, 3)),
            maintenance_period_ms=draw(st.integers(1, 200)),
            old_promotion_every=draw(st.integers(1, 5)),
        )
    else:  # old space, short warm-up, frequent checks and cycles: pools grow and shrink
        n = draw(st.integers(3, 12))
        params.update(
            distinct_key_count=draw(st.integers(10, 40)),
            warm_up_ms=draw(st.integers(-10, 50)),
            check_interval_ms=draw(st.integers(-5, 60)),
            initial_pool_size=draw(st.integers(1, 3)),
            maintenance_period_ms=draw(st.integers(1, 50)),
            old_promotion_every=draw(st.integers(1, 3)),
        )
    return name, n, params


def _split(count: int, cuts: list[int]) -> list[tuple[int, int]]:
    bounds = sorted({0, count, *(c % (count + 1) for c in cuts)})
    return list(zip(bounds[:-1], bounds[1:], strict=True))


@SETTINGS
@given(groupings_params(), streams(), st.lists(st.integers(0, 10**6), max_size=4))
def test_route_equals_successive_choose(config, stream, cuts) -> None:  # type: ignore[no-untyped-def]
    name, n, params = config
    keys, times = stream
    by_tuple = create_grouping(name, n, **params)
    by_batch = create_grouping(name, n, **params)
    expected = [by_tuple.choose(k, t) for k, t in zip(keys, times, strict=True)]
    got: list[int] = []
    for lo, hi in _split(len(keys), cuts):
        got += by_batch.route(keys[lo:hi], np.array(times[lo:hi], dtype=np.int64)).tolist()
    assert got == expected
    assert by_batch == by_tuple
    assert by_batch.loads.sum() == len(keys)
    if name.startswith("DYNAMIC_KEY") and by_tuple.pool_sizes():
        event("a pool changed size")


@SETTINGS
@given(st.lists(st.text(max_size=8), min_size=1, max_size=50), st.integers(1, 100), st.integers(0, 10))
def test_key_is_a_pure_function_of_the_key(keys: list[str], n: int, shift: int) -> None:
    g = create_grouping("KEY", n)
    other = create_grouping("KEY", n)
    other.route(keys[shift:] + ["warm-up"], 0)  # a different history changes nothing
    assert [g.choose(k, 0) for k in keys] == [index(13, k, n) for k in keys]
    assert other.route(keys, 5).tolist() == [index(13, k, n) for k in keys]


@SETTINGS
@given(streams(max_size=400), st.integers(1, 12))
def test_partial_key_picks_one_of_the_two_choices(stream, n: int) -> None:  # type: ignore[no-untyped-def]
    keys, times = stream
    g = create_grouping("PARTIAL_KEY", n)
    for key, task in zip(keys, g.route(keys, np.array(times, dtype=np.int64)).tolist(), strict=True):
        assert task in (index(13, str(key), n), index(17, str(key), n))


@SETTINGS
@given(groupings_params(dkg_only=True), streams(min_size=50, max_size=400))
def test_dkg_pool_stays_within_bounds(config, stream) -> None:  # type: ignore[no-untyped-def]
    name, n, params = config
    assume(params["initial_pool_size"] <= n)
    keys, times = stream
    g = create_grouping(name, n, **params)
    initial = params["initial_pool_size"]
    for key, t in zip(keys, times, strict=True):
        task = g.choose(key, t)
        size = g.pool_size(key)
        assert initial <= size <= n
        home = index(13, str(key), n)
        assert (task - home) % n < max(size + 1, initial)  # within the pool (or the new member)
    assert all(initial < s <= n for s in g.pool_sizes().values())


@SETTINGS
@given(groupings_params(), streams(), st.integers(0, 10**6))
def test_pickling_mid_stream_changes_nothing(config, stream, cut: int) -> None:  # type: ignore[no-untyped-def]
    name, n, params = config
    keys, times = stream
    cut = cut % (len(keys) + 1)
    g = create_grouping(name, n, **params)
    g.route(keys[:cut], np.array(times[:cut], dtype=np.int64))
    copy = pickle.loads(pickle.dumps(g))
    assert copy == g
    rest_keys, rest_times = keys[cut:], np.array(times[cut:], dtype=np.int64)
    assert copy.route(rest_keys, rest_times).tolist() == g.route(rest_keys, rest_times).tolist()
    assert copy == g
