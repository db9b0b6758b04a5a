"""HANDOFF at a router, without Spark (bench/topology/handoff_router.py): pending units go to their
old owner, held units' tuples wait in the router's state, a whitelist sends them to the new owner
first; and the driver's rounds are the simulator's."""

from __future__ import annotations

import json
import pickle

import numpy as np
import pandas as pd
import pytest

from bench.rescale.handoff import rounds_of
from bench.rescale.ownership import PartialRouting, violations
from bench.rescale.plan import routing_at
from bench.topology.grouping_stage import route_batch
from bench.topology.handoff_router import HandoffState, HeldBelowWatermarkError, units_of

KEYS = [f"k{i}" for i in range(60)]


def batch(n: int, seed: int, t0: int = 1_700_000_000_000) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame({
        "partition": np.zeros(n, dtype=np.int32), "offset": np.arange(n, dtype=np.int64) + 1000 * seed,
        "idx": np.zeros(n, dtype=np.int32), "event_ms": t0 + np.arange(n, dtype=np.int64),
        "key": rng.choice(KEYS, size=n), "count": np.ones(n, dtype=np.int64),
    })


@pytest.fixture
def routings():
    before = routing_at("VNODE", 4, {}, [])
    after = routing_at("VNODE", 4, {}, [6])
    old, new = before.assignment(), after.assignment()
    moved = [u for u in range(len(old)) if old[u] != new[u]]
    hot = sorted({int(after.group_of(k)) for k in KEYS} & set(moved))
    return before, after, moved, hot


def scaleup(before, moved, hold) -> dict:
    return {"pending": {str(u): before.assignment()[u] for u in moved}, "hold": hold}


def route(state, rows, handoff, batch_id, watermark_ms=0):
    return route_batch(state, rows, grouping="VNODE", workers=4, params={}, clock="kafka", targets=(),
                       width=6, handoff=handoff, batch_id=batch_id, watermark_ms=watermark_ms)


def new_instance(after_targets=(6,)):
    out, state = route_batch(None, batch(0, 0), grouping="VNODE", workers=4, params={}, clock="kafka",
                             targets=after_targets, width=6)
    return state


def test_pending_units_go_to_their_old_owner_and_held_ones_wait_for_their_whitelist(routings):
    before, after, moved, hot = routings
    handoff = HandoffState()
    handoff.apply(1, scaleup(before, moved, hold=hot[:2]))
    state = new_instance()
    rows = batch(500, 1)
    out, state = route(state, rows, handoff, batch_id=7)
    units = units_of(after, rows["key"].to_numpy())
    held = np.isin(units, hot[:2])
    assert held.any() and len(out) == (~held).sum()  # the held units' tuples are kept
    for key, worker in zip(out["key"], out["worker"]):
        unit = after.group_of(key)
        assert worker == (before.owner_of(key) if unit in moved else after.owner_of(key))
    assert "released" not in json.loads(out["routed"].iloc[0])

    # whitelist round 0, hold round 1 (a step is applied once, however often it is read)
    step = {"whitelist": hot[:2], "hold": hot[2:4]}
    handoff.apply(2, step)
    handoff.apply(2, step)
    out2, state = route(state, batch(300, 2), handoff, batch_id=9)
    released = held.sum()
    first = out2.iloc[:released]  # the kept tuples go out first, in arrival order, to the new owner
    assert first["key"].tolist() == rows["key"][held].tolist()
    assert all(w == after.owner_of(k) for k, w in zip(first["key"], first["worker"]))
    assert json.loads(out2["routed"].iloc[0])["released"] == [[7, int(released)]]
    assert handoff.pending.keys() == set(moved) - set(hot[:2]) and handoff.held == set(hot[2:4])


def test_a_router_state_survives_pickling_with_its_kept_tuples(routings):
    before, _, moved, hot = routings
    handoff = HandoffState()
    handoff.apply(1, scaleup(before, moved, hold=hot))
    route(new_instance(), batch(200, 3), handoff, batch_id=4)
    copy = pickle.loads(pickle.dumps(handoff))
    assert copy.active and copy.pending == handoff.pending and copy.held == handoff.held
    assert copy.buffer["key"].tolist() == handoff.buffer["key"].tolist() and len(copy.buffer["key"]) > 0


def test_a_released_tuple_below_the_watermark_is_a_clear_error(routings):
    before, _, moved, hot = routings
    handoff = HandoffState()
    handoff.apply(1, scaleup(before, moved, hold=hot))
    state = new_instance()
    _, state = route(state, batch(200, 4), handoff, batch_id=1)
    handoff.apply(2, {"whitelist": hot, "hold": []})
    with pytest.raises(HeldBelowWatermarkError, match="--watermark-delay-s"):
        route(state, batch(10, 5, t0=1_800_000_000_000), handoff, batch_id=2, watermark_ms=1_750_000_000_000)


def test_a_step_naming_a_unit_that_is_not_pending_is_refused(routings):
    before, _, moved, hot = routings
    handoff = HandoffState()
    handoff.apply(1, scaleup(before, moved, hold=[]))
    not_moved = next(u for u in range(256) if u not in moved)
    with pytest.raises(ValueError, match="not pending"):
        handoff.apply(2, {"whitelist": [not_moved]})
    with pytest.raises(ValueError, match="not pending"):
        HandoffState().apply(1, {"hold": [moved[0]]})


def test_a_whole_hand_off_routes_every_tuple_once_and_never_to_a_worker_without_the_state(routings):
    """Round by round (batch 2), with a batch between each step as on Spark: every tuple comes out
    exactly once, and every routed pair is at the owner the ownership check expects then."""
    before, after, moved, hot = routings
    rounds = rounds_of(moved, set(hot), 2)
    handoff, state = HandoffState(), new_instance()
    sent, seen, switches, released = [], {}, [], set()
    batch_id = 0
    sent_in = 0
    for step in range(len(rounds) + 1):
        control = scaleup(before, moved, rounds[0]) if step == 0 else \
            {"whitelist": rounds[step - 1], "hold": rounds[step] if step < len(rounds) else []}
        handoff.apply(step + 1, control)
        if step:
            released |= set(rounds[step - 1])
            switches.append((batch_id, PartialRouting(before, after, frozenset(released))))
        for _ in range(2):  # the hold batch, then one more before the next step is read
            rows = batch(100, batch_id + 10)
            sent_in += len(rows)
            out, state = route(state, rows, handoff, batch_id)
            sent.append(out)
            seen[batch_id] = {"pairs": sorted(set(zip(out["key"], out["worker"])))}
            batch_id += 1
    assert not handoff.active
    assert sum(len(o) for o in sent) == sent_in
    assert violations(seen, switches, before) == []
    assert switches[-1][1].released == frozenset(moved)


def test_rounds_are_the_simulators_stateless_units_first_then_batch_by_batch():
    assert rounds_of([1, 2, 3, 5, 8], {2, 5, 8}, 1) == [[1, 3], [2], [5], [8]]
    assert rounds_of([1, 2, 3, 5, 8], {2, 5, 8}, 64) == [[1, 3], [2, 5, 8]]
    assert rounds_of([2, 5], {2, 5}, 1) == [[2], [5]]
    assert rounds_of([], set(), 1) == []
