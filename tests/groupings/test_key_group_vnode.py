"""KEY_GROUP and VNODE: the public vectors of rescaling.md §1-2 (computed with Flink's own jar),
the API contract of the groupings issue (assignment, reschedule), properties, and bad parameters."""

from __future__ import annotations

import zlib
from collections import Counter

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from groupings import create_grouping
from groupings.hashing import java_string_hash
from groupings.key_group import (
    assign_to_key_group,
    default_max_parallelism,
    flink_murmur_hash,
    key_group_range,
)
from groupings.vnode import minimal_move_owners, vnode_of

SETTINGS = settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])

PARALLELISMS = (1, 3, 4, 5, 10, 12, 16, 20)

# key: (String.hashCode, murmurHash, kg maxP 128, kg maxP 256, ops maxP 256, ops maxP 128)  (§1)
FLINK_VECTORS = {
    "Turkey": (-1778564402, 1910255032, 56, 184, (0, 2, 2, 3, 7, 8, 11, 14), (0, 1, 1, 2, 4, 5, 7, 8)),
    "Germany": (1588421523, 549910552, 24, 24, (0, 0, 0, 0, 0, 1, 1, 1), (0, 0, 0, 0, 1, 2, 3, 3)),
    "Afghanistan": (-884569212, 444408451, 3, 131, (0, 1, 2, 2, 5, 6, 8, 10), (0, 0, 0, 0, 0, 0, 0, 0)),
    "Zimbabwe": (-148183597, 606917262, 14, 142, (0, 1, 2, 2, 5, 6, 8, 11), (0, 0, 0, 0, 1, 1, 1, 2)),
    "turkey": (-862431570, 158921518, 46, 46, (0, 0, 0, 0, 1, 2, 2, 3), (0, 1, 1, 1, 3, 4, 5, 7)),
    "ElectionDay": (-1920795485, 249712881, 113, 241, (0, 2, 3, 4, 9, 11, 15, 18), (0, 2, 3, 4, 8, 10, 14, 17)),
    "": (0, 593689054, 94, 222, (0, 2, 3, 4, 8, 10, 13, 17), (0, 2, 2, 3, 7, 8, 11, 14)),
    "K000": (2281989, 349611135, 127, 127, (0, 1, 1, 2, 4, 5, 7, 9), (0, 2, 3, 4, 9, 11, 15, 19)),
}

# key: (crc32, vnode of 256)  (§2)
VNODE_VECTORS = {"Turkey": (2735251025, 81), "Germany": (2501228727, 183), "Afghanistan": (3963072919, 151),
                 "Zimbabwe": (2099115062, 54), "": (0, 0), "K000": (2963661807, 239)}


# -- KEY_GROUP: Flink's vectors ------------------------------------------------------------------

@pytest.mark.parametrize("key", FLINK_VECTORS)
def test_flink_hash_and_key_group_vectors(key: str) -> None:
    string_hash, murmur, kg128, kg256, _, _ = FLINK_VECTORS[key]
    assert java_string_hash(key) == string_hash % 2**32
    assert flink_murmur_hash(string_hash) == flink_murmur_hash(string_hash % 2**32) == murmur
    assert assign_to_key_group(key, 128) == kg128
    assert assign_to_key_group(key, 256) == kg256


@pytest.mark.parametrize("key", FLINK_VECTORS)
@pytest.mark.parametrize("max_parallelism", [256, 128])
def test_flink_operator_index_vectors(key: str, max_parallelism: int) -> None:
    expected = FLINK_VECTORS[key][4 if max_parallelism == 256 else 5]
    for p, op in zip(PARALLELISMS, expected, strict=True):
        g = create_grouping("KEY_GROUP", p, max_parallelism=max_parallelism)
        assert g.choose(key, 0) == op
        assert g.route([key, key], 0).tolist() == [op, op]


def test_murmur_hash_of_int_min_is_made_non_negative() -> None:
    # Flink returns -c for a negative c, and 0 for Integer.MIN_VALUE: every result is >= 0.
    for code in (-(2**31), 2**31 - 1, -1, 1, 0, 123456789):
        assert 0 <= flink_murmur_hash(code) < 2**31


