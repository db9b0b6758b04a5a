"""groupings.rescaling: schedules, the cost model, KEY's reschedule, protocol construction."""

from __future__ import annotations

import pytest

from groupings import create_grouping
from groupings.rescaling import CostModel, check_schedule, handoff_rounds, make_protocol, parse_schedule
from groupings.rescaling.schedule import RescaleEvent


def test_schedules_parse_counts_and_worker_changes():
    assert parse_schedule("150s:12,240s:8") == [RescaleEvent(150_000, 12), RescaleEvent(240_000, 8)]
    assert parse_schedule("150s:+10,+11") == [RescaleEvent(150_000, None, ("+10", "+11"))]
    assert parse_schedule("150s:-3, 4m:+3") == [RescaleEvent(150_000, None, ("-3",)),
                                                 RescaleEvent(240_000, None, ("+3",))]
    assert parse_schedule("1500ms:2")[0].at_ms == 1500


@pytest.mark.parametrize("text,message", [
    ("", "empty"), ("150s:0", "0 workers"), ("150s:12,150s:8", "same time"), ("x:3", "bad rescale time"),
    ("150s:+a", "bad worker change"), ("150s:12,+3", "bad rescale item"), ("200s:3,100s:4", "increasing time"),
    ("150s:many", "worker count"),
])
def test_bad_schedules_are_clear_errors(text, message):
    with pytest.raises(ValueError, match=message):
        parse_schedule(text)


def test_schedules_are_checked_against_the_input_and_the_routing():
    g = create_grouping("VNODE", 10)
    with pytest.raises(ValueError, match="beyond the input"):
        check_schedule(parse_schedule("300s:12"), 299_995, g)
    with pytest.raises(ValueError, match="cannot remove worker 10"):
        check_schedule(parse_schedule("10s:-10"), 299_995, g)
    with pytest.raises(ValueError, match="cannot add worker 3"):
        check_schedule(parse_schedule("10s:+3"), 299_995, g)
    check_schedule(parse_schedule("10s:+10,+11,20s:-3"), 299_995, g)
    assert g.workers == tuple(range(10))  # the check leaves the grouping unchanged


def test_key_reschedules_by_hash_mod_the_new_n():
    g = create_grouping("KEY", 10)
    before = {k: g.owner_of(k) for k in ("Turkey", "K000", "K001")}
    assert before["Turkey"] == 5  # the reference's hot worker (dkg-reference.md §15.1)
    assert g.reschedule(["+10", "+11"]) == []
    assert g.num_workers == 12 and g.workers == tuple(range(12))
    keys = [f"K{i:03d}" for i in range(200)] + ["Turkey"]
    route = g.route(keys, [0] * len(keys))
    assert route.tolist() == [g.owner_of(k) for k in keys]
    with pytest.raises(ValueError, match="0..n-1"):
        g.reschedule(["-3"])
    with pytest.raises(ValueError, match=">= 1"):
        g.reschedule(0)


def test_the_cost_model_is_named_and_checked():
    cost = CostModel.from_assignments({"restart_ms": 100, "acceptable_lag_entries": 5})
    assert cost.restart_ms == 100.0 and cost.acceptable_lag_entries == 5
    assert cost.transfer_ms(10, 100_000_000) == pytest.approx(10 * 0.002 + 1000.0)
    with pytest.raises(ValueError, match="unknown cost parameter"):
        CostModel.from_assignments({"warp": 1})
    with pytest.raises(ValueError, match="must be a number >= 0"):
        CostModel(restart_ms=-1)


def test_protocols_are_built_by_name():
    assert make_protocol("handoff", batch=4).batch == 4
    with pytest.raises(ValueError, match="unknown rescale protocol"):
        make_protocol("PAXOS")
    with pytest.raises(ValueError, match=">= 1"):
        make_protocol("HANDOFF", batch=0)
    with pytest.raises(ValueError, match="unknown fault"):
        make_protocol("HANDOFF", faults=["typo"])


def test_handoff_rounds_move_the_stateless_units_first_then_batch_at_a_time():
    """One implementation of HANDOFF's rounds, for the simulator's protocol and the Spark driver
    (bench/rescale/handoff.py): the units without state in one round, then the others in order."""
    assert handoff_rounds([1, 2, 3, 5, 8], {2, 5, 8}, 1) == [[1, 3], [2], [5], [8]]
    assert handoff_rounds([1, 2, 3, 5, 8], frozenset({2, 5, 8}), 2) == [[1, 3], [2, 5], [8]]
    assert handoff_rounds((2, 5), {2, 5}, 64) == [[2, 5]]
    assert handoff_rounds([4, 7], set(), 1) == [[4, 7]]
    assert handoff_rounds([], set(), 1) == []
