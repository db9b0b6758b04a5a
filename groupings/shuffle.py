"""SHUFFLE: the reference `ShuffleGrouping`, a deterministic round robin per instance (§3, Q16)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from groupings.base import Grouping


def _reject_none(keys: Sequence[Any]) -> None:
    """SHUFFLE ignores keys but, like every grouping, refuses a None key."""
    if isinstance(keys, np.ndarray):
        has_none = keys.dtype == object and any(k is None for k in keys)
    else:
        has_none = None in keys  # C-level scan of a list or tuple
    if has_none:
        raise TypeError("a tuple's key must not be None (convert missing keys explicitly)")


class ShuffleGrouping(Grouping):
    """Round robin over the workers, starting at worker 0, ignoring key and time.

    State: the last worker chosen, `-1` before the first tuple. Each instance starts at 0 on its
    own, which is why S instances show in DIST_COST (§15). Not Storm's randomised shuffle.

    Args: num_workers: n >= 1; start_ms: accepted and ignored (§1).
    Source: §3 (reference `ShuffleGrouping`), Q16.
    """

    name = "SHUFFLE"

    def __init__(self, num_workers: int, *, start_ms: int = 0) -> None:
        super().__init__(num_workers, start_ms=start_ms)
        self._counter = -1

    def _choose(self, key: str, now: int) -> int:
        self._counter = (self._counter + 1) % self.num_workers
        self._loads[self._counter] += 1
        return self._counter

    def _route(self, keys: Sequence[Any], now: npt.NDArray[np.int64]) -> npt.NDArray[np.int32]:
        _reject_none(keys)
        n = self.num_workers
        m = len(keys)
        tasks = ((self._counter + 1 + np.arange(m, dtype=np.int64)) % n).astype(np.int32)
        if m:
            self._counter = int(tasks[-1])
            self._loads += np.bincount(tasks, minlength=n)
        return tasks
