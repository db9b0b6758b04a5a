"""SpaceSaving (Metwally et al., ICDT 2005) with the exact behaviour of stream-lib's `StreamSummary`.

D_CHOICES and W_CHOICES find their heavy hitters with stream-lib's `StreamSummary` of capacity 100
(dkg-reference.md Appendix A). Which key is evicted, and which counter `topK(1)` returns, decide
routing, so the tie rules are stream-lib's, read from its code (addthis/stream-lib,
`StreamSummary`, `DoublyLinkedList`):

- counters sit in buckets of equal count, buckets ordered by count; a counter that is incremented
  leaves its bucket and joins the end of the bucket of its new count;
- a new key, when the summary is full, takes over the counter that has sat longest in the
  smallest-count bucket: `error = min count`, `count = min count + 1` (so `count` already includes
  the error; stream-lib's callers test `count + error`, which we reproduce);
- `topK` lists buckets from the largest count down and, inside a bucket, counters in the order
  they joined it.

Here a counter's place in its bucket is a stamp (a global sequence number taken whenever it joins a
bucket), so both rules become "smallest (count, stamp)" and "largest count, then smallest stamp".
The counters are numpy arrays so that the compiled batch loop (`groupings._kernels`) updates the
same state as the readable `offer`.

Guarantees (Metwally et al., Lemma 3.4 and Theorem 3.5), checked by the tests against exact counts:
`true <= count <= true + error`, `error <= m / capacity` once the summary is full, and every key
with true frequency above `m / capacity` is monitored.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from groupings._keytable import KeyTable, normalize_key

DEFAULT_CAPACITY = 100
"""stream-lib `StreamSummary` capacity used by SLB (`StreamSummaryHelper.capacity`)."""

SLOT_COLUMN = "sketch_slot"
"""KeyTable column: the counter slot that monitors each key, -1 when it is not monitored."""

# meta array layout: counters in use, the next stamp, the slot of topK(1) (-1 when empty)
SIZE, NEXT_STAMP, TOP = 0, 1, 2


@dataclass(frozen=True)
class Counter:
    """One monitored key: `count` (an over-estimate of its frequency) and `error` (the bound on
    the over-estimate), as stream-lib's `Counter`."""

    key: str
    count: int
    error: int


