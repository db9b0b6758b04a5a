"""DKG's generational KeySpace (reference `KeySpace`, `KeyItem`), with Java `HashMap` order.

The KeySpace ranks keys by how often an instance has seen them, in three generations: `baby` (new
keys), `teen` and `old` (the hottest keys; only they may grow their worker pool). Between two
maintenance cycles only `record` changes it: a known key's count grows, a new key enters baby.
A cycle (§8) promotes baby→teen and, every 4th cycle, teen→old.

Exactness hinges on ties: the reference sorts items by count with a stable sort, so equal counts
keep the order in which a `java.util.HashMap` yields them. `_JavaHashMapOrder` emulates that order
(ascending bucket of the key's spread `String.hashCode`, then insertion order within a bucket) and
the table growth that changes the buckets (§7.4).

Items live in the columns of a `KeyTable` (one row per key id): generation, count and last check
time. That lets DYNAMIC_KEY's compiled loop read and update them by key id between cycles.

Source: docs/reference/dkg-reference.md §7 (KeySpace), §8 (cycles), Q6-Q9, Q15.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from groupings._keytable import KeyTable
from groupings.hashing import hashmap_threshold, table_size_for

NO_ITEM, BABY, TEEN, OLD = 0, 1, 2, 3
"""Codes of the `ks_generation` column: where a key's item lives (0: the key has no item)."""

GENERATION_NAMES = {BABY: "baby", TEEN: "teen", OLD: "old"}

NEVER = int(np.iinfo(np.int64).min)
"""`last_check` of an item never checked: its first check is always due (§6.5)."""

GENERATION_COLUMN = "ks_generation"
COUNT_COLUMN = "ks_count"
LAST_CHECK_COLUMN = "ks_last_check"


def generation_capacities(distinct_key_count: int) -> tuple[int, int, int]:
    """Sizes of the old, teen and baby generations for `distinct_key_count` d.

    Args: distinct_key_count: d, the reference's `distinctKeyCount` (100 for every dataset).
    Returns: `(int(d * 0.1), int(d * 0.4), int(d * 0.5))` computed in binary64 as the reference
        does (`d * (10/100.0)` ...); d = 100 gives (10, 40, 50), d = 20 gives (2, 8, 10).
    Source: §7.1.
    """
    return (
        int(distinct_key_count * (10 / 100.0)),
        int(distinct_key_count * (40 / 100.0)),
        int(distinct_key_count * (50 / 100.0)),
    )


@dataclass(frozen=True)
class KeyItem:
    """A read-only snapshot of one reference `KeyItem`.

    Attributes: key; count (tuples recorded since the item was created, starting at 1);
        last_check (ms of the last scaling check, None if never checked); generation
        ("baby", "teen" or "old").
    Not kept: the reference's set of tasks used and `last_seen` are bookkeeping that no rule reads
    (§7.2), so they are not stored.
    """

    key: str
    count: int
    last_check: int | None
    generation: str


class _JavaHashMapOrder:
    """Iteration order of one `java.util.HashMap<String, KeyItem>` (keys as ids), no tree bins.

    Keeps the ids in insertion order since the last `clear()` and the table capacity. Iteration runs
    by ascending bucket and, within a bucket, by insertion order: Java appends to a bucket's list,
    and a resize splits each bucket preserving relative order, so insertion order is all that is
    needed. Tree bins (9+ keys in one bucket) are not emulated (§7.4, unspecified there).
    """

    def __init__(self, initial_capacity: int) -> None:
        self.capacity = table_size_for(initial_capacity)
        self.ids: list[int] = []

    def put_new(self, ids: list[int]) -> None:
        """Insert keys not yet in the map, in order; the table doubles while size > threshold."""
        self.ids.extend(ids)
        # Java checks after each insertion; one doubling always suffices per insertion, so
        # doubling until the final size fits gives the same capacity.
        while len(self.ids) > hashmap_threshold(self.capacity):
            self.capacity *= 2

    def clear(self) -> None:
        """Java `clear()`: empties the map and keeps the table capacity."""
        self.ids = []

    def iteration_order(self, spread: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
        """The ids in Java iteration order. `spread`: the table's `spread` column."""
        ids = np.asarray(self.ids, dtype=np.int64)
        buckets = spread[ids] & (self.capacity - 1)
        return ids[np.argsort(buckets, kind="stable")]

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, _JavaHashMapOrder):
            return NotImplemented
        return self.capacity == other.capacity and self.ids == other.ids

    __hash__ = None  # type: ignore[assignment]


