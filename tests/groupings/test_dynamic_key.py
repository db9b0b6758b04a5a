"""DYNAMIC_KEY specifics beyond the golden vectors: check timing (§6.5), lazy maintenance (§8),
the Q1 variant, the read-only KeySpace view."""

from __future__ import annotations

import numpy as np
import pytest

from groupings import create_grouping
from groupings.dynamic_key import DynamicKeyGrouping, integer_load_percent


def test_integer_load_percent() -> None:
    assert integer_load_percent(0, 0) == 0
    assert integer_load_percent(1, 3) == 33
    assert integer_load_percent(2, 3) == 66
    assert integer_load_percent(5, 5) == 100


def test_first_check_fires_on_the_second_occurrence_and_uses_the_slot() -> None:
    g = create_grouping("DYNAMIC_KEY", 5, start_ms=10**6)
    g.choose("Turkey", 10**6)
    assert g.keyspace.find("Turkey").last_check is None  # the 1st tuple creates the item
    g.choose("Turkey", 10**6 + 5)
    assert g.keyspace.find("Turkey").last_check == 10**6 + 5  # checked during warm-up
    g.choose("Turkey", 10**6 + 60005)  # 60000 is not > 60000
    assert g.keyspace.find("Turkey").last_check == 10**6 + 5
    g.choose("Turkey", 10**6 + 60006)
    assert g.keyspace.find("Turkey").last_check == 10**6 + 60006


def test_maintenance_runs_lazily_before_the_first_tuple_at_or_after_each_due_time() -> None:
    g = create_grouping("DYNAMIC_KEY", 5, start_ms=0, distinct_key_count=20)
    for _ in range(3):
        g.choose("a", 14_999)
    assert g.keyspace.baby_items() == [("a", 3)] and g.keyspace.teen_items() == []
    g.choose("b", 15_000)  # cycle 1 (due at 15 s) runs first: a -> teen, then b enters baby
    assert g.keyspace.teen_items() == [("a", 3)] and g.keyspace.baby_items() == [("b", 1)]
    assert g.next_cycle_due_ms == 30_000
    g.choose("b", 45_000)  # cycles 2 and 3 back to back; cycle 3 also promotes teen -> old
    assert sorted(g.keyspace.old_items()) == [("a", 3), ("b", 2)]  # b counted after the cycles
    assert g.keyspace.teen_items() == [] and g.keyspace.baby_items() == []
    assert g.keyspace.in_old("a") and g.next_cycle_due_ms == 60_000


def _stream(seed: int, count: int) -> tuple[list[str], np.ndarray]:
    rng = np.random.default_rng(seed)
    hot = rng.random(count) < 0.7
    keys = np.where(hot, "hot", np.char.add("k", rng.integers(0, 40, count).astype(str)))
    times = np.cumsum(rng.integers(0, 30, count))
    return keys.tolist(), times


@pytest.mark.parametrize("check_interval_ms", [50, 0, -1])
def test_pools_grow_and_shrink_and_route_matches_choose(check_interval_ms: int) -> None:
    keys, times = _stream(1, 20_000)
    params = dict(start_ms=0, warm_up_ms=100, check_interval_ms=check_interval_ms,
                  maintenance_period_ms=200, distinct_key_count=20)  # fmt: skip
    a = create_grouping("DYNAMIC_KEY", 8, **params)
    b = create_grouping("DYNAMIC_KEY", 8, **params)
    sizes = []
    for k, t in zip(keys, times.tolist(), strict=True):
        a.choose(k, t)
        sizes.append(a.pool_size("hot"))
    steps = np.diff(sizes)
    assert (steps > 0).any() and (steps < 0).any()  # both rules fired
    assert max(sizes) <= 8
    chunks = np.array_split(np.arange(len(keys)), 7)
    out = np.concatenate([b.route([keys[i] for i in c], times[c]) for c in chunks])
    assert out.tolist() == _tasks_by_choose(keys, times, params)
    assert a == b


def _tasks_by_choose(keys: list[str], times: np.ndarray, params: dict) -> list[int]:
    g = create_grouping("DYNAMIC_KEY", 8, **params)
    return [g.choose(k, t) for k, t in zip(keys, times.tolist(), strict=True)]


def test_variant_down_differs_only_in_the_shrink_rule() -> None:
    keys, times = _stream(2, 20_000)
    params = dict(start_ms=0, warm_up_ms=100, check_interval_ms=50, maintenance_period_ms=200,
                  distinct_key_count=20)  # fmt: skip
    ref = create_grouping("DYNAMIC_KEY", 8, **params)
    down = create_grouping("DYNAMIC_KEY_DOWN", 8, **params)
    assert (down.up, down.down) == (ref.up, ref.down) == (16, 8)
    a, b = ref.route(keys, times), down.route(keys, times)
    assert not np.array_equal(a, b)
    again = create_grouping("DYNAMIC_KEY_DOWN", 8, **params)
    assert [again.choose(k, t) for k, t in zip(keys, times.tolist(), strict=True)] == b.tolist()


