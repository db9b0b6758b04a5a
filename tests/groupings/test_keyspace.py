"""The KeySpace against the spec: capacities (§7.1), HashMap order (§7.4), promotion (§7.6),
and worked example A (§7.9)."""

from __future__ import annotations

from collections import deque

import numpy as np
import pytest

from groupings import KeySpace
from groupings import _kernels
from groupings import keyspace as ks
from groupings.keyspace import generation_capacities


def _items(text: str) -> list[tuple[str, int]]:
    """'k06=7 k05=6' -> [('k06', 7), ('k05', 6)]"""
    return [(k, int(v)) for k, v in (item.split("=") for item in text.split())]


def test_generation_capacities() -> None:
    assert generation_capacities(100) == (10, 40, 50)
    assert generation_capacities(20) == (2, 8, 10)
    assert generation_capacities(0) == (0, 0, 0)
    d = np.arange(0, 200_001)
    old, teen, baby = (np.array([generation_capacities(int(x))[i] for x in d[::97]]) for i in range(3))
    assert (old == d[::97] // 10).all() and (teen == 4 * d[::97] // 10).all() and (baby == d[::97] // 2).all()


def test_default_map_capacities_and_baby_growth() -> None:
    space = KeySpace(100)
    assert space.map_capacities == (16, 64, 64)
    for i in range(48):
        space.record(f"key{i}")
    assert space.map_capacities == (16, 64, 64)
    space.record("one more")  # 49 > threshold 48
    assert space.map_capacities == (16, 64, 128)


def test_worked_example_a() -> None:
    space = KeySpace(20)
    assert (space.old_max, space.teen_max, space.baby_max) == (2, 8, 10)
    # 1. k00 once, k01 twice, ..., k14 15 times, each key's tuples consecutive.
    for i in range(15):
        for _ in range(i + 1):
            space.record(f"k{i:02d}", 0)
    assert space.baby_items() == _items(
        "k00=1 k11=12 k10=11 k02=3 k13=14 k01=2 k12=13 k04=5 k03=4 k14=15 k06=7 k05=6 k08=9 k07=8 k09=10"
    )
    assert space.map_capacities[2] == 32
    # 2. baby -> teen: k00..k04 are dropped with their counts.
    space.promote_to_teenage_space()
    assert space.baby_items() == _items("k06=7 k05=6")
    assert space.teen_items() == _items("k08=9 k07=8 k09=10 k11=12 k10=11 k13=14 k12=13 k14=15")
    assert all(space.find(f"k{i:02d}") is None for i in range(5))
    # 3. k00 re-enters at 20 (not 21); new1 30 times; baby -> teen.
    for _ in range(20):
        space.record("k00", 1)
    assert space.find("k00").count == 20
    for _ in range(30):
        space.record("new1", 2)
    space.promote_to_teenage_space()
    assert space.baby_items() == _items("k06=7 k05=6 k08=9 k07=8")
    assert space.teen_items() == _items("new1=30 k09=10 k00=20 k11=12 k10=11 k13=14 k12=13 k14=15")
    # 4. teen -> old.
    space.promote_to_old_space()
    assert space.old_items() == _items("new1=30 k00=20")
    assert space.teen_items() == _items("k09=10 k11=12 k10=11 k13=14 k12=13 k14=15")
    assert space.baby_items() == _items("k06=7 k05=6 k08=9 k07=8")
    assert space.in_old("new1") and not space.in_old("k09") and not space.in_old("nobody")
    item = space.find("new1")
    assert (item.key, item.count, item.generation, item.last_check) == ("new1", 30, "old", None)


def _promote(counts_from: list[int], counts_to: list[int], to_max: int) -> tuple[list[int], list[int]]:
    """Run the promotion on ids whose count is given; return both lists as counts."""
    space = KeySpace(10)
    table = space.table
    ids = [table.id_of(f"x{i}") for i in range(len(counts_from) + len(counts_to))]
    count = table.column(ks.COUNT_COLUMN)
    for key_id, c in zip(ids, counts_from + counts_to, strict=True):
        count[key_id] = c
    frm, to = deque(ids[: len(counts_from)]), deque(ids[len(counts_from) :])
    space._promote(frm, to, to_max)
    return [int(count[i]) for i in frm], [int(count[i]) for i in to]


def test_promotion_fills_at_the_front_so_the_block_is_reversed() -> None:
    # Fill 2 free slots: 9 then 8 go to the front -> [8, 9, 5]; moved = 2 < 3 leaves one swap
    # round: 7 > to[-1] = 5, so 7 goes to the front and 5 to the end of the from-list.
    assert _promote([9, 8, 7, 1], [5], 3) == ([1, 5], [7, 8, 9])


def test_promotion_phase_two_compares_with_the_last_element_and_appends_displaced() -> None:
    # to_max 2, to already full: two swap rounds at most. to[-1] is 9, not the minimum 1.
    assert _promote([5, 4], [1, 9], 2) == ([5, 4], [1, 9])
    # to[-1] = 3: 5 replaces it (front), 3 goes to the end of frm; then 4 > to[-1] = 1.
    assert _promote([5, 4], [1, 3], 2) == ([3, 1], [4, 5])
    # Equal counts never swap (strict >).
    assert _promote([3], [3, 3], 2) == ([3], [3, 3])


def test_promotion_shares_the_counter_between_phases() -> None:
    # 2 free slots filled (moved = 2 = to_max): no swap although 8 > 1.
    assert _promote([9, 8, 7], [], 2) == ([7], [8, 9])
    assert _promote([9, 8, 7], [1], 2) == ([7, 1], [8, 9])


def test_promotion_stops_when_the_from_list_is_empty() -> None:
    assert _promote([], [4], 3) == ([], [4])
    assert _promote([2], [], 3) == ([], [2])


def test_compiled_loop_constants_match_the_keyspace() -> None:
    assert (_kernels._NO_ITEM, _kernels._OLD, _kernels._NEVER) == (ks.NO_ITEM, ks.OLD, ks.NEVER)


def test_keyspace_rejects_a_table_without_java_hash() -> None:
    from groupings._keytable import KeyTable

    with pytest.raises(ValueError):
        KeySpace(10, table=KeyTable(5, seeds=(13,)))
    with pytest.raises(ValueError):
        KeySpace(-1)
