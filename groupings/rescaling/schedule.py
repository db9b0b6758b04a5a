"""Rescale schedules: `150s:12,240s:8` (new worker counts) and `150s:+10,+11` / `150s:-3` (ids).

A schedule is a list of events, each at a time since the run's start (event time of the input,
the tuples' clock) with either a new worker count (Flink's new parallelism) or worker ids added
and removed (RisingWave's `RescheduleFragment` parallel units). Times take a unit suffix: `ms`,
`s` (the default when none is given) or `m`.
"""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass

RESCALABLE: tuple[str, ...] = ("KEY", "KEY_GROUP", "VNODE")
"""The routings that own keys and can be rescaled: KEY (hash mod n, the naive baseline),
KEY_GROUP (Flink key groups), VNODE (RisingWave vnodes)."""

_TIME = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|m)?\s*$")
_UNIT_MS = {"ms": 1, "s": 1000, "m": 60_000, None: 1000}


@dataclass(frozen=True)
class RescaleEvent:
    """One rescale request.

    at_ms: time since the run's start (the earliest tuple), ms of event time.
    workers: the new worker count, or None when `changes` is given.
    changes: ('+10', '+11') / ('-3',): worker ids added / removed; empty with `workers`.
    """

    at_ms: int
    workers: int | None = None
    changes: tuple[str, ...] = ()

    @property
    def target(self) -> int | list[str]:
        """What `reschedule` takes: the count, or the list of '+id'/'-id' changes."""
        return self.workers if self.workers is not None else list(self.changes)

    def label(self) -> str:
        what = str(self.workers) if self.workers is not None else ",".join(self.changes)
        return f"{self.at_ms / 1000:g}s:{what}"


def parse_time_ms(text: str) -> int:
    """`150s`, `1500ms`, `2.5m` or `150` (seconds) -> ms.

    Raises: ValueError: not a non-negative number with an optional unit ms, s or m.
    """
    m = _TIME.match(text)
    if not m:
        raise ValueError(f"bad rescale time {text!r}: expected a number with unit ms, s or m, e.g. 150s")
    return int(round(float(m.group(1)) * _UNIT_MS[m.group(2)]))


def parse_schedule(text: str) -> list[RescaleEvent]:
    """Parse a schedule: events separated by `,`; an event is `TIME:COUNT` or `TIME:±ID[,±ID...]`.

    `150s:12,240s:8` is two events (12 workers at 150 s, 8 at 240 s); `150s:+10,+11` is one event
    adding workers 10 and 11 (an item without `TIME:` continues the previous event's changes).

    Returns: the events, in time order.
    Raises: ValueError (one clear message each): empty schedule, a bad time, a count that is not
        an integer >= 1 (0 workers), a change that is not +id/-id, a change list mixing with a
        count, two events at the same time, or events not in increasing time.
    """
    if not text or not text.strip():
        raise ValueError("empty rescale schedule: expected e.g. 150s:12,240s:8 or 150s:+10,+11")
    events: list[RescaleEvent] = []
    for raw in (item.strip() for item in text.split(",")):
        if not raw:
            raise ValueError(f"empty item in rescale schedule {text!r}")
        if ":" in raw:
            when, what = raw.split(":", 1)
            at = parse_time_ms(when)
            what = what.strip()
            if what[:1] in "+-" and what:
                events.append(RescaleEvent(at, None, (_change(what),)))
            else:
                try:
                    count = int(what)
                except ValueError:
                    raise ValueError(
                        f"bad rescale event {raw!r}: after TIME: give a worker count (e.g. 12) or "
                        f"worker ids to add/remove (e.g. +10,+11 or -3)"
                    ) from None
                if count < 1:
                    raise ValueError(f"bad rescale event {raw!r}: cannot rescale to {count} workers (need >= 1)")
                events.append(RescaleEvent(at, count))
        else:
            if not events or events[-1].workers is not None:
                raise ValueError(f"bad rescale item {raw!r}: expected TIME:COUNT or TIME:+ID/-ID, e.g. 150s:12")
            last = events[-1]
            events[-1] = RescaleEvent(last.at_ms, None, last.changes + (_change(raw),))
    for a, b in zip(events, events[1:]):
        if b.at_ms == a.at_ms:
            raise ValueError(f"two rescale events at the same time {a.at_ms / 1000:g}s ({a.label()}, "
                             f"{b.label()}): merge them into one")
        if b.at_ms < a.at_ms:
            raise ValueError(f"rescale events must be in increasing time: {b.label()} comes after {a.label()}")
    return events


def _change(text: str) -> str:
    t = text.strip()
    if len(t) < 2 or t[0] not in "+-" or not t[1:].isdigit():
        raise ValueError(f"bad worker change {text!r}: expected +ID or -ID with ID >= 0, e.g. +10 or -3")
    return t


def check_rescalable(grouping: str) -> None:
    """Raises: ValueError naming the routings that own keys, if `grouping` is not one of them."""
    if grouping not in RESCALABLE:
        raise ValueError(
            f"--rescale needs a routing that owns keys; {grouping} does not. Allowed: {', '.join(RESCALABLE)}"
        )


def check_schedule(events: list[RescaleEvent], span_ms: int, grouping) -> None:
    """Check `events` against the input and a fresh grouping before anything runs.

    Args: events: a parsed schedule; span_ms: the input's event-time span (last - first tuple),
        ms; grouping: a grouping instance that owns keys (`reschedule`), at the initial workers;
        a copy is rescheduled, `grouping` is left unchanged.
    Raises: ValueError: an event at or beyond the end of the input, or a target the routing
        refuses (a removed id that does not exist, an added id that exists, 0 workers left, more
        workers than groups), naming the event.
    """
    probe = copy.deepcopy(grouping)
    for e in events:
        if e.at_ms >= span_ms:
            raise ValueError(
                f"rescale event {e.label()} is beyond the input: its event time spans "
                f"{span_ms / 1000:g} s from the first tuple (events must be before that)"
            )
        try:
            probe.reschedule(e.target)
        except ValueError as exc:
            raise ValueError(f"rescale event {e.label()}: {exc}") from None
