"""Open-loop schedules (no broker)."""

from __future__ import annotations

import time

import pytest

from bench.settings.input import Speed
from producers.pacing import MissingEventTime, Schedule, sleep_until


def test_rate_offsets():
    s = Schedule(rate=20_000)
    assert s.mode == "rate" and not s.unlimited
    assert [s.offset_ns(i, None) for i in range(3)] == [0, 50_000, 100_000]
    assert s.offset_ns(20_000, None) == 1_000_000_000
    assert Schedule(rate=3).offset_ns(1, None) == 333_333_333


def test_speed_offsets_are_relative_and_monotone():
    s = Schedule(speed=10)
    assert s.offset_ns(0, 1_000_000) == 0
    assert s.offset_ns(1, 1_001_000) == 100_000_000  # 1 s of event time at x10
    assert s.offset_ns(2, 1_000_500) == 100_000_000  # back in time: due with its predecessor
    assert s.offset_ns(3, 1_002_000) == 200_000_000
    with pytest.raises(MissingEventTime):
        s.offset_ns(4, None)
    assert Schedule(speed=0.5).offset_ns(0, 5) == 0


def test_unlimited():
    s = Schedule()
    assert s.unlimited and s.offset_ns(5, 123) is None and s.describe() == "unlimited"


@pytest.mark.parametrize("kwargs", [{"rate": 0}, {"rate": -1}, {"speed": 0}, {"rate": 1, "speed": 1}])
def test_bad_schedules(kwargs):
    with pytest.raises(ValueError):
        Schedule(**kwargs)


def test_a_speed_reads_the_references_xk_notation():
    assert Speed("x10") == 10.0 and Speed("X2.5") == 2.5 and Speed("4") == 4.0 and Speed(3) == 3.0
    for bad in ("x0", "fast", "x-1", "", "inf", "nan", "xx2"):
        with pytest.raises(ValueError):
            Speed(bad)


def test_sleep_until():
    t = time.perf_counter_ns()
    sleep_until(t + 20_000_000)
    assert time.perf_counter_ns() - t >= 20_000_000
    sleep_until(0)  # in the past: returns at once