def test_default_max_parallelism_is_flinks_rule() -> None:
    assert [default_max_parallelism(p) for p in (1, 10, 85, 86, 100, 1000, 30000)] == [
        128, 128, 128, 256, 256, 2048, 32768]
    assert create_grouping("KEY_GROUP", 10).max_parallelism == 128
    assert create_grouping("KEY_GROUP", 100).max_parallelism == 256


def test_flink_ranges_vectors() -> None:
    assert [key_group_range(256, 4, i) for i in range(4)] == [
        range(0, 64), range(64, 128), range(128, 192), range(192, 256)]
    assert [key_group_range(256, 5, i) for i in range(5)] == [
        range(0, 52), range(52, 103), range(103, 154), range(154, 205), range(205, 256)]


def test_key_group_rescale_4_to_5_moves_126_of_256() -> None:
    g = create_grouping("KEY_GROUP", 4, max_parallelism=256)
    moved = g.reschedule(5)
    assert len(moved) == 126 and moved == sorted(moved)
    assert g.workers == (0, 1, 2, 3, 4) and g.num_workers == 5
    assert Counter(g.assignment()) == {0: 52, 1: 51, 2: 51, 3: 51, 4: 51}


@SETTINGS
@given(data=st.data())
def test_key_group_assignment_equals_flinks_ranges(data: st.DataObject) -> None:
    max_parallelism = data.draw(st.integers(1, 1024), label="M")
    n = data.draw(st.integers(1, max_parallelism), label="n")
    owners = create_grouping("KEY_GROUP", n, max_parallelism=max_parallelism).assignment()
    assert len(owners) == max_parallelism
    expected = [-1] * max_parallelism
    for i in range(n):
        for kg in key_group_range(max_parallelism, n, i):
            expected[kg] = i
    assert owners == expected  # every key group in exactly one worker's range, ranges contiguous


# -- VNODE ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("key", VNODE_VECTORS)
def test_vnode_vectors(key: str) -> None:
    crc, vnode = VNODE_VECTORS[key]
    assert zlib.crc32(key.encode()) == crc
    assert vnode_of(key, 256) == vnode


def test_vnode_initial_owners_are_the_key_group_ranges() -> None:
    for n in (1, 3, 4, 5, 10):
        assert create_grouping("VNODE", n).assignment() == create_grouping(
            "KEY_GROUP", n, max_parallelism=256).assignment()


def test_vnode_reschedule_4_to_5_moves_51() -> None:
    g = create_grouping("VNODE", 4)
    moved = g.reschedule(5)
    assert len(moved) == 51
    owners = g.assignment()
    assert Counter(owners) == {0: 52, 1: 51, 2: 51, 3: 51, 4: 51}
    new_worker = [v for v, w in enumerate(owners) if w == 4]
    assert new_worker == [*range(52, 64), *range(115, 128), *range(179, 192), *range(243, 256)]
    assert moved == new_worker


def test_vnode_reschedule_2_to_3_moves_85() -> None:
    assert len(create_grouping("VNODE", 2).reschedule(3)) == 85


def test_vnode_risingwave_style_changes() -> None:
    g = create_grouping("VNODE", 10)
    before = g.assignment()
    moved = g.reschedule(["+10", "+11"])
    assert g.workers == tuple(range(12)) and g.num_workers == 12 and len(moved) == 42
    g.reschedule(["-3"])
    assert g.workers == (0, 1, 2, *range(4, 12)) and 3 not in g.assignment()
    assert g.num_workers == 12 and g.loads.shape == (12,)  # worker 3 stays an idle id
    assert g.reschedule(list(range(10))) and g.num_workers == 10
    assert sorted(set(g.assignment())) == list(range(10)) and len(before) == 256


@st.composite
def vnode_histories(draw: st.DrawFn) -> tuple[int, list[list[int]]]:
    vnodes = draw(st.integers(1, 300), label="V")
    sets = draw(st.lists(st.sets(st.integers(0, 20), min_size=1, max_size=min(vnodes, 15)),
                         min_size=1, max_size=4), label="worker sets")
    return vnodes, [sorted(s) for s in sets]


