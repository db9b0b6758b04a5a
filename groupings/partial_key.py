"""PARTIAL_KEY: the reference `PartialKeyGrouping` (Storm 1.x PKG without fields), §5."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from groupings import _kernels
from groupings._keytable import index_column_name
from groupings.base import Grouping
from groupings.hashing import KEY_SEED, SECOND_SEED
from groupings.key import HashCachedGrouping, raise_negative_index


def two_choices(sent_first: int, sent_second: int) -> bool:
    """Whether PKG takes its second choice: only when the first has strictly more tuples sent.

    Args: sent_first, sent_second: this instance's tuples sent to the two choices.
    Returns: `sent_first > sent_second`; ties (and equal choices) go to the first choice.
    Source: §5.
    """
    return sent_first > sent_second


_FIRST = index_column_name(KEY_SEED)
_SECOND = index_column_name(SECOND_SEED)


class PartialKeyGrouping(HashCachedGrouping):
    """Two choices per key (murmur3 seeds 13 and 17), the one this instance loaded less wins.

    State: `loads`, the tuples this instance has sent to each worker: PKG's local load estimate.
    Not equivalent to Storm 2.x PKG (random choices seeded by the key bytes).

    Args: num_workers: n >= 1; start_ms: accepted and ignored (§1).
    Raises (choose/route): HashIndexError for a key hashing to `Long.MIN_VALUE` (§2.3).
    Source: §5 (reference `PartialKeyGrouping`), §2 (hashing).
    """

    name = "PARTIAL_KEY"
    SEEDS = (KEY_SEED, SECOND_SEED)


    def choices(self, key: Any) -> tuple[int, int]:
        """The key's two candidate workers `(index(13, key, n), index(17, key, n))`."""
        key_id = self._table.id_of(key)
        return (
            int(self._table.column(_FIRST)[key_id]),
            int(self._table.column(_SECOND)[key_id]),
        )

    def _choose(self, key: str, now: int) -> int:
        self._bounded_table()
        a, b = self.choices(key)
        if a < 0 or b < 0:
            self._raise_negative(np.array([self._table.id_of(key)]))
        sent = self._loads
        task = b if two_choices(int(sent[a]), int(sent[b])) else a
        sent[task] += 1
        return task

    def _route(self, keys: Sequence[Any], now: npt.NDArray[np.int64]) -> npt.NDArray[np.int32]:
        self._bounded_table()
        ids = self._table.ids_of(keys)
        if self._table.has_negative_index:
            self._raise_negative(ids)
        first = self._table.column(_FIRST)[ids]
        second = self._table.column(_SECOND)[ids]
        tasks = np.empty(len(ids), dtype=np.int32)
        _kernels.compiled("pkg_route_loop")(first, second, self._loads, tasks)
        return tasks

    def _raise_negative(self, ids: npt.NDArray[np.int64]) -> None:
        raise_negative_index(self._table, ids, _FIRST)
        raise_negative_index(self._table, ids, _SECOND)