def test_idle_cycles_are_fast_forwarded_with_the_same_result(monkeypatch: pytest.MonkeyPatch) -> None:
    keys, times = _stream(3, 3000)
    params = dict(start_ms=0, maintenance_period_ms=10, distinct_key_count=30, warm_up_ms=0,
                  check_interval_ms=20)  # fmt: skip
    fast = create_grouping("DYNAMIC_KEY", 6, **params)
    slow = create_grouping("DYNAMIC_KEY", 6, **params)
    slow.fast_forward_idle_cycles = False
    runs = {"fast": 0}
    real = DynamicKeyGrouping._run_cycle

    def counting(self, k):  # type: ignore[no-untyped-def]
        if self is fast:
            runs["fast"] += 1
        real(self, k)

    monkeypatch.setattr(DynamicKeyGrouping, "_run_cycle", counting)
    gap_cycles = {}
    for g in (fast, slow):
        g.route(keys, times)
        before = runs["fast"]
        g.route(keys[:5], times[-1] + 100_007)  # a gap of 10,000 cycles
        gap_cycles[g is fast] = runs["fast"] - before
        g.route(keys, times + times[-1] + 200_000)
    assert fast == slow
    assert fast.route(keys, times[-1] + 10**6).tolist() == slow.route(keys, times[-1] + 10**6).tolist()
    assert fast == slow
    assert gap_cycles[True] < 100  # the gap was skipped once the KeySpace stopped changing


def test_epoch_times_with_default_start_do_not_replay_every_cycle() -> None:
    # start_ms = 0 and then epoch milliseconds: ~1.1e8 due cycles on an empty KeySpace.
    now = 1_700_000_000_000
    g = create_grouping("DYNAMIC_KEY", 5)
    h = create_grouping("DYNAMIC_KEY", 5, start_ms=now)
    assert g.route(["a", "b", "a"], now).tolist() == [h.choose(k, now) for k in ["a", "b", "a"]]
    assert g.next_cycle_due_ms == now + 15000 - now % 15000


def test_keyspace_view_is_read_only() -> None:
    g = create_grouping("DYNAMIC_KEY", 5)
    g.choose("x", 0)
    view = g.keyspace
    assert view.baby_items() == [("x", 1)] and len(view) == 1
    assert not hasattr(view, "record") and not hasattr(view, "promote_to_teenage_space")
    assert g.pool_size("x") == 2 and g.pool_size("never seen") == 2 and g.total == 1


def test_key_table_compaction_changes_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    import groupings.dynamic_key as dkg

    rng = np.random.default_rng(4)
    count = 30_000
    cold = np.char.add("k", rng.integers(0, 5000, count).astype(str))
    keys = np.where(rng.random(count) < 0.5, "hot", cold).tolist()
    times = np.cumsum(rng.integers(0, 20, count))
    params = dict(start_ms=0, maintenance_period_ms=500, distinct_key_count=20, warm_up_ms=0,
                  check_interval_ms=100)  # fmt: skip
    plain = create_grouping("DYNAMIC_KEY", 6, **params)
    monkeypatch.setattr(dkg, "_MIN_DEAD_KEYS", 16)
    compacting = create_grouping("DYNAMIC_KEY", 6, **params)
    by_tuple = create_grouping("DYNAMIC_KEY", 6, **params)
    chunks = np.array_split(np.arange(count), 9)
    a = np.concatenate([plain.route([keys[i] for i in c], times[c]) for c in chunks])
    b = np.concatenate([compacting.route([keys[i] for i in c], times[c]) for c in chunks])
    c = [by_tuple.choose(k, t) for k, t in zip(keys, times.tolist(), strict=True)]
    assert a.tolist() == b.tolist() == c
    assert plain == compacting == by_tuple
    assert len(compacting._table) < len(plain._table)  # it did forget dead keys
    assert len(by_tuple._table) < 5000


def test_pickled_state_keeps_only_keys_with_state() -> None:
    import pickle

    g = create_grouping("DYNAMIC_KEY", 4, distinct_key_count=10)  # baby keeps 5 keys per cycle
    g.route([f"k{i}" for i in range(1000)], 0)
    g.choose("k1", 15_000)  # cycle 1 drops all but the top-5 baby keys
    copy = pickle.loads(pickle.dumps(g))
    assert copy == g and len(copy._table) <= 10
    batch = ["k1", "k999", "new"]
    assert copy.route(batch, 16_000).tolist() == g.route(batch, 16_000).tolist()
