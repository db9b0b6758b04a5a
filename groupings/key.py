"""KEY: the reference `KeyGrouping`, murmur3 seed 13 modulo n (§4, Q17)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from groupings._keytable import CACHE_LIMIT, KeyTable, index_column_name
from groupings.base import Grouping
from groupings.hashing import KEY_SEED, HashIndexError


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

