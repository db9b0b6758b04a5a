"""KEY: the reference `KeyGrouping`, murmur3 seed 13 modulo n (§4, Q17)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from groupings._keytable import CACHE_LIMIT, KeyTable, index_column_name, normalize_key
from groupings.base import Grouping
from groupings.hashing import KEY_SEED, HashIndexError, index


def raise_negative_index(table: KeyTable, ids: npt.NDArray[np.int64], column: str) -> None:
    """Raise `HashIndexError` for the first id whose index in `column` is negative (Q13)."""
    values = table.column(column)[ids]
    bad = np.flatnonzero(values < 0)
    if bad.size:
        key = table.key_of(int(ids[bad[0]]))
        raise HashIndexError(
            f"key {key!r} hashes to Long.MIN_VALUE: the reference's worker index is "
            f"{int(values[bad[0]])} (negative) and it throws on this key"
        )


_INDEX_COLUMN = index_column_name(KEY_SEED)


class HashCachedGrouping(Grouping):
    """A grouping whose decisions start from per-key hash indices, cached in a `KeyTable`.

    The cache decides nothing, so it is not pickled, and it starts afresh past CACHE_LIMIT keys
    (bounded memory on long-tailed key sets). Subclasses name their hash seeds in `SEEDS`.
    """

    SEEDS: tuple[int, ...] = ()

    def __init__(self, num_workers: int, *, start_ms: int = 0) -> None:
        super().__init__(num_workers, start_ms=start_ms)
        self._table = self._new_table()

    def _new_table(self) -> KeyTable:
        return KeyTable(self.num_workers, seeds=self.SEEDS)

    def _bounded_table(self) -> KeyTable:
        """The cache, restarted first when it has grown past CACHE_LIMIT keys."""
        if len(self._table) > CACHE_LIMIT:
            self._table = self._new_table()
        return self._table

    def __getstate__(self) -> dict[str, Any]:
        state = super().__getstate__()
        del state["_table"]
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        super().__setstate__(state)
        self._table = self._new_table()


class KeyGrouping(HashCachedGrouping):
    """Each key always goes to worker `index(13, key, n)`: a pure function of the key.

    It equals DYNAMIC_KEY's home worker and PARTIAL_KEY's first choice. It is not Storm's
    `fieldsGrouping` (that would be `List.hashCode mod n`).

    Args: num_workers: n >= 1; start_ms: accepted and ignored (§1).
    Raises (choose/route): HashIndexError for a key hashing to `Long.MIN_VALUE` (§2.3).
    Source: §4 (reference `KeyGrouping`), §2 (hashing), Q17.
    """

    name = "KEY"
    SEEDS = (KEY_SEED,)

    @property
    def workers(self) -> tuple[int, ...]:
        """The active worker ids: always 0..n-1 (hash mod n has no other ids)."""
        return tuple(range(self.num_workers))

    def owner_of(self, key: Any) -> int:
        """The worker of `key` for the current n (`index(13, key, n)`); routes nothing.

        Raises: HashIndexError for a key hashing to `Long.MIN_VALUE` (§2.3).
        """
        task = index(KEY_SEED, normalize_key(key), self.num_workers)
        if task < 0:
            raise HashIndexError(f"key {key!r} hashes to Long.MIN_VALUE: worker index {task}")
        return task

    def reschedule(self, workers: int | Sequence[int | str]) -> list[int]:
        """Change n in place (the naive rescale baseline: hash mod the new n moves most keys).

        Args: workers: a count n >= 1, the new ids (they must be 0..n-1), or '+id'/'-id' changes
            whose result is 0..n-1 (KEY has no other ids: removing a worker from the middle is
            not expressible as hash mod n).
        Returns: [] -- KEY has no groups: every key is its own unit, and which keys move depends
            on the keys (`owner_of` before and after tells).
        Raises: ValueError: no worker left, a removed id that is not a worker, an added id that
            already is one, or a resulting set other than 0..n-1; nothing changes then.
        Source: rescaling.md §3 (KEY as the baseline); reference §4 for the hash.
        """
        new = _resolve_key_workers(self.workers, workers)
        n = len(new)
        loads = np.zeros(n, dtype=np.int64)
        keep = min(n, self.num_workers)
        loads[:keep] = self._loads[:keep]
        self._loads = loads
        self.num_workers = n
        self._table = self._new_table()
        return []

    def _choose(self, key: str, now: int) -> int:
        self._bounded_table()
        key_id = self._table.id_of(key)
        task = int(self._table.column(_INDEX_COLUMN)[key_id])
        if task < 0:
            raise_negative_index(self._table, np.array([key_id]), _INDEX_COLUMN)
        self._loads[task] += 1
        return task

    def _route(self, keys: Sequence[Any], now: npt.NDArray[np.int64]) -> npt.NDArray[np.int32]:
        self._bounded_table()
        ids = self._table.ids_of(keys)
        if self._table.has_negative_index:
            raise_negative_index(self._table, ids, _INDEX_COLUMN)
        tasks = self._table.column(_INDEX_COLUMN)[ids].astype(np.int32)
        self._loads += np.bincount(tasks, minlength=self.num_workers)
        return tasks



def _resolve_key_workers(current: tuple[int, ...], workers: int | Sequence[int | str]) -> tuple[int, ...]:
    """KEY's new worker ids from a count, a set of ids or '+id'/'-id' changes; must be 0..n-1."""
    if isinstance(workers, int | np.integer) and not isinstance(workers, bool):
        n = int(workers)
        if n < 1:
            raise ValueError(f"cannot reschedule to {n} workers: the count must be >= 1")
        return tuple(range(n))
    items = list(workers)
    if items and all(isinstance(w, str) for w in items):
        ids = set(current)
        for change in items:
            sign, digits = change.strip()[:1], change.strip()[1:]
            if not sign or sign not in "+-" or not digits.isdigit():
                raise ValueError(f"a worker change is '+id' or '-id' with id >= 0, got {change!r}")
            w = int(digits)
            if sign == "+" and w in ids:
                raise ValueError(f"cannot add worker {w}: it is already one of {sorted(ids)}")
            if sign == "-" and w not in ids:
                raise ValueError(f"cannot remove worker {w}: unknown id; the workers are {sorted(ids)}")
            (ids.add if sign == "+" else ids.remove)(w)
    else:
        ids = {int(w) for w in items}
    if not ids:
        raise ValueError("cannot reschedule to 0 workers")
    if sorted(ids) != list(range(len(ids))):
        raise ValueError(
            f"KEY (hash mod n) needs the workers 0..n-1, got {sorted(ids)}; remove the highest id "
            f"or use KEY_GROUP or VNODE, which own keys by groups"
        )
    return tuple(sorted(ids))
