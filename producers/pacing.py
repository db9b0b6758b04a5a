"""Open-loop send schedules: when each record is *intended* to be sent.

The schedule is fixed before the run from the record index (``--rate``) or the dataset's own
timestamps (``--speed xK``); it never waits for the broker. A record handed to the client late is
still stamped with its intended time, and the lag (actual - intended) is measured, so a slow
producer or broker shows up as lag instead of silently lowering the offered rate (coordinated
omission, as in the OpenMessaging Benchmark).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Protocol

NS_PER_S = 1_000_000_000
NS_PER_MS = 1_000_000


class Stoppable(Protocol):
    """Anything with a ``stopped`` flag that another thread or a signal handler sets
    (``producers.interrupt.StopFlag``)."""

    stopped: bool


class MissingEventTime(ValueError):
    """``--speed`` needs every record to carry the dataset's event time."""


@dataclass
class Schedule:
    """Intended send offsets (ns from the schedule start) of records 0, 1, 2, ...

    - ``rate`` R records/s: record i at ``floor(i * 1e9 / R)``.
    - ``speed`` K: record i at ``(event_ms_i - event_ms_0) * 1e6 / K``; a record whose event time
      goes back in time is due with its predecessor (offsets never decrease).
    - neither: unlimited, ``offset_ns`` returns None (the intended time is the hand-over time).
    """

    rate: float | None = None
    speed: float | None = None

    def __post_init__(self) -> None:
        if self.rate is not None and self.speed is not None:
            raise ValueError("give a rate or a speed, not both")
        if self.rate is not None and not self.rate > 0:
            raise ValueError(f"rate must be > 0 records/s, got {self.rate}")
        if self.speed is not None and not self.speed > 0:
            raise ValueError(f"speed must be > 0, got {self.speed}")
        self._period_ns = NS_PER_S / self.rate if self.rate else 0.0
        self._first_event: int | None = None
        self._last_offset = 0

    @property
    def mode(self) -> str:
        return "rate" if self.rate is not None else "speed" if self.speed is not None else "unlimited"

    @property
    def unlimited(self) -> bool:
        return self.rate is None and self.speed is None

    def describe(self) -> str:
        if self.rate is not None:
            return f"{self.rate:g} records/s"
        if self.speed is not None:
            return f"x{self.speed:g} the dataset's event time"
        return "unlimited"

    def offset_ns(self, i: int, event_ms: int | None) -> int | None:
        if self.rate is not None:
            return int(i * self._period_ns)
        if self.speed is None:
            return None
        if event_ms is None:
            raise MissingEventTime(f"record {i} has no event time: --speed needs a dataset with timestamps (use --rate)")
        if self._first_event is None:
            self._first_event = event_ms
        off = int((event_ms - self._first_event) * NS_PER_MS / self.speed)
        if off < self._last_offset:
            off = self._last_offset
        self._last_offset = off
        return off


def sleep_until(deadline_ns: int, clock=time.perf_counter_ns, stop: Stoppable | None = None) -> None:
    """Sleep until the monotonic ``clock`` reaches ``deadline_ns`` (Linux timer slack is ~50 us;
    the schedule is open-loop, so an overshoot shows as lag and is caught up, not accumulated).
    With ``stop`` (e.g. ``producers.interrupt.StopFlag``), wake at least every 0.1 s and return
    early once ``stop.stopped`` is set."""
    while True:
        left = deadline_ns - clock()
        if left <= 0 or (stop is not None and stop.stopped):
            return
        time.sleep(min(left, NS_PER_S // 10) / NS_PER_S)


@dataclass(frozen=True)
class ScheduleStart:
    """The schedule start, on the wall clock (the intended send time of record 0) and on the
    monotonic clock the loop paces by.

    A whole-ms start, so record i is stamped exactly ``start_ms + floor(offset_i in ms)``.
    """

    epoch_ns: int
    """Epoch ns of the start, a whole number of ms."""
    mono_ns: int
    """The same instant on ``time.perf_counter_ns`` (later than now for a start in the future)."""

    @classmethod
    def at(cls, start_ms: int | None = None) -> ScheduleStart:
        """Start at epoch ms ``start_ms``, or now (rounded down to the ms)."""
        now_epoch_ns = time.time_ns()
        epoch_ns = (start_ms if start_ms is not None else now_epoch_ns // NS_PER_MS) * NS_PER_MS
        return cls(epoch_ns, time.perf_counter_ns() + (epoch_ns - now_epoch_ns))

    @property
    def ms(self) -> int:
        return self.epoch_ns // NS_PER_MS
