"""DYNAMIC_KEY: the reference `DynamicKeyGrouping` with its generational KeySpace (§6-§8).

Each key has a pool of candidate workers, the ring slice `home, home+1, ..., home+w-1 (mod n)`
with `home = index(13, key, n)` and `w = 2` by default. A tuple goes to the least loaded pool member
(local, cumulative, floored integer percentages). At most once per `check_interval_ms` per key, a
check may grow the pool of an old-space key whose whole pool is loaded at or above `up`, by the
next ring neighbour if that one is strictly less loaded; or shrink a pool with at least two members
below `up`. The KeySpace ranks keys by count; maintenance cycles run lazily, before the first tuple
at or after each due time.

`_choose` is the rule written as in the spec; `_route` runs the same rule in a compiled loop over
key ids (`groupings._kernels.dkg_route_loop`), split at maintenance due times.

Source: docs/reference/dkg-reference.md §6 (routing), §7 (KeySpace), §8 (maintenance),
decisions Q1-Q12 of §13.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from groupings import _kernels
from groupings._keytable import KeyTable, index_column_name
from groupings.base import Grouping, check_int
from groupings.hashing import KEY_SEED
from groupings.key import raise_negative_index
from groupings.keyspace import (
    COUNT_COLUMN,
    GENERATION_COLUMN,
    LAST_CHECK_COLUMN,
    NEVER,
    NO_ITEM,
    OLD,
    KeySpace,
    KeySpaceView,
)

POOL_COLUMN = "pool"
_HOME_COLUMN = index_column_name(KEY_SEED)
_INT_MAX = 2**31 - 1  # the reference's initial minimum load (Integer.MAX_VALUE)
_MIN_DEAD_KEYS = 1 << 16  # keys without state tolerated in the key table before compaction


def scale_thresholds(num_workers: int) -> tuple[int, int]:
    """DKG's load thresholds `(up, down)`, in integer percent, for n workers.

    Args: num_workers: n >= 1.
    Returns: with `ideal = 100.0 / n`: `up = int(ideal + sqrt(ideal))`,
        `down = int(ideal - sqrt(ideal))` (truncated, Q11); n = 5 gives (24, 15), n = 10 (13, 6),
        n >= 262 gives up = 0. The reference computes `down` and never uses it (Q1).
    Source: §6.2.
    """
    ideal = 100.0 / num_workers
    return int(ideal + math.sqrt(ideal)), int(ideal - math.sqrt(ideal))


def integer_load_percent(sent: int, total: int) -> int:
    """A worker's load as DKG sees it: its integer percentage of this instance's tuples.

    Args: sent: tuples this instance sent to the worker; total: tuples this instance routed.
    Returns: `0 if total == 0 else (100 * sent) // total`; cumulative since the instance started,
        never decayed (Q5).
    Source: §6.3.
    """
    return 0 if total == 0 else (100 * sent) // total


class DynamicKeyGrouping(Grouping):
    """DYNAMIC_KEY (reference `DynamicKeyGrouping`): per-key pools that grow for hot keys.

    Args:
        num_workers: n >= 1.
        start_ms: when the instance was prepared; anchors warm-up and maintenance cycle 0.
        distinct_key_count: sizes the KeySpace generations (10/40/50 at the default 100), §7.1.
        warm_up_ms: no scale-up until `now - start_ms > warm_up_ms` (strict).
        check_interval_ms: per key, a scaling check at most once per interval (strict `>`);
            a negative value re-checks inside the re-route after a scale-down, as the reference.
        initial_pool_size: pool size of a key without an entry (>= 1); also the floor of the
            shrink rules (the reference hard-codes 2 there; identical at the default).
        maintenance_period_ms: KeySpace cycle k is due at `start_ms + k * maintenance_period_ms`
            (>= 1).
        old_promotion_every: cycle k also promotes teen→old when `k % old_promotion_every ==
            old_promotion_every - 1` (>= 1).

    Raises: ValueError: a parameter is not an integer or is out of range.
    Raises (choose/route): HashIndexError for a key hashing to `Long.MIN_VALUE` (§2.3).
    Source: §6 (routing rules, parameters in §1), §7, §8; quirks Q1-Q12 reproduced.

    Time: `now_ms` is clamped to the last time seen (and to `start_ms`); a gap in the stream runs
    the missed maintenance cycles back to back before the next tuple (§8). A long run of cycles
    that no longer change the KeySpace is skipped once one full period of `old_promotion_every`
    cycles left it unchanged (same result, bounded work; see `_run_due_maintenance`).
    """

    name = "DYNAMIC_KEY"
    _shrink_on_down = False  # Q1: the reference counts "under-loaded" members against `up`

    def __init__(
        self,
        num_workers: int,
        *,
        start_ms: int = 0,
        distinct_key_count: int = 100,
        warm_up_ms: int = 15000,
        check_interval_ms: int = 60000,
        initial_pool_size: int = 2,
        maintenance_period_ms: int = 15000,
        old_promotion_every: int = 4,
    ) -> None:
        super().__init__(num_workers, start_ms=start_ms)
        self.distinct_key_count = check_int("distinct_key_count", distinct_key_count, minimum=0)
        self.warm_up_ms = check_int("warm_up_ms", warm_up_ms)
        self.check_interval_ms = check_int("check_interval_ms", check_interval_ms)
        self.initial_pool_size = check_int("initial_pool_size", initial_pool_size, minimum=1)
        self.maintenance_period_ms = check_int(
            "maintenance_period_ms", maintenance_period_ms, minimum=1
        )
        self.old_promotion_every = check_int("old_promotion_every", old_promotion_every, minimum=1)
        self.up, self.down = scale_thresholds(self.num_workers)
        self._shrink_below = self.down if self._shrink_on_down else self.up
        # One row per distinct key: home index, Java hash, pool size, KeySpace item columns.
        self._table = KeyTable(self.num_workers, seeds=(KEY_SEED,), java_hash=True)
        self._table.add_column(POOL_COLUMN, np.int32, 0)  # 0: no entry (initial_pool_size)
        self._keyspace = KeySpace(self.distinct_key_count, table=self._table)
        self._total = np.zeros(1, dtype=np.int64)  # an array, so the compiled loop can update it
        self._next_cycle = 0
        self._compact_at = _MIN_DEAD_KEYS
        self.fast_forward_idle_cycles = True

    # -- public queries --------------------------------------------------------------------------
    def pool_size(self, key: Any) -> int:
        """The key's current pool size at this instance (`initial_pool_size` without an entry)."""
        key_id = self._table.find_id(key)
        size = 0 if key_id is None else int(self._table.column(POOL_COLUMN)[key_id])
        return size or self.initial_pool_size

    def pool_sizes(self) -> dict[str, int]:
        """The pool map: keys with an entry (a size above `initial_pool_size`), sorted by key."""
        pool = self._table.column(POOL_COLUMN)[: len(self._table)]
        return dict(sorted((self._table.key_of(i), int(pool[i])) for i in np.flatnonzero(pool)))

    @property
    def keyspace(self) -> KeySpaceView:
        """Read-only view of this instance's KeySpace (old, teen and baby keys with counts)."""
        return KeySpaceView(self._keyspace)

    @property
    def total(self) -> int:
        """Tuples this instance has routed."""
        return int(self._total[0])

    @property
    def next_cycle_due_ms(self) -> int:
        """When the next KeySpace maintenance cycle is due (ms)."""
        return self.start_ms + self._next_cycle * self.maintenance_period_ms

    def _equality_state(self) -> dict[str, Any]:
        # In key terms, so that equality does not depend on the order keys got their ids.
        state = super()._equality_state()
        state.pop("_keyspace")
        state.pop("fast_forward_idle_cycles")  # same results either way
        state.pop("_compact_at")  # cache housekeeping
        state["keyspace"] = self._keyspace.state()
        state["pools"] = self.pool_sizes()
        return state

    def __getstate__(self) -> dict[str, Any]:
        self._compact()  # pickle only keys with state (an item or a pool entry)
        return super().__getstate__()

    def _compact(self) -> None:
        """Forget the cached hashes of keys with no state left (dropped from the KeySpace, no
        pool entry): their rows are all defaults, so nothing observable changes."""
        table = self._table
        size = len(table)
        keep = (table.column(GENERATION_COLUMN)[:size] != NO_ITEM) | (
            table.column(POOL_COLUMN)[:size] != 0
        )
        if not keep.all():
            self._keyspace.remap_ids(table.compact(keep))
        live = len(table)
        self._compact_at = live + max(live, _MIN_DEAD_KEYS)

    # -- one tuple: the spec's rule ----------------------------------------------------------------
    def _choose(self, key: str, now: int) -> int:
        if len(self._table) >= self._compact_at:
            self._compact()
        key_id = self._table.id_of(key)
        if self._table.column(_HOME_COLUMN)[key_id] < 0:  # raise before any state changes
            raise_negative_index(self._table, np.array([key_id]), _HOME_COLUMN)
        self._run_due_maintenance(now)
        task = self._best(key_id, now)
        self._loads[task] += 1
        self._total[0] += 1
        self._keyspace.record_id(key_id)  # after routing: a key's first tuple finds no item
        return task

    def _best(self, key_id: int, now: int) -> int:
        """§6.4 `best(key, now)`: least-loaded pool member, then at most one scaling check."""
        n = self.num_workers
        table = self._table
        home = int(table.column(_HOME_COLUMN)[key_id])
        pool = table.column(POOL_COLUMN)
        w = int(pool[key_id]) or self.initial_pool_size
        below = 0
        best = -1
        min_load = _INT_MAX
        for i in range(w):
            c = (home + i) % n
            load = self._load(c)
            if load < self._shrink_below:
                below += 1
            if load < min_load:  # strict: ties go to the earliest ring position (home first)
                min_load, best = load, c
        generation = int(table.column(GENERATION_COLUMN)[key_id])
        if generation != NO_ITEM and self._check_due(key_id, now):
            if now - self.start_ms > self.warm_up_ms and min_load >= self.up and generation == OLD:
                candidate = (home + w) % n  # only the next ring neighbour (Q3)
                if self._load(candidate) < min_load:
                    best = candidate  # the new worker takes this very tuple
                    pool[key_id] = w + 1
            elif w > self.initial_pool_size and below >= 2:  # counted against `up` (Q1)
                pool[key_id] = 0 if w - 1 <= self.initial_pool_size else w - 1
                return self._best(key_id, now)  # re-route with the smaller pool
        return best

    def _load(self, worker: int) -> int:
        return integer_load_percent(int(self._loads[worker]), int(self._total[0]))

    def _check_due(self, key_id: int, now: int) -> bool:
        """§6.5: due when never checked or `now - last_check > check_interval_ms`; stamps it."""
        last_check = self._table.column(LAST_CHECK_COLUMN)
        last = int(last_check[key_id])
        if last != NEVER and not now - last > self.check_interval_ms:
            return False
        last_check[key_id] = now
        return True

    # -- a batch: the same rule compiled, between maintenance cycles ------------------------------
    def _route(self, keys: Sequence[Any], now: npt.NDArray[np.int64]) -> npt.NDArray[np.int32]:
        if len(self._table) >= self._compact_at:
            self._compact()  # before any id of this batch exists
        table = self._table
        ids = table.ids_of(keys)  # may grow the columns: fetch them afterwards
        if table.has_negative_index:
            raise_negative_index(table, ids, _HOME_COLUMN)
        m = len(ids)
        tasks = np.empty(m, dtype=np.int32)
        new_babies = np.empty(m, dtype=np.int64)
        loop = _kernels.compiled("dkg_route_loop")
        columns = (
            table.column(_HOME_COLUMN),
            table.column(POOL_COLUMN),
            table.column(GENERATION_COLUMN),
            table.column(COUNT_COLUMN),
            table.column(LAST_CHECK_COLUMN),
        )
        pos = 0
        while pos < m:
            self._run_due_maintenance(int(now[pos]))
            # The segment ends before the first tuple at or after the next cycle's due time.
            end = pos + int(np.searchsorted(now[pos:], self.next_cycle_due_ms, side="left"))
            n_new = loop(
                ids[pos:end], now[pos:end], tasks[pos:end],
                self.num_workers, self.up, self._shrink_below, self.start_ms, self.warm_up_ms,
                self.check_interval_ms, self.initial_pool_size,
                *columns, self._loads, self._total, new_babies,
            )  # fmt: skip
            self._keyspace.add_babies_order_only(new_babies[:n_new])
            pos = end
        return tasks

    # -- maintenance (§8) -------------------------------------------------------------------------
    def _run_due_maintenance(self, now: int) -> None:
        """Run, in order, every cycle not yet run whose due time is `<= now` (§8).

        Cycle k runs baby→teen and, when `k % old_promotion_every == old_promotion_every - 1`,
        teen→old right after. Over a long gap, once a whole period of cycles has left the KeySpace
        unchanged (counts never change in cycles, so the state is then a fixed point), the
        remaining whole periods are skipped: the result is the same as running them.
        """
        period = self.maintenance_period_ms
        k = self._next_cycle
        if self.start_ms + k * period > now:
            return
        last_due = (now - self.start_ms) // period  # now >= start_ms (clamped)
        every = self.old_promotion_every
        previous = None
        while k <= last_due:
            self._run_cycle(k)
            k += 1
            if self.fast_forward_idle_cycles and k % every == 0 and last_due - k + 1 >= every:
                snapshot = self._keyspace.snapshot()
                if snapshot == previous:
                    k += (last_due - k + 1) // every * every
                previous = snapshot
        self._next_cycle = k

    def _run_cycle(self, k: int) -> None:
        self._keyspace.promote_to_teenage_space()
        if k % self.old_promotion_every == self.old_promotion_every - 1:
            self._keyspace.promote_to_old_space()


class DynamicKeyDownGrouping(DynamicKeyGrouping):
    """Variant DYNAMIC_KEY_DOWN: scale-down counts pool members below `down`, not `up` (Q1).

    Everything else is DYNAMIC_KEY. This is the rule the newer reference README describes
    ("below loadToScaleDown"); the reference code uses `up`, which makes pools oscillate.
    Source: §13 Q1 (fix allowed only in a named variant).
    """

    name = "DYNAMIC_KEY_DOWN"
    _shrink_on_down = True