class SpaceSaving:
    """A SpaceSaving summary of at most `capacity` counters over string keys.

    Args:
        capacity: counters kept, an integer >= 1 (100 in SLB).
        table: the KeyTable that interns keys to ids; the summary adds column `sketch_slot` to it.
            A grouping passes its own hash cache; None makes a private one.
    Raises: ValueError: capacity < 1, or the table already has a summary.
    Source: stream-lib `StreamSummary.offer`/`topK` (see the module docstring).
    """

    def __init__(self, capacity: int = DEFAULT_CAPACITY, table: KeyTable | None = None) -> None:
        if isinstance(capacity, bool) or not isinstance(capacity, int | np.integer) or capacity < 1:
            raise ValueError(f"capacity must be an integer >= 1, got {capacity!r}")
        self.capacity = int(capacity)
        self.ids = np.full(self.capacity, -1, dtype=np.int64)
        self.counts = np.zeros(self.capacity, dtype=np.int64)
        self.errors = np.zeros(self.capacity, dtype=np.int64)
        self.stamps = np.zeros(self.capacity, dtype=np.int64)
        self.meta = np.array([0, 0, -1], dtype=np.int64)
        self.table = KeyTable() if table is None else table
        self.table.add_column(SLOT_COLUMN, np.int64, -1)

    # -- the sketch ------------------------------------------------------------------------------
    def offer(self, key: Any) -> None:
        """Count one occurrence of `key` (stream-lib `offer(item)`).

        Raises: TypeError: key is None.
        """
        self.offer_id(self.table.id_of(normalize_key(key)))

    def offer_id(self, key_id: int) -> int:
        """Count one occurrence of the key with table id `key_id`; returns its counter slot."""
        slots = self.table.column(SLOT_COLUMN)
        slot = int(slots[key_id])
        stamp = int(self.meta[NEXT_STAMP])
        self.meta[NEXT_STAMP] = stamp + 1
        if slot >= 0:
            self.counts[slot] += 1
        else:
            size = int(self.meta[SIZE])
            if size < self.capacity:
                slot = size
                self.meta[SIZE] = size + 1
                self.counts[slot], self.errors[slot] = 1, 0
            else:
                slot = self._min_slot()
                slots[self.ids[slot]] = -1  # the evicted key is no longer monitored
                minimum = int(self.counts[slot])
                self.counts[slot], self.errors[slot] = minimum + 1, minimum
            self.ids[slot] = key_id
            slots[key_id] = slot
        self.stamps[slot] = stamp  # it joins the end of its new bucket
        top = int(self.meta[TOP])
        # Only the counter just counted can overtake topK(1): it is the newest in its bucket.
        if top < 0 or self.counts[slot] > self.counts[top]:
            self.meta[TOP] = slot
        return slot

    def _min_slot(self) -> int:
        """The counter stream-lib evicts: smallest count, then longest in that bucket."""
        size = int(self.meta[SIZE])
        counts = self.counts[:size]
        candidates = np.flatnonzero(counts == counts.min())
        return int(candidates[np.argmin(self.stamps[candidates])])

    @property
    def top_slot(self) -> int:
        """The slot of stream-lib's `topK(1)` counter (largest count, longest in its bucket);
        -1 when the summary is empty."""
        return int(self.meta[TOP])

    def top_k(self, k: int | None = None) -> list[Counter]:
        """The first `k` counters (all when None) in stream-lib's `topK` order.

        Returns: counters by count descending, then by the order in which they joined their
            bucket; at most `len(self)` of them.
        """
        size = len(self)
        order = np.lexsort((self.stamps[:size], -self.counts[:size]))
        if k is not None:
            order = order[:k]
        return [
            Counter(self.table.key_of(int(self.ids[s])), int(self.counts[s]), int(self.errors[s]))
            for s in order.tolist()
        ]

    def counter(self, key: Any) -> Counter | None:
        """The counter of `key`, or None when the key is not monitored."""
        key_id = self.table.find_id(key)
        if key_id is None:
            return None
        slot = int(self.table.column(SLOT_COLUMN)[key_id])
        if slot < 0:
            return None
        return Counter(normalize_key(key), int(self.counts[slot]), int(self.errors[slot]))

    def __len__(self) -> int:
        return int(self.meta[SIZE])

    # -- the key table ---------------------------------------------------------------------------
    def rebind(self, table: KeyTable) -> None:
        """Move the summary onto a fresh key table (a cache restart): re-intern monitored keys.

        Raises: ValueError: the table already has a summary.
        """
        keys = [self.table.key_of(int(i)) for i in self.ids[: len(self)].tolist()]
        table.add_column(SLOT_COLUMN, np.int64, -1)
        self.table = table
        self._bind_keys(keys)

    def _bind_keys(self, keys: list[str]) -> None:
        for slot, key in enumerate(keys):
            key_id = self.table.id_of(key)
            self.ids[slot] = key_id
            self.table.column(SLOT_COLUMN)[key_id] = slot

    # -- pickling and equality -------------------------------------------------------------------
    def __getstate__(self) -> dict[str, Any]:
        # Ids belong to the (unpickled) key cache: keep the monitored keys as strings instead.
        state = self.__dict__.copy()
        state["keys"] = [self.table.key_of(int(i)) for i in self.ids[: len(self)].tolist()]
        del state["table"]
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        keys = state.pop("keys")
        self.__dict__.update(state)
        self.table = KeyTable()
        self.table.add_column(SLOT_COLUMN, np.int64, -1)
        self._bind_keys(keys)

    def _comparable(self) -> tuple[Any, ...]:
        size = len(self)
        keys = [self.table.key_of(int(i)) for i in self.ids[:size].tolist()]
        return (
            self.capacity,
            keys,
            self.counts[:size].tolist(),
            self.errors[:size].tolist(),
            self.stamps[:size].tolist(),
            int(self.meta[NEXT_STAMP]),
        )

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, SpaceSaving):
            return NotImplemented
        return self._comparable() == other._comparable()

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"SpaceSaving(capacity={self.capacity}, size={len(self)})"


def item_probability(count: Any, error: Any, messages: int) -> Any:
    """SLB's frequency estimate of a monitored key, in Java `float` arithmetic.

    Args: count, error: the key's counter (ints, or int arrays of the same shape); messages: m,
        the messages this instance has seen.
    Returns: `((float) count + (float) error) / (float) m`: a float32, or a float32 array.
    Source: SLBSimulator `LBDChoice.getTopK` / `getPHead` / `getPTop`.
    """
    counts = np.asarray(count).astype(np.float32)
    errors = np.asarray(error).astype(np.float32)
    return ((counts + errors) / np.float32(messages))[()]