class KeySpace:
    """The reference KeySpace of one DYNAMIC_KEY instance: three generations of KeyItems.

    Args:
        distinct_key_count: d; the generations hold `generation_capacities(d)` keys (§7.1).
        table: the `KeyTable` whose ids the KeySpace uses (it must keep the `spread` column); the
            KeySpace adds its columns `ks_generation`, `ks_count` and `ks_last_check` to it. A
            private table is created when None.

    Raises: ValueError: `distinct_key_count` is negative, or `table` has no `spread` column.
    Source: §7 (the whole section), §8 for when the cycles run.
    """

    def __init__(self, distinct_key_count: int = 100, *, table: KeyTable | None = None) -> None:
        if distinct_key_count < 0:
            raise ValueError(f"distinct_key_count must be >= 0, got {distinct_key_count}")
        if table is None:
            table = KeyTable(java_hash=True)
        if not table.java_hash:
            raise ValueError("the KeySpace's KeyTable must keep the java hash (java_hash=True)")
        self.distinct_key_count = distinct_key_count
        self.old_max, self.teen_max, self.baby_max = generation_capacities(distinct_key_count)
        self._table = table
        table.add_column(GENERATION_COLUMN, np.int8, NO_ITEM)
        table.add_column(COUNT_COLUMN, np.int64, 0)
        table.add_column(LAST_CHECK_COLUMN, np.int64, NEVER)
        # Each map is created with the generation's size as initial capacity (§7.1).
        self._old = _JavaHashMapOrder(self.old_max)
        self._teen = _JavaHashMapOrder(self.teen_max)
        self._baby = _JavaHashMapOrder(self.baby_max)

    # -- queries by key (the reference API) ------------------------------------------------------
    def find(self, key: str) -> KeyItem | None:
        """The key's item (looked up in old, then teen, then baby), or None. §7.3."""
        key_id = self._table.find_id(key)
        if key_id is None:
            return None
        return self.item_of(key_id)

    def in_old(self, key: str) -> bool:
        """Whether the key's item is in old space (the scale-up gate, §6.4, Q4)."""
        key_id = self._table.find_id(key)
        return key_id is not None and self.generation_of(key_id) == OLD

    def record(self, key: str, task: int | None = None) -> None:
        """Count one tuple of `key` routed to `task` (§7.3): `count += 1`, or a new baby item.

        `task` is accepted for the reference's signature; the task set it fed is not kept.
        Raises: TypeError: `key` is None.
        """
        self.record_id(self._table.id_of(key))

    def old_items(self) -> list[tuple[str, int]]:
        """`(key, count)` of old space in Java `HashMap` iteration order."""
        return self._items(self._old)

    def teen_items(self) -> list[tuple[str, int]]:
        """`(key, count)` of teen space in Java `HashMap` iteration order."""
        return self._items(self._teen)

    def baby_items(self) -> list[tuple[str, int]]:
        """`(key, count)` of baby space in Java `HashMap` iteration order."""
        return self._items(self._baby)

    @property
    def map_capacities(self) -> tuple[int, int, int]:
        """Current Java table capacities of the old, teen and baby maps (16, 64, 64 at d = 100)."""
        return self._old.capacity, self._teen.capacity, self._baby.capacity

    def __len__(self) -> int:
        """Number of items in all generations."""
        return len(self._old.ids) + len(self._teen.ids) + len(self._baby.ids)

    # -- the cycles (§7.7, §7.8) -----------------------------------------------------------------
    def promote_to_teenage_space(self) -> None:
        """Cycle baby→teen (reference `promoteToTeenageSpace`), §7.7.

        Baby keys ranked below `baby_max` lose their item (count and check history), Q7.
        """
        baby_sorted = self._sort_desc(self._baby)
        keep, dropped = baby_sorted[: self.baby_max], baby_sorted[self.baby_max :]
        if dropped.size:
            self._columns_reset(dropped)
        babies = deque(keep.tolist())
        teens = deque(self._sort_desc(self._teen).tolist())
        self._promote(babies, teens, self.teen_max)
        self._refill(self._baby, list(babies), BABY)
        self._refill(self._teen, list(teens), TEEN)

    def promote_to_old_space(self) -> None:
        """Cycle teen→old (reference `promoteToOldSpace`), §7.8.

        The old list is re-sorted after promotion (a side effect of the reference's logging) and
        the teen list is not, so teen may exceed `teen_max`.
        """
        teens = deque(self._sort_desc(self._teen).tolist())
        olds = deque(self._sort_desc(self._old).tolist())
        self._promote(teens, olds, self.old_max)
        count = self._table.column(COUNT_COLUMN)
        old_list = sorted(olds, key=lambda i: -count[i])  # stable, like Java's List.sort
        self._refill(self._teen, list(teens), TEEN)
        self._refill(self._old, old_list, OLD)

    def snapshot(self) -> tuple[Any, ...]:
        """Everything a cycle reads or writes besides counts: each map's ids in order and capacity.

        Cycles never change counts, so two equal snapshots (same counts) evolve identically.
        """
        return tuple((tuple(m.ids), m.capacity) for m in (self._old, self._teen, self._baby))

    def state(self) -> dict[str, Any]:
        """The whole KeySpace in key terms (independent of key ids), for equality and debugging.

        Returns: `{"distinct_key_count": d, "old"/"teen"/"baby": (capacity, keys in insertion
        order), "items": {key: (count, last_check)}}`.
        """
        key_of = self._table.key_of
        count = self._table.column(COUNT_COLUMN)
        last_check = self._table.column(LAST_CHECK_COLUMN)
        state: dict[str, Any] = {"distinct_key_count": self.distinct_key_count, "items": {}}
        for name, generation in (("old", self._old), ("teen", self._teen), ("baby", self._baby)):
            state[name] = (generation.capacity, [key_of(i) for i in generation.ids])
            for i in generation.ids:
                state["items"][key_of(i)] = (int(count[i]), int(last_check[i]))
        return state

    # -- by id (for DYNAMIC_KEY's loops) ---------------------------------------------------------
    @property
    def table(self) -> KeyTable:
        """The `KeyTable` holding the KeySpace's columns."""
        return self._table

    def generation_of(self, key_id: int) -> int:
        """NO_ITEM, BABY, TEEN or OLD."""
        return int(self._table.column(GENERATION_COLUMN)[key_id])

    def item_of(self, key_id: int) -> KeyItem | None:
        """Snapshot of the item of `key_id`, or None if it has none."""
        generation = self.generation_of(key_id)
        if generation == NO_ITEM:
            return None
        last_check = int(self._table.column(LAST_CHECK_COLUMN)[key_id])
        return KeyItem(
            key=self._table.key_of(key_id),
            count=int(self._table.column(COUNT_COLUMN)[key_id]),
            last_check=None if last_check == NEVER else last_check,
            generation=GENERATION_NAMES[generation],
        )

    def record_id(self, key_id: int) -> None:
        """`record` by id: the item's count grows, or the key gets a new baby item (count 1)."""
        if self._table.column(GENERATION_COLUMN)[key_id] != NO_ITEM:
            self._table.column(COUNT_COLUMN)[key_id] += 1
        else:
            self.add_babies([key_id])

    def add_babies(self, key_ids: list[int] | npt.NDArray[np.int64]) -> None:
        """Put new items (keys without one), in this order, into baby; their count becomes 1.

        A compiled loop that already set their columns calls this only to update the map order.
        """
        key_ids = [int(i) for i in key_ids]
        if not key_ids:
            return
        self._table.column(GENERATION_COLUMN)[key_ids] = BABY
        self._table.column(COUNT_COLUMN)[key_ids] = 1
        self._baby.put_new(key_ids)

    def add_babies_order_only(self, key_ids: npt.NDArray[np.int64]) -> None:
        """Append keys to the baby map's order (a compiled loop already set their columns)."""
        if key_ids.size:
            self._baby.put_new(key_ids.tolist())

    def remap_ids(self, mapping: npt.NDArray[np.int64]) -> None:
        """Follow a `KeyTable.compact`: `mapping[old_id]` is the new id (items must be kept)."""
        for generation in (self._old, self._teen, self._baby):
            if generation.ids:
                new_ids = mapping[np.asarray(generation.ids, dtype=np.int64)]
                if (new_ids < 0).any():
                    raise ValueError("a compaction dropped a key that has an item")
                generation.ids = new_ids.tolist()

    # -- internals -------------------------------------------------------------------------------
    def _items(self, generation: _JavaHashMapOrder) -> list[tuple[str, int]]:
        count = self._table.column(COUNT_COLUMN)
        order = generation.iteration_order(self._table.column("spread"))
        return [(self._table.key_of(i), int(count[i])) for i in order.tolist()]

    def _sort_desc(self, generation: _JavaHashMapOrder) -> npt.NDArray[np.int64]:
        """Ids of a map sorted by count descending, ties in Java iteration order (§7.5, Q9)."""
        ids = np.asarray(generation.ids, dtype=np.int64)
        if ids.size == 0:
            return ids
        buckets = self._table.column("spread")[ids] & (generation.capacity - 1)
        counts = self._table.column(COUNT_COLUMN)[ids]
        # lexsort is stable: count desc, then bucket, then insertion order (the list position).
        return ids[np.lexsort((buckets, -counts))]

    def _promote(self, frm: deque[int], to: deque[int], to_max: int) -> None:
        """Reference promotion between two generations, on sorted lists in place (§7.6, Q8)."""
        count = self._table.column(COUNT_COLUMN)
        moved = 0
        while len(to) < to_max:  # phase 1: fill free slots, inserting at the FRONT
            if not frm:
                return
            to.appendleft(frm.popleft())
            moved += 1
        while moved < to_max:  # phase 2: the counter continues from phase 1
            if not frm:
                return
            # Strict, and against the LAST element of `to`, which is not always its minimum.
            if count[frm[0]] > count[to[-1]]:
                x = frm.popleft()
                y = to.pop()
                to.appendleft(x)
                frm.append(y)  # the displaced item goes to the END of the from-list
            else:
                break
            moved += 1

    def _refill(self, generation: _JavaHashMapOrder, ids: list[int], code: int) -> None:
        generation.clear()
        generation.put_new(ids)
        if ids:
            self._table.column(GENERATION_COLUMN)[ids] = code

    def _columns_reset(self, ids: npt.NDArray[np.int64]) -> None:
        self._table.column(GENERATION_COLUMN)[ids] = NO_ITEM
        self._table.column(COUNT_COLUMN)[ids] = 0
        self._table.column(LAST_CHECK_COLUMN)[ids] = NEVER

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, KeySpace):
            return NotImplemented
        return self.state() == other.state()

    __hash__ = None  # type: ignore[assignment]


class KeySpaceView:
    """Read-only view of a DYNAMIC_KEY instance's KeySpace (queries only, no mutation)."""

    def __init__(self, keyspace: KeySpace) -> None:
        self._ks = keyspace

    def find(self, key: str) -> KeyItem | None:
        """See `KeySpace.find`."""
        return self._ks.find(key)

    def in_old(self, key: str) -> bool:
        """See `KeySpace.in_old`."""
        return self._ks.in_old(key)

    def old_items(self) -> list[tuple[str, int]]:
        """Old keys with their counts, in Java iteration order."""
        return self._ks.old_items()

    def teen_items(self) -> list[tuple[str, int]]:
        """Teenage keys with their counts, in Java iteration order."""
        return self._ks.teen_items()

    def baby_items(self) -> list[tuple[str, int]]:
        """Baby keys with their counts, in Java iteration order."""
        return self._ks.baby_items()

    @property
    def capacities(self) -> tuple[int, int, int]:
        """Generation sizes (old, teen, baby) from `distinct_key_count`."""
        return self._ks.old_max, self._ks.teen_max, self._ks.baby_max

    def __len__(self) -> int:
        return len(self._ks)
