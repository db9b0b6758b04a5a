"""The public API contract (§1 and the issue): names, construction errors, bad input, clock clamp,
loads, pickling."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

import groupings
from groupings import GROUPINGS, REFERENCE_GROUPINGS, VARIANTS, create_grouping, grouping_parameters


def test_registered_names() -> None:
    assert REFERENCE_GROUPINGS == ("SHUFFLE", "KEY", "PARTIAL_KEY", "DYNAMIC_KEY")
    assert GROUPINGS == REFERENCE_GROUPINGS + ("D_CHOICES", "W_CHOICES", "KEY_GROUP", "VNODE")
    assert VARIANTS == ("DYNAMIC_KEY_DOWN",)
    for name in GROUPINGS + VARIANTS:
        g = create_grouping(name, 3)
        assert g.name == name and g.num_workers == 3
        assert g.loads.shape == (3,) and g.loads.dtype == np.int64


def test_dkg_parameters_and_defaults() -> None:
    assert grouping_parameters("DYNAMIC_KEY") == {
        "start_ms": 0,
        "distinct_key_count": 100,
        "warm_up_ms": 15000,
        "check_interval_ms": 60000,
        "initial_pool_size": 2,
        "maintenance_period_ms": 15000,
        "old_promotion_every": 4,
    }
    g = create_grouping("DYNAMIC_KEY", 5, start_ms=7, distinct_key_count=20)
    assert g.start_ms == 7 and g.keyspace.capacities == (2, 8, 10)


def test_unknown_name_lists_the_valid_names() -> None:
    with pytest.raises(ValueError, match="SHUFFLE, KEY, PARTIAL_KEY, DYNAMIC_KEY"):
        create_grouping("FIELDS", 5)


@pytest.mark.parametrize("bad", [0, -1, 2.5, 3.0, "3", None, True])
@pytest.mark.parametrize("name", GROUPINGS)
def test_bad_num_workers(name: str, bad: object) -> None:
    with pytest.raises(ValueError, match="num_workers"):
        create_grouping(name, bad)  # type: ignore[arg-type]


def test_numpy_integer_num_workers_is_accepted() -> None:
    assert create_grouping("KEY", np.int64(5)).num_workers == 5


@pytest.mark.parametrize("name", GROUPINGS)
def test_unknown_parameter_is_a_type_error_naming_it(name: str) -> None:
    with pytest.raises(TypeError, match="'bogus_param'"):
        create_grouping(name, 5, bogus_param=1)
    if name != "DYNAMIC_KEY":
        with pytest.raises(TypeError, match="'warm_up_ms'"):
            create_grouping(name, 5, warm_up_ms=1)


@pytest.mark.parametrize(
    "params",
    [
        {"initial_pool_size": 0},
        {"maintenance_period_ms": 0},
        {"old_promotion_every": 0},
        {"distinct_key_count": -1},
        {"warm_up_ms": 1.5},
        {"start_ms": "now"},
    ],
)
def test_bad_dkg_parameter_values(params: dict[str, object]) -> None:
    with pytest.raises(ValueError):
        create_grouping("DYNAMIC_KEY", 5, **params)  # type: ignore[arg-type]


@pytest.mark.parametrize("name", GROUPINGS)
def test_non_string_keys_are_converted_with_str(name: str) -> None:
    a, b = create_grouping(name, 7), create_grouping(name, 7)
    keys = [5, 2.5, ("t", 1), b"x", "5"]
    assert [a.choose(k, 0) for k in keys] == [b.choose(str(k), 0) for k in keys]
    c, d = create_grouping(name, 7), create_grouping(name, 7)
    assert c.route(keys, 0).tolist() == d.route([str(k) for k in keys], 0).tolist()
    assert np.array_equal(c.route(np.array(["x", "y"]), 0), d.route(["x", "y"], 0))


@pytest.mark.parametrize("name", GROUPINGS)
def test_none_key_is_rejected_before_any_routing(name: str) -> None:
    g = create_grouping(name, 4)
    g.choose("warm", 10)
    before = pickle.dumps(g)
    with pytest.raises(TypeError, match="None"):
        g.choose(None, 20)
    for batch in (["a", None, "b"], np.array(["a", None], dtype=object), ("a", None)):
        with pytest.raises(TypeError, match="None"):
            g.route(batch, 20)
    assert g == pickle.loads(before)  # nothing routed, clock unchanged
    assert g.last_now_ms == 10


@pytest.mark.parametrize("name", GROUPINGS)
def test_route_input_forms(name: str) -> None:
    keys = ["a", "b", "a", "c"]
    reference = create_grouping(name, 3)
    expected = [reference.choose(k, 100 + i) for i, k in enumerate(keys)]
    g = create_grouping(name, 3)
    out = g.route(iter(keys), np.arange(100, 104))  # any iterable; int array of times
    assert out.dtype == np.int32 and out.tolist() == expected
    assert create_grouping(name, 3).route(keys, np.arange(100, 104, dtype=np.int32)).tolist() == expected
    empty = g.route([], np.zeros(0, dtype=np.int64))
    assert empty.shape == (0,) and empty.dtype == np.int32
    assert g == reference
    with pytest.raises(ValueError, match="shape"):
        g.route(keys, np.arange(3))
    with pytest.raises(ValueError, match="integers"):
        g.route(keys, np.arange(4, dtype=np.float64))
    with pytest.raises(ValueError, match="now_ms"):
        g.choose("a", 1.5)  # type: ignore[arg-type]


def test_scalar_time_on_an_empty_batch_does_not_move_the_clock() -> None:
    g = create_grouping("DYNAMIC_KEY", 3, start_ms=5)
    g.route([], 10**9)
    assert g.last_now_ms == 5


@pytest.mark.parametrize("name", GROUPINGS)
def test_earlier_time_is_treated_as_the_last_one_seen(name: str) -> None:
    dkg = {"maintenance_period_ms": 10, "warm_up_ms": 0, "check_interval_ms": 5, "distinct_key_count": 10}
    params = dkg if name == "DYNAMIC_KEY" else {}
    keys = ["Turkey"] * 50 + ["K1", "K2"] * 10 + ["Turkey"] * 100
    times = [1000 + 7 * i if i % 3 else 1000 + 7 * i - 500 for i in range(len(keys))]
    clamped = np.maximum.accumulate(times).tolist()
    a = create_grouping(name, 4, start_ms=1000, **params)
    b = create_grouping(name, 4, start_ms=1000, **params)
    assert [a.choose(k, t) for k, t in zip(keys, times, strict=True)] == [
        b.choose(k, t) for k, t in zip(keys, clamped, strict=True)
    ]
    assert a == b and a.last_now_ms == clamped[-1]
    # A time before start_ms is start_ms (the instance was prepared then).
    c = create_grouping(name, 4, start_ms=1000, **params)
    c.choose("x", 0)
    assert c.last_now_ms == 1000


@pytest.mark.parametrize("name", GROUPINGS + VARIANTS)
def test_pickle_roundtrip_is_equal(name: str) -> None:
    g = create_grouping(name, 6, start_ms=0, **({"maintenance_period_ms": 100} if "DYN" in name else {}))
    g.route([f"k{i % 17}" for i in range(3000)], np.arange(3000, dtype=np.int64) * 3)
    copy = pickle.loads(pickle.dumps(g))
    assert copy == g and copy is not g
    assert (copy.loads == g.loads).all()
    copy.choose("k1", 10**6)
    assert copy != g


def test_grouping_state_holds_no_compiled_objects() -> None:
    g = create_grouping("DYNAMIC_KEY", 4)
    g.route(["a"] * 10, 0)
    text = pickle.dumps(g)
    assert b"numba" not in text and b"Dispatcher" not in text


def test_package_imports_nothing_of_spark_kafka_or_numba() -> None:
    import subprocess
    import sys

    code = (
        "import sys, groupings; "
        "bad = [m for m in sys.modules if m.split('.')[0] in "
        "('pyspark', 'confluent_kafka', 'kafka', 'numba', 'pandas', 'datasets', 'bench')]; "
        "print(','.join(bad))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         cwd=str(__import__("pathlib").Path(groupings.__file__).parents[1]))
    assert out.stdout.strip() == ""


@pytest.mark.parametrize(
    ("name", "module"), [("KEY", "groupings.key"), ("PARTIAL_KEY", "groupings.key")]  # HashCachedGrouping
)
def test_hash_cache_is_bounded_and_not_pickled(
    name: str, module: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    import importlib

    keys = [f"k{i % 50}" for i in range(500)]
    expected = create_grouping(name, 7).route(keys, 0).tolist()
    monkeypatch.setattr(importlib.import_module(module), "CACHE_LIMIT", 5)
    g = create_grouping(name, 7)
    assert g.route(keys[:250], 0).tolist() + g.route(keys[250:], 0).tolist() == expected
    assert len(g._table) == 50  # reset before the second batch, then refilled
    other = create_grouping(name, 7)
    assert [other.choose(k, 0) for k in keys] == expected and len(other._table) <= 6
    assert b"k49" not in pickle.dumps(g)
