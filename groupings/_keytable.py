"""Dense integer ids for keys, with per-key columns: the cache behind every fast path.

A grouping sees few distinct keys and many tuples. `KeyTable` hashes each distinct key once,
gives it an id `0, 1, 2, ...` in order of first sight, and keeps per-key values in numpy columns
indexed by id: the precomputed worker indices (murmur3 seeds 13 and 17), the Java `HashMap`
spread hash, and whatever mutable per-key state an owner registers (DKG's pool size, the KeySpace
counts). Compiled loops then work on integer ids only.

Ids are an implementation detail: interning a key changes no routing decision.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from itertools import repeat
from typing import Any

import numpy as np
import numpy.typing as npt

from groupings.hashing import as_long, hashmap_spread, java_index_of_long, java_string_hash


CACHE_LIMIT = 1 << 20
"""Distinct keys a pure hash cache (KEY, PARTIAL_KEY) holds before it starts afresh."""


def normalize_key(key: Any) -> str:
    """The key as the groupings hash it: a plain `str`.

    Args: key: the tuple's key; a non-string is converted with `str()`.
    Returns: `key` itself when it is exactly a `str`, else `str(key)`.
    Raises: TypeError: `key` is None (a missing key is a data error, not the string "None").
    Source: issue contract (bad input); the reference's keys are always Java strings.
    """
    if type(key) is str:
        return key
    if key is None:
        raise TypeError("a tuple's key must not be None (convert missing keys explicitly)")
    return str(key)


def index_column_name(seed: int) -> str:
    """Name of the column that holds the worker index of each key under murmur3 `seed`."""
    return f"index{seed}"


class KeyTable:
    """Interns keys to dense ids and stores per-key columns (numpy arrays indexed by id).

    Args:
        num_workers: n used for the index columns; None when no index column is needed.
        seeds: murmur3 seeds; for each, column `index<seed>` (int64) holds `index(seed, key, n)`,
            which may be negative for a `Long.MIN_VALUE` hash (see `has_negative_index`).
        java_hash: also keep column `spread` (int64), the Java `HashMap` spread of the key's
            `String.hashCode` (KeySpace iteration order, §7.4).
        group_of: also keep column `group` (int64), `group_of(key)`: the key group or vnode of
            the key, for the groupings whose workers own groups of keys (KEY_GROUP, VNODE).

    Columns have a capacity of at least `len(self)` rows; rows `>= len(self)` are unused. A column
    array may be reallocated by any call that interns keys, so fetch it again afterwards.
    """

    def __init__(
        self,
        num_workers: int | None = None,
        seeds: Sequence[int] = (),
        java_hash: bool = False,
        group_of: Callable[[str], int] | None = None,
    ) -> None:
        self.num_workers = num_workers
        self.seeds = tuple(seeds)
        self.java_hash = bool(java_hash)
        self.group_of = group_of
        self.has_negative_index = False
        self._ids: dict[str, int] = {}
        self._keys: list[str] = []
        self._capacity = 16
        self._columns: dict[str, npt.NDArray[Any]] = {}
        self._fills: dict[str, Any] = {}
        for seed in self.seeds:
            self.add_column(index_column_name(seed), np.int64, -1)
        if self.java_hash:
            self.add_column("spread", np.int64, 0)
        if self.group_of is not None:
            self.add_column("group", np.int64, -1)

    # -- columns ---------------------------------------------------------------------------------
    def add_column(self, name: str, dtype: npt.DTypeLike, fill: Any) -> None:
        """Register a per-key column, every row (existing keys included) set to `fill`.

        Raises: ValueError: the name is already taken.
        """
        if name in self._columns:
            raise ValueError(f"column {name!r} already exists")
        self._columns[name] = np.full(self._capacity, fill, dtype=dtype)
        self._fills[name] = fill

    def column(self, name: str) -> npt.NDArray[Any]:
        """The live array of column `name` (capacity rows; rows `>= len(self)` are unused)."""
        return self._columns[name]

    # -- ids -------------------------------------------------------------------------------------
    def __len__(self) -> int:
        return len(self._keys)

    def key_of(self, key_id: int) -> str:
        """The key with id `key_id`."""
        return self._keys[key_id]

    def find_id(self, key: Any) -> int | None:
        """The id of `key` (normalised as by `normalize_key`), or None if it was never interned."""
        return self._ids.get(normalize_key(key))

    def id_of(self, key: Any) -> int:
        """The id of `key`, interning it (and computing its hashes) on first sight.

        Raises: TypeError: `key` is None.
        """
        key_id = self._ids.get(key) if type(key) is str else None
        if key_id is None:
            key_id = self._intern(normalize_key(key))
        return key_id

    def ids_of(self, keys: Iterable[Any]) -> npt.NDArray[np.int64]:
        """Ids of a batch of keys, interning new ones in order of first sight.

        Args: keys: a sequence (list, tuple, numpy or pandas array) of keys.
        Returns: int64 array of shape `(len(keys),)`.
        Raises: TypeError: a key is None (no id is returned; keys before it may have been interned).
        """
        if not isinstance(keys, list | tuple | np.ndarray):
            keys = list(keys)  # pandas/pyarrow arrays and iterators: positional access below
        get = self._ids.get
        if self._keys:
            try:
                # C-level loop: one dict probe per tuple; misses come back as -1.
                ids = np.fromiter(map(get, keys, repeat(-1)), dtype=np.int64, count=len(keys))
            except TypeError:  # an unhashable key: the per-key path below handles it
                ids = np.full(len(keys), -1, dtype=np.int64)
            misses = np.flatnonzero(ids < 0)
        else:  # an empty table: every key misses, skip the first probe
            ids = np.full(len(keys), -1, dtype=np.int64)
            misses = np.arange(len(keys))
        if misses.size:
            missing = keys if misses.size == len(keys) else [keys[i] for i in misses.tolist()]
            try:
                distinct = dict.fromkeys(missing)  # C-level; first-sight order
            except TypeError:  # unhashable keys: per-key path only
                distinct = {}
            for key in distinct:  # few: the distinct new keys of the batch
                self.id_of(key)  # raises on None
            if distinct:
                ids[misses] = np.fromiter(
                    map(get, missing, repeat(-1)), dtype=np.int64, count=len(missing)
                )
                misses = misses[ids[misses] < 0]  # non-string keys: interned under str(key)
            for i in misses.tolist():
                ids[i] = self.id_of(keys[i])
        return ids

    def _intern(self, key: str) -> int:
        key_id = self._ids.get(key)
        if key_id is not None:
            return key_id
        key_id = len(self._keys)
        if key_id >= self._capacity:
            self._grow(2 * self._capacity)
        self._ids[key] = key_id
        self._keys.append(key)
        if self.seeds:
            n = self.num_workers
            assert n is not None, "index columns need num_workers"
            for seed in self.seeds:
                idx = java_index_of_long(as_long(seed, key), n)
                if idx < 0:
                    self.has_negative_index = True
                self._columns[index_column_name(seed)][key_id] = idx
        if self.java_hash:
            self._columns["spread"][key_id] = hashmap_spread(java_string_hash(key))
        if self.group_of is not None:
            self._columns["group"][key_id] = self.group_of(key)
        return key_id

    def _grow(self, capacity: int) -> None:
        for name, col in self._columns.items():
            new = np.full(capacity, self._fills[name], dtype=col.dtype)
            new[: self._capacity] = col
            self._columns[name] = new
        self._capacity = capacity

    def compact(self, keep: npt.NDArray[np.bool_]) -> npt.NDArray[np.int64]:
        """Forget the keys where `keep` is False; the kept keys get new ids, in their old order.

        Args: keep: bool array of shape `(len(self),)`.
        Returns: int64 array mapping each old id to its new id, -1 for a forgotten key.
        """
        keep = np.asarray(keep, dtype=bool)
        if keep.shape != (len(self),):
            raise ValueError(f"keep must have shape ({len(self)},), got {keep.shape}")
        kept = np.flatnonzero(keep)
        mapping = np.full(len(self), -1, dtype=np.int64)
        mapping[kept] = np.arange(kept.size)
        self._keys = [self._keys[i] for i in kept.tolist()]
        self._ids = {key: i for i, key in enumerate(self._keys)}
        capacity = max(16, kept.size)
        for name, col in self._columns.items():
            new = np.full(capacity, self._fills[name], dtype=col.dtype)
            new[: kept.size] = col[kept]
            self._columns[name] = new
        self._capacity = capacity
        self.has_negative_index = any(
            bool((self._columns[index_column_name(seed)][: kept.size] < 0).any())
            for seed in self.seeds
        )
        return mapping

    # -- pickling and equality -------------------------------------------------------------------
    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        size = len(self._keys)
        # Unused capacity is not state: store the used rows only, and no duplicate id dict.
        state["_columns"] = {name: col[:size].copy() for name, col in self._columns.items()}
        state["_capacity"] = size
        del state["_ids"]
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._ids = {key: i for i, key in enumerate(self._keys)}
        if self._capacity < 16:
            self._grow(16)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, KeyTable):
            return NotImplemented
        size = len(self._keys)
        return (
            self._keys == other._keys
            and (self.num_workers, self.seeds, self.java_hash, self.has_negative_index)
            == (other.num_workers, other.seeds, other.java_hash, other.has_negative_index)
            and self._columns.keys() == other._columns.keys()
            and all(
                np.array_equal(col[:size], other._columns[name][:size])
                and col.dtype == other._columns[name].dtype
                for name, col in self._columns.items()
            )
        )

    __hash__ = None  # type: ignore[assignment]