@SETTINGS
@given(vnode_histories())
def test_vnode_reschedule_moves_exactly_the_surplus_and_the_removed(history: tuple[int, list[list[int]]]) -> None:
    vnodes, sets = history
    n0 = min(vnodes, 4)
    g = create_grouping("VNODE", n0, vnodes=vnodes)
    for workers in sets:
        owners = g.assignment()
        held = Counter(owners)
        base, extra = divmod(vnodes, len(workers))
        ranked = sorted(workers, key=lambda w: (-held[w], w))
        quota = {w: base + (rank < extra) for rank, w in enumerate(ranked)}
        removed = sum(c for w, c in held.items() if w not in quota)
        surplus = sum(max(0, held[w] - quota[w]) for w in workers)
        moved = g.reschedule(workers)
        assert len(moved) == surplus + removed
        after = Counter(g.assignment())
        assert dict(after) == {w: q for w, q in quota.items() if q}  # every worker at its quota
        assert moved == [v for v in range(vnodes) if owners[v] != g.assignment()[v]]


def test_minimal_move_is_pure() -> None:
    owners = [0] * 10 + [1] * 6
    assert minimal_move_owners(owners, [0, 1]) == [0] * 8 + [1] * 2 + [1] * 6
    assert owners == [0] * 10 + [1] * 6


# -- both: routing follows the assignment, state, errors ----------------------------------------

@pytest.mark.parametrize(("name", "params"), [("KEY_GROUP", {"max_parallelism": 64}), ("VNODE", {"vnodes": 64})])
def test_routing_follows_the_assignment_across_a_reschedule(name: str, params: dict) -> None:
    keys = [f"k{i}" for i in range(500)]
    g = create_grouping(name, 4, **params)
    first = g.route(keys, 0)
    assert first.tolist() == [g.assignment()[g.group_of(k)] for k in keys]
    moved = set(g.reschedule(6))
    second = g.route(keys, 0)
    assert second.tolist() == [g.owner_of(k) for k in keys]
    changed = {g.group_of(k) for k, a, b in zip(keys, first, second, strict=True) if a != b}
    assert changed <= moved
    assert g.loads.shape == (6,) and g.loads.sum() == 1000
    assert np.array_equal(g.loads[:4], np.bincount(first, minlength=4) + np.bincount(second, minlength=6)[:4])


@pytest.mark.parametrize(
    ("name", "params", "match"),
    [
        ("KEY_GROUP", {"max_parallelism": 4}, r"max_parallelism must be in \[num_workers, 32768\] = \[5, 32768\], got 4"),
        ("KEY_GROUP", {"max_parallelism": 40000}, "max_parallelism must be in"),
        ("KEY_GROUP", {"max_parallelism": 12.5}, "max_parallelism must be an integer"),
        ("VNODE", {"vnodes": 3}, r"vnodes must be in \[num_workers, 32768\] = \[5, 32768\], got 3"),
        ("VNODE", {"vnodes": 0}, "vnodes must be in"),
    ],
)
def test_bad_parameters_name_the_parameter_and_the_range(name: str, params: dict, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        create_grouping(name, 5, **params)


@pytest.mark.parametrize(
    ("target", "match"),
    [
        (0, "cannot reschedule to 0 workers"),
        ([], "cannot reschedule to 0 workers"),
        (["-0", "-1", "-2", "-3"], "removes every worker"),
        (["-7"], "cannot remove worker 7: unknown id"),
        (["+2"], "cannot add worker 2: it is already one"),
        ([1, 1], "duplicate worker ids"),
        ([-3], "worker ids must be >= 0"),
        (["x"], "a worker change is"),
        (100, "more workers than groups: 100 workers > 64"),
        ("4", "reschedule takes a worker count"),
    ],
)
@pytest.mark.parametrize("name", ["KEY_GROUP", "VNODE"])
def test_bad_reschedule_is_one_clear_error_and_changes_nothing(name: str, target: object, match: str) -> None:
    params = {"max_parallelism": 64} if name == "KEY_GROUP" else {"vnodes": 64}
    g = create_grouping(name, 4, **params)
    before = g.assignment()
    with pytest.raises(ValueError, match=match):
        g.reschedule(target)  # type: ignore[arg-type]
    assert g.assignment() == before and g.workers == (0, 1, 2, 3)


@pytest.mark.parametrize("name", ["KEY_GROUP", "VNODE"])
def test_choose_equals_route_past_the_key_cache_growth(name: str) -> None:
    """Regression: `choose` read the group column before interning grew it (IndexError at key 17)."""
    keys = [f"key-{i}" for i in range(200)] * 2
    a, b = create_grouping(name, 7), create_grouping(name, 7)
    assert [a.choose(k, 0) for k in keys] == b.route(keys, 0).tolist()
