"""The nemesis's plan (bench/nemesis/plan.py): the same seed gives the same faults."""

from __future__ import annotations

import pytest

from bench.nemesis.plan import ACTIONS, HOLD_S, LEAD_S, MAX_RESCALES, TARGETS, plan_faults
from groupings.rescaling import parse_schedule


def test_the_same_seed_gives_the_same_plan_and_another_seed_another():
    plans = [plan_faults(seed, 20, 900.0, 900.0, 10) for seed in (11, 11, 12)]
    assert plans[0] == plans[1]
    assert plans[0].faults != plans[2].faults


@pytest.mark.parametrize("seed", range(30))
def test_a_plan_has_its_faults_in_order_within_the_span(seed):
    plan = plan_faults(seed, 20, 900.0, 600.0, 10)
    assert len(plan.faults) == 20 and [f.index for f in plan.faults] == list(range(20))
    instants = [f.at_s for f in plan.process_faults]
    assert instants == sorted(instants) and all(LEAD_S <= t <= 900.0 for t in instants)
    assert all(f.target in TARGETS and f.action in ACTIONS and HOLD_S[0] <= f.hold_s <= HOLD_S[1]
               for f in plan.process_faults)
    assert 1 <= len(plan.rescales) <= MAX_RESCALES and plan.protocol is not None


@pytest.mark.parametrize("seed", range(30))
def test_the_rescale_schedule_is_one_the_run_takes(seed):
    plan = plan_faults(seed, 20, 900.0, 600.0, 10)
    events = parse_schedule(plan.schedule())
    assert [e.at_ms for e in events] == sorted({e.at_ms for e in events})  # distinct, ascending
    assert all(90_000 <= e.at_ms <= 450_000 for e in events)  # within RESCALE_SPAN of the input
    sizes = [f.workers for f in plan.rescales]
    assert sizes[0] in (8, 12) and sizes[1:] in ([], [10])  # out or in, then back


def test_without_protocols_no_rescale_is_drawn():
    plan = plan_faults(5, 20, 900.0, 900.0, 10, protocols=())
    assert not plan.rescales and plan.protocol is None and plan.schedule() is None
    assert len(plan.process_faults) == 20


@pytest.mark.parametrize("args, message", [
    ((1, 0, 900.0, 900.0, 10), "at least 1 fault"),
    ((1, 5, 4.0, 900.0, 10), "longer than"),
    ((1, 5, 900.0, 900.0, 2), "W must be at least 3"),
])
def test_bad_arguments_are_refused(args, message):
    with pytest.raises(ValueError, match=message):
        plan_faults(*args)


def test_the_short_nemesis_seed_plans_the_faults_its_test_describes():
    """tests/nemesis/test_nemesis.py (make test, tests/short_nemesis.py) relies on these."""
    from tests.short_nemesis import SEED, SPAN_S, W

    plan = plan_faults(SEED, 3, SPAN_S, SPAN_S, W)
    assert [(f.target, f.action) for f in plan.process_faults] == [("spark", "kill"), ("influxdb", "kill")]
    assert (plan.schedule(), plan.protocol) == ("17s:6", "SHARED_STATE")
