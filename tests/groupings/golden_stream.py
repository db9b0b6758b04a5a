"""The golden stream and protocol of the reference spec (§14), reusable by later stages.

Keys come from a SplitMix64 finaliser, so the stream is reproducible anywhere:
`key(i) = "Turkey" if draw(2i) mod 100 < skew else "K%03d" % (draw(2i+1) mod 200)`, with tuple i at
`now_ms = T0 + 1000*(i // R) + (1000*(i mod R)) // R` and going to instance `i mod S`.

A later `datasets` GOLDEN_SKEW dataset may reimplement this; `groupings` must not depend on it.
Source: docs/reference/dkg-reference.md §14, vectors in §15.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from groupings import Grouping, create_grouping

T0 = 1_000_000
"""Origin of the golden clock (ms)."""
RATE = 200
"""Tuples per virtual second of the public vectors."""
COUNT = 60_000
"""Tuples of the public vectors (300 s at 200 tuples/s)."""
SKEW = 80
"""Percentage of `Turkey` draws of the public vectors."""

_GAMMA = np.uint64(0x9E3779B97F4A7C15)
_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)


def splitmix64_mix(z: npt.NDArray[np.uint64]) -> npt.NDArray[np.uint64]:
    """SplitMix64 finaliser, element-wise, all arithmetic mod 2**64 (§14 `mix`)."""
    with np.errstate(over="ignore"):
        z = (z ^ (z >> np.uint64(30))) * _M1
        z = (z ^ (z >> np.uint64(27))) * _M2
        return z ^ (z >> np.uint64(31))


def draw(j: npt.NDArray[np.int64]) -> npt.NDArray[np.uint64]:
    """§14 `draw(j) = mix((j + 1) * 0x9E3779B97F4A7C15)`, element-wise."""
    with np.errstate(over="ignore"):
        return splitmix64_mix((np.asarray(j, dtype=np.uint64) + np.uint64(1)) * _GAMMA)


def golden_key_codes(count: int, skew: int = SKEW) -> npt.NDArray[np.int64]:
    """Key codes of tuples 0..count-1: -1 for `Turkey`, c in [0, 200) for `K%03d` % c."""
    i = np.arange(count, dtype=np.int64)
    hot = draw(2 * i) % np.uint64(100) < np.uint64(skew)
    other = (draw(2 * i + 1) % np.uint64(200)).astype(np.int64)
    return np.where(hot, -1, other)


GOLDEN_KEY_NAMES: tuple[str, ...] = tuple(f"K{c:03d}" for c in range(200)) + ("Turkey",)
"""The 201 distinct keys; code -1 indexes `Turkey` (the last name)."""


def golden_keys(count: int = COUNT, skew: int = SKEW) -> list[str]:
    """The keys of tuples 0..count-1 of the golden stream (§14)."""
    names = GOLDEN_KEY_NAMES
    return [names[c] for c in golden_key_codes(count, skew).tolist()]


def golden_now_ms(count: int = COUNT, rate: int = RATE, t0: int = T0) -> npt.NDArray[np.int64]:
    """`now_ms` of tuples 0..count-1: `t0 + 1000*(i // rate) + (1000*(i % rate)) // rate` (§14)."""
    i = np.arange(count, dtype=np.int64)
    return t0 + 1000 * (i // rate) + (1000 * (i % rate)) // rate


@dataclass
class ProtocolRun:
    """The outcome of the golden protocol: per-tuple tasks, the instances, the stream."""

    keys: list[str]
    now_ms: npt.NDArray[np.int64]
    tasks: npt.NDArray[np.int32]
    instances: list[Grouping]
    pool_events: list[tuple[float, int, int]] = field(default_factory=list)

    def trace_text(self, sources: int) -> str:
        """The trace, one line `"%d %d %s %d\\n" % (i, i mod S, key, task)` per tuple (§14)."""
        tasks = self.tasks.tolist()
        return "".join(
            f"{i} {i % sources} {key} {task}\n" for i, (key, task) in enumerate(zip(self.keys, tasks))
        )

    def trace_md5(self, sources: int) -> str:
        """MD5 (hex) of `trace_text`, as published in §15.4."""
        return hashlib.md5(self.trace_text(sources).encode("ascii")).hexdigest()


def run_protocol(
    name: str,
    num_workers: int,
    sources: int,
    *,
    count: int = COUNT,
    skew: int = SKEW,
    rate: int = RATE,
    mode: str = "route",
    **params: Any,
) -> ProtocolRun:
    """Run the golden protocol (§14): S instances, tuple i to instance i mod S.

    Args:
        name, num_workers, params: passed to `create_grouping` (with `start_ms=T0`).
        sources: S.
        mode: "route" (one `route` call per instance over its tuples, the fast path) or "choose"
            (one `choose` per tuple, in global order, recording Turkey's pool-size events at
            instance 0 for DYNAMIC_KEY: `(t_seconds, old, new)`).
    Returns: a `ProtocolRun`.
    """
    keys = golden_keys(count, skew)
    now = golden_now_ms(count, rate)
    instances = [create_grouping(name, num_workers, start_ms=T0, **params) for _ in range(sources)]
    tasks = np.empty(count, dtype=np.int32)
    events: list[tuple[float, int, int]] = []
    if mode == "route":
        for s, g in enumerate(instances):
            tasks[s::sources] = g.route(keys[s::sources], now[s::sources])
    elif mode == "choose":
        first = instances[0]
        track = hasattr(first, "pool_size")
        pool = 2
        now_list = now.tolist()
        for i, key in enumerate(keys):
            g = instances[i % sources]
            tasks[i] = g.choose(key, now_list[i])
            if track and i % sources == 0:
                size = first.pool_size("Turkey")  # type: ignore[attr-defined]
                if size != pool:
                    events.append(((now_list[i] - T0) / 1000, pool, size))
                    pool = size
    else:
        raise ValueError(f"mode must be 'route' or 'choose', got {mode!r}")
    return ProtocolRun(keys, now, tasks, instances, events)
