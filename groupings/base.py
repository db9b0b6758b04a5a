"""The `Grouping` base class: one object is one reference grouping instance (spec §1).

A grouping routes each tuple (`key`, `now_ms`) to a worker index in `[0, num_workers)` and updates
its own state. Subclasses implement `_choose` (one tuple, the readable rule straight from the spec)
and may override `_route` (a batch, the fast path), which must give exactly the same result as
calling `_choose` on each tuple in order.

What the base class does for every grouping:
- validates `num_workers` and `start_ms`;
- clamps time: a `now_ms` earlier than the last one seen (or than `start_ms`, the moment the
  reference instance was prepared) is treated as that last one, never as a jump backwards;
- normalises keys (`str()` of a non-string; None is rejected);
- keeps `loads`, the tuples this instance has sent to each worker;
- pickling and equality of the whole state (Spark checkpoints the groupings).

A grouping of one's own package subclasses `Grouping` too; docs/extending.md gives the contract
(deterministic, state that pickles, instances that share nothing) and how to register it.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np
import numpy.typing as npt

from groupings._keytable import normalize_key


def check_int(name: str, value: Any, minimum: int | None = None) -> int:
    """`value` as a Python int, for integer parameters (bools and floats are refused).

    Raises: ValueError: not an integer, or below `minimum`.
    """
    if isinstance(value, bool) or not isinstance(value, int | np.integer):
        raise ValueError(f"{name} must be an integer, got {value!r}")
    value = int(value)
    if minimum is not None and value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value}")
    return value


class Grouping(ABC):
    """One reference grouping instance (a Storm `CustomStreamGrouping` after `prepare`).

    Args:
        num_workers: n >= 1; worker i is the i-th smallest target task (§1, conventions).
        start_ms: when the instance was prepared (ms); anchors DYNAMIC_KEY's warm-up and
            maintenance, and is the earliest time the instance can observe.

    Raises: ValueError: `num_workers` is not an integer >= 1, or `start_ms` is not an integer.
    """

    name: ClassVar[str]

    def __init__(self, num_workers: int, *, start_ms: int = 0) -> None:
        self.num_workers = check_int("num_workers", num_workers, minimum=1)
        self.start_ms = check_int("start_ms", start_ms)
        self._last_now = self.start_ms
        self._loads = np.zeros(self.num_workers, dtype=np.int64)

    # -- public API ------------------------------------------------------------------------------
    def choose(self, key: Any, now_ms: int) -> int:
        """Route one tuple and update the state.

        Args: key: the tuple's key (`str()` of a non-string); now_ms: the tuple's time in ms.
        Returns: the worker index, in `[0, num_workers)`.
        Raises: TypeError: key is None; ValueError: now_ms is not an integer;
            HashIndexError: the key hashes to `Long.MIN_VALUE` (the reference throws).
        """
        key = normalize_key(key)
        now = check_int("now_ms", now_ms)
        if now < self._last_now:
            now = self._last_now  # never a jump backwards in time
        task = self._choose(key, now)
        self._last_now = now  # only once the tuple is routed (a failing tuple changes nothing)
        return task

    def route(
        self, keys: Sequence[Any], now_ms: int | npt.NDArray[np.int64]
    ) -> npt.NDArray[np.int32]:
        """Route a batch of tuples, in order; equal to calling `choose` on each tuple.

        Args: keys: shape (m,), a sequence of keys (list, tuple, numpy or pandas array);
            now_ms: an int (all tuples at that time) or an integer array of shape (m,).
        Returns: int32 array of shape (m,), the worker index of each tuple.
        Raises: as `choose`, and ValueError when `now_ms` has the wrong shape or dtype. A batch
            with a None key or a `Long.MIN_VALUE` key raises before any tuple is routed.
        """
        if not isinstance(keys, list | tuple | np.ndarray):
            keys = list(keys)
        now, last_now = self._clamped_times(now_ms, len(keys))
        tasks = self._route(keys, now)
        self._last_now = last_now  # only once the whole batch is routed
        return tasks

    @property
    def loads(self) -> npt.NDArray[np.int64]:
        """Tuples this instance has sent to each worker: int64 copy of shape (num_workers,)."""
        return self._loads.copy()

    @property
    def last_now_ms(self) -> int:
        """The latest time observed (ms), `start_ms` before the first tuple."""
        return self._last_now

    # -- for subclasses --------------------------------------------------------------------------
    @abstractmethod
    def _choose(self, key: str, now: int) -> int:
        """Route one tuple (key normalised, time clamped); update the state, `_loads` included."""

    def _route(self, keys: Sequence[Any], now: npt.NDArray[np.int64]) -> npt.NDArray[np.int32]:
        """Batch routing (updating `_loads`); the default calls `_choose` per tuple.

        `now` is clamped and non-decreasing.

        Keys are normalised first, so that a bad key raises before any tuple is routed.
        """
        normalized = [normalize_key(k) for k in keys]
        return np.fromiter(
            (self._choose(k, t) for k, t in zip(normalized, now.tolist(), strict=True)),
            dtype=np.int32,
            count=len(normalized),
        )

    def _clamped_times(self, now_ms: Any, count: int) -> tuple[npt.NDArray[np.int64], int]:
        """Per-tuple times as `choose` sees them (the running maximum with the last time seen),
        and the last time seen after the batch."""
        if np.ndim(now_ms) == 0:
            now = check_int("now_ms", now_ms.item() if isinstance(now_ms, np.generic) else now_ms)
            now = max(now, self._last_now)
            return np.full(count, now, dtype=np.int64), (now if count else self._last_now)
        arr = np.asarray(now_ms)
        if arr.shape != (count,):
            raise ValueError(f"now_ms must be an int or have shape ({count},), got {arr.shape}")
        if arr.dtype.kind not in "iu":
            raise ValueError(f"now_ms must hold integers (ms), got dtype {arr.dtype}")
        if count == 0:
            return np.zeros(0, dtype=np.int64), self._last_now
        times = np.maximum.accumulate(np.maximum(arr.astype(np.int64, copy=False), self._last_now))
        return times, int(times[-1])

    # -- pickling and equality -------------------------------------------------------------------
    def __eq__(self, other: object) -> bool:
        """Equal type and equal routing state: both route every future stream alike.

        Caches (the per-key hash table, whose ids depend on which keys were seen) are left out.
        """
        if type(self) is not type(other):
            return NotImplemented
        return _state_equal(self._equality_state(), other._equality_state())

    def _equality_state(self) -> dict[str, Any]:
        """The state compared by `__eq__`: the attributes without the key cache `_table`."""
        state = dict(self.__dict__)
        state.pop("_table", None)
        return state

    __hash__ = None  # type: ignore[assignment]

    def __getstate__(self) -> dict[str, Any]:
        return self.__dict__.copy()

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(num_workers={self.num_workers}, start_ms={self.start_ms})"


def _state_equal(a: Any, b: Any) -> bool:
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return (
            isinstance(a, np.ndarray)
            and isinstance(b, np.ndarray)
            and a.dtype == b.dtype
            and np.array_equal(a, b)
        )
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_state_equal(a[k], b[k]) for k in a)
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        return (
            type(a) is type(b) and len(a) == len(b) and all(map(_state_equal, a, b))
        )
    return bool(a == b)
