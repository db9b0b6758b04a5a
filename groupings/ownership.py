"""Groupings whose workers own groups of keys (key groups, vnodes), and can be rescheduled.

Flink (key groups), Volley and RisingWave (virtual nodes) do not map keys to workers directly:
a key hashes to one of G fixed groups, and a table maps each group to the worker that owns it
(and its state). Rescaling changes only that table, so a key's state moves only with its group.
`OwnershipGrouping` is that two-level routing; a subclass gives the key -> group hash and the
group -> worker table for a set of workers.

Worker ids: after `reschedule` to a set of ids (RisingWave's added and removed parallel units),
the active workers need not be 0..n-1. `workers` is the active set; `num_workers` is the size of
the id space (the largest active id + 1), the length of `loads` and the bound of every routed id,
so an id removed from the middle stays an idle worker in `loads`.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from groupings._keytable import KeyTable, normalize_key
from groupings.base import check_int
from groupings.key import HashCachedGrouping


class OwnershipGrouping(HashCachedGrouping):
    """Key -> one of `groups` groups -> the group's owner (`assignment()`); reschedulable.

    Subclasses implement `group_of(key)`, `_group_function()` (the same, picklable, for the key
    cache) and `_owners_for(workers)` (the owner of every group for a fresh set of workers).
    A reschedule may also depend on the current owners (VNODE's minimal move); then override
    `_reschedule_owners`.

    Args: num_workers: n >= 1, the initial workers are ids 0..n-1; groups: G >= n.
    """

    def __init__(self, num_workers: int, *, start_ms: int = 0, groups: int) -> None:
        super().__init__(num_workers, start_ms=start_ms)
        self.groups = groups
        self.workers: tuple[int, ...] = tuple(range(self.num_workers))
        self._owners = np.asarray(self._owners_for(self.workers), dtype=np.int32)

    # -- the two levels ----------------------------------------------------------------------------
    @abstractmethod
    def group_of(self, key: str) -> int:
        """The group (key group, vnode) of `key`, in `[0, groups)`."""

    @abstractmethod
    def _group_function(self) -> Callable[[str], int]:
        """`group_of` as a picklable function of the key alone (for the key cache)."""

    @abstractmethod
    def _owners_for(self, workers: tuple[int, ...]) -> list[int]:
        """The owner of each group (length `groups`) for the sorted worker ids `workers`."""

    def _reschedule_owners(self, workers: tuple[int, ...]) -> list[int]:
        """The new owner of each group when the workers become `workers`; default: `_owners_for`."""
        return self._owners_for(workers)

    # -- public API --------------------------------------------------------------------------------
    def assignment(self) -> list[int]:
        """The owner (worker id) of every group: a list of length `groups` (M key groups, V vnodes)."""
        return self._owners.tolist()

    def owner_of(self, key: Any) -> int:
        """The worker that owns `key` now; routes nothing and changes no state."""
        return int(self._owners[self.group_of(normalize_key(key))])

    def reschedule(self, workers: int | Sequence[int | str]) -> list[int]:
        """Change the owners in place, at a barrier between two tuples; return the groups that moved.

        Args:
            workers: one of
                - an int n >= 1: the workers become ids 0..n-1 (Flink's new parallelism);
                - a sequence of ints: the new set of worker ids (each >= 0, no duplicates);
                - a sequence of strings "+id" / "-id": worker ids added to / removed from the
                  current set (RisingWave's added and removed parallel units).
        Returns: the ids of the groups whose owner changed, ascending.
        Raises: ValueError: no worker would be left, a negative or duplicate id, a removed id that
            is not a current worker, an added id that already is one, or more workers than groups;
            nothing changes then.
        Source: rescaling.md §1-2 (Flink rescale by formula; RisingWave `RescheduleFragment`).
        """
        new_workers = self._resolve_workers(workers)
        owners = np.asarray(self._reschedule_owners(new_workers), dtype=np.int32)
        moved = np.flatnonzero(owners != self._owners)
        self.workers = new_workers
        self._owners = owners
        size = max(new_workers) + 1
        if size != self.num_workers:
            loads = np.zeros(size, dtype=np.int64)
            keep = min(size, self.num_workers)
            loads[:keep] = self._loads[:keep]
            self._loads = loads
            self.num_workers = size
        return moved.tolist()

    # -- routing -----------------------------------------------------------------------------------
    def _new_table(self) -> KeyTable:
        return KeyTable(group_of=self._group_function())

    def _choose(self, key: str, now: int) -> int:
        self._bounded_table()
        key_id = self._table.id_of(key)  # first: interning may reallocate the column
        group = int(self._table.column("group")[key_id])
        task = int(self._owners[group])
        self._loads[task] += 1
        return task

    def _route(self, keys: Sequence[Any], now: npt.NDArray[np.int64]) -> npt.NDArray[np.int32]:
        self._bounded_table()
        ids = self._table.ids_of(keys)
        tasks = self._owners[self._table.column("group")[ids]]
        self._loads += np.bincount(tasks, minlength=self.num_workers)
        return tasks

    def _resolve_workers(self, workers: int | Sequence[int | str]) -> tuple[int, ...]:
        if isinstance(workers, int | np.integer) and not isinstance(workers, bool):
            n = check_int("workers", workers)
            if n < 1:
                raise ValueError(f"cannot reschedule to {n} workers: the count must be >= 1")
            return self._check_count(tuple(range(n)))
        if isinstance(workers, str) or not isinstance(workers, Sequence):
            raise ValueError(
                f"reschedule takes a worker count, a sequence of worker ids or of '+id'/'-id' "
                f"changes, got {workers!r}"
            )
        items = list(workers)
        if items and all(isinstance(w, str) for w in items):
            return self._check_count(self._apply_changes(items))
        ids = [check_int("worker id", w) for w in items]
        if any(w < 0 for w in ids):
            raise ValueError(
                f"worker ids must be >= 0, got {sorted(w for w in ids if w < 0)} (to remove "
                f"worker 3 from the current set pass '-3' as a string, or the new set of ids)"
            )
        if len(set(ids)) != len(ids):
            raise ValueError(f"duplicate worker ids in {ids}")
        if not ids:
            raise ValueError("cannot reschedule to 0 workers: give at least one worker id")
        return self._check_count(tuple(sorted(ids)))

    def _apply_changes(self, changes: list[str]) -> tuple[int, ...]:
        current = set(self.workers)
        for change in changes:
            sign, digits = change.strip()[:1], change.strip()[1:]
            if sign not in "+-" or not sign or not digits.isdigit():
                raise ValueError(f"a worker change is '+id' or '-id' with id >= 0, got {change!r}")
            worker = int(digits)
            if sign == "+":
                if worker in current:
                    raise ValueError(f"cannot add worker {worker}: it is already one of {sorted(current)}")
                current.add(worker)
            else:
                if worker not in current:
                    raise ValueError(f"cannot remove worker {worker}: unknown id; the workers are {sorted(current)}")
                current.remove(worker)
        if not current:
            raise ValueError(f"cannot reschedule to 0 workers: {changes} removes every worker")
        return tuple(sorted(current))

    def _check_count(self, workers: tuple[int, ...]) -> tuple[int, ...]:
        if len(workers) > self.groups:
            raise ValueError(
                f"{self.name} cannot have more workers than groups: {len(workers)} workers > "
                f"{self.groups} (allowed: 1..{self.groups} workers)"
            )
        return workers
