"""D_CHOICES and W_CHOICES: SLB's answer to keys too hot for two choices (Nasir et al., ICDE 2016).

"When Two Choices Are not Enough: Balancing at Scale in Distributed Stream Processing" keeps
PARTIAL_KEY for the tail of the key distribution and gives the head (the heavy hitters, found
with a SpaceSaving summary per source) more choices: d of them for D-Choices, every worker for
W-Choices. The rules are dkg-reference.md Appendix A, read from the authors' code
(anisnasir/SLBStorm `DChoiceGrouping`/`WChoiceGrouping`, anisnasir/SLBSimulator
`LBDChoice`/`LBWChoice`):

- every instance (source) offers each key to its own SpaceSaving summary of capacity 100 and counts
  its messages m (this one included);
- the key is in the head when `(count + error) / m > theta`, `theta = 2 / (n * T)`, in Java float
  arithmetic (`head_threshold`, `space_saving.item_probability`);
- a head key goes to the least loaded of its candidates: D-Choices hashes it with the first d of
  the murmur3 seeds 2, 3, 5, 7, ... (`d_choice_index`), d from `choice_count`, or takes every
  worker when d >= n; W-Choices takes every worker;
- a tail key goes by PARTIAL_KEY's rule (seeds 13 and 17, the second only when the first has
  strictly more tuples), as SLBStorm does;
- "least loaded" is the instance's own count of tuples sent (local load, as PKG), the first
  candidate winning ties (`selectMinChoice`).

Where the authors' two programs disagree we follow SLBStorm, the Storm code the paper measured,
except where it is broken: SLBStorm never counts m (its `totalItems` stays 0, so every key would
be "head"); we count m as SLBSimulator does. SLBStorm sends an empty key to task 0; keys here are
never special. The d rule starts at max(1, round(p_top * n)): the authors' loop could end at d = 0
(only if p_H <= epsilon) and would then index an empty array.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from functools import cache
from numbers import Real
from typing import Any

import numpy as np
import numpy.typing as npt

from groupings import _kernels
from groupings._keytable import CACHE_LIMIT, KeyTable, index_column_name
from groupings.hashing import KEY_SEED, SECOND_SEED, as_long, java_remainder
from groupings.key import HashCachedGrouping, raise_negative_index
from groupings.space_saving import DEFAULT_CAPACITY, SLOT_COLUMN, SpaceSaving, item_probability

DEFAULT_T = 10
"""T of `theta = 2/(n*T)`: SLBStorm's hard-coded 10 (theta = 1/(5n))."""

DEFAULT_EPSILON = 1e-4
"""Tolerance of D-Choices' two inequalities (SLBStorm's 0.0001)."""

_FIRST = index_column_name(KEY_SEED)
_SECOND = index_column_name(SECOND_SEED)
_DCHOICE_ROW = "dchoice_row"


def head_threshold(num_workers: int, t: float) -> np.float32:
    """theta, the frequency above which a key is in the head: `2 / (float)(n * T)` (Java float).

    Args: num_workers: n >= 1; t: T > 0.
    Returns: theta as float32 (0.02 for n=10, T=10).
    Source: SLBSimulator `LBDChoice.getSever` (`Choice/(float)(serversNo*threshold)`, Choice = 2).
    """
    return np.float32(2) / np.float32(num_workers * t)


def choice_count(p_top: float, p_head: float, head_size: int, n: int, epsilon: float) -> int:
    """d, the number of choices D-Choices gives a head key.

    Starts at `max(1, round(p_top * n))` and increments until `d > n` or both hold, with
    `b = (n-1)/n` and `p_T = 1 - p_H`:
    `p_H + p_T * (1 - b**(|H|*d))**2 <= 1 - b**(|H|*d) + epsilon` and
    `p_top + (p_H - p_top) * (1 - b**d)**d + p_T * (1 - b**d)**2 <= 1 - b**d + epsilon`.

    Args: p_top: the top key's estimated frequency; p_head: the head's total estimated frequency
        (p_H); head_size: |H|; n: workers; epsilon: the tolerance.
    Returns: d >= 1; a value >= n means "every worker".
    Source: dkg-reference.md Appendix A; SLBStorm `DChoiceGrouping.chooseTasks` (its do/while).
    """
    base = (n - 1) / n
    p_tail = 1 - p_head
    d = max(1, math.floor(p_top * n + 0.5))  # Java Math.round(double)
    while True:
        # float exponents: C pow(), as Java's Math.pow and the compiled loop use
        head_term = 1 - base ** float(head_size * d)
        holds_head = p_head + p_tail * head_term * head_term <= head_term + epsilon
        top_term = 1 - base ** float(d)
        holds_top = (
            p_top + (p_head - p_top) * top_term ** float(d) + p_tail * top_term * top_term
            <= top_term + epsilon
        )
        if d + 1 > n or (holds_head and holds_top):
            return d
        d += 1


def base_powers(n: int, largest: int) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    """The powers `choice_count` takes, computed once with the same C `pow`.

    Args: n: workers; largest: the largest exponent of b = (n-1)/n needed (|H| * d <= 100 * n).
    Returns: `b ** float(x)` for x = 0..largest, and `(1 - b ** float(d)) ** float(d)` for
        d = 0..n. The compiled loop reads them instead of calling `pow` per tuple.
    """
    base = (n - 1) / n
    powers = [base ** float(x) for x in range(largest + 1)]
    top = [(1 - base ** float(d)) ** float(d) for d in range(n + 1)]
    return np.array(powers, dtype=np.float64), np.array(top, dtype=np.float64)


@cache
def d_choice_seeds(count: int) -> tuple[int, ...]:
    """The murmur3 seeds of D-Choices' hash functions: the first `count` primes, 2, 3, 5, ...

    Source: SLBStorm `Seed` (starts at 2; SLBSimulator's copy starts at 43).
    """
    seeds: list[int] = []
    candidate = 2
    while len(seeds) < count:
        if all(candidate % p for p in seeds if p * p <= candidate):
            seeds.append(candidate)
        candidate += 1
    return tuple(seeds)


def d_choice_index(seed: int, key: str, n: int) -> int:
    """The worker of `key` under D-Choices' hash function with `seed`.

    Args: seed: a murmur3 seed (`d_choice_seeds`); key: the tuple's key; n: workers.
    Returns: `Math.abs(murmur3_128(seed).hashBytes(key).asInt() % n)`, in `[0, n)`; `asInt()` is
        the low 32 bits (signed) of the digest's first long.
    Source: SLBStorm `DChoiceGrouping.chooseTasks`.
    """
    low = as_long(seed, key) & 0xFFFFFFFF
    signed = low - (1 << 32) if low & 0x80000000 else low
    return abs(java_remainder(signed, n))


def least_loaded(sent: npt.NDArray[np.int64], candidates: Sequence[int]) -> int:
    """The candidate this instance has sent the fewest tuples to; ties go to the earliest.

    Source: SLB `selectMinChoice` (strict `<` over the candidates in order).
    """
    best = candidates[0]
    for c in candidates:
        if sent[c] < sent[best]:
            best = c
    return int(best)


class _SlbGrouping(HashCachedGrouping):
    """What D_CHOICES and W_CHOICES share: the summary, m, theta and PARTIAL_KEY for the tail."""

    SEEDS = (KEY_SEED, SECOND_SEED)
    W_CHOICES: bool

    def __init__(self, num_workers: int, *, start_ms: int = 0, t: float = DEFAULT_T) -> None:
        if isinstance(t, bool) or not isinstance(t, Real) or not math.isfinite(t) or t <= 0:
            raise ValueError(f"t (T of theta = 2/(n*T)) must be a finite number > 0, got {t!r}")
        super().__init__(num_workers, start_ms=start_ms)
        self.t = t
        self.theta = head_threshold(self.num_workers, t)
        self._messages = np.zeros(1, dtype=np.int64)  # m: an array so the compiled loop updates it
        self._head_loads = np.zeros(self.num_workers, dtype=np.int64)
        self._sketch = SpaceSaving(DEFAULT_CAPACITY, self._table)

    @property
    def messages(self) -> int:
        """m, the tuples this instance has routed (each is offered to its summary)."""
        return int(self._messages[0])

    @property
    def head_loads(self) -> npt.NDArray[np.int64]:
        """Tuples of head keys this instance has sent to each worker: int64 (num_workers,)."""
        return self._head_loads.copy()

    @property
    def sketch(self) -> SpaceSaving:
        """This instance's SpaceSaving summary of its keys (capacity 100)."""
        return self._sketch

    def is_head(self, key: Any) -> bool:
        """Whether `key`'s estimated frequency is above theta now (False when not monitored)."""
        counter = self._sketch.counter(key)
        if counter is None or self.messages == 0:
            return False
        return bool(item_probability(counter.count, counter.error, self.messages) > self.theta)

    # -- one tuple: the readable rule ------------------------------------------------------------
    def _choose(self, key: str, now: int) -> int:
        table = self._bounded_table()
        key_id = table.id_of(key)
        tail = (int(table.column(_FIRST)[key_id]), int(table.column(_SECOND)[key_id]))
        if min(tail) < 0:
            self._raise_negative(np.array([key_id]))
        self._messages[0] += 1
        slot = self._sketch.offer_id(key_id)
        head = self._sketch.counts[slot], self._sketch.errors[slot]
        if item_probability(*head, self.messages) > self.theta:
            task = least_loaded(self._loads, self._head_candidates(key, key_id))
            self._head_loads[task] += 1
        else:
            task = least_loaded(self._loads, tail)
        self._loads[task] += 1
        return task

    def _head_candidates(self, key: str, key_id: int) -> Sequence[int]:
        raise NotImplementedError

    # -- a batch: the compiled loop --------------------------------------------------------------
    def _route(self, keys: Sequence[Any], now: npt.NDArray[np.int64]) -> npt.NDArray[np.int32]:
        table = self._bounded_table()
        ids = table.ids_of(keys)
        if table.has_negative_index:
            self._raise_negative(ids)
        tasks = np.empty(len(ids), dtype=np.int32)
        loop = _kernels.compiled("slb_route_loop")
        sketch = self._sketch
        start, resume = 0, False
        while start < len(ids):
            start = loop(
                self.W_CHOICES, ids, start, resume, tasks, self.num_workers, self.theta,
                *self._d_choices_inputs(), table.column(_FIRST), table.column(_SECOND),
                table.column(SLOT_COLUMN), *self._dchoice_arrays(),
                sketch.ids, sketch.counts, sketch.errors, sketch.stamps, sketch.meta,
                self._messages, self._loads, self._head_loads,
            )
            if start < len(ids):  # a head key without its D-Choices hashes: compute, resume
                self._add_dchoice_row(int(ids[start]))
                resume = True
        return tasks

    def _d_choices_inputs(self) -> tuple[float, npt.NDArray[np.float64], npt.NDArray[np.float64]]:
        """D-Choices' epsilon and powers (`base_powers`) for the compiled loop (unused by W)."""
        return 0.0, np.empty(0, dtype=np.float64), np.empty(0, dtype=np.float64)

    def _dchoice_arrays(self) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
        """D-Choices' per-key row of hash choices and the rows (empty for W_CHOICES)."""
        return np.empty(0, dtype=np.int64), np.empty((0, 0), dtype=np.int64)

    def _add_dchoice_row(self, key_id: int) -> None:
        raise NotImplementedError

    # -- the hash cache --------------------------------------------------------------------------
    def _bounded_table(self) -> KeyTable:
        if len(self._table) > CACHE_LIMIT:
            self._rebind(self._new_table())
        return self._table

    def _rebind(self, table: KeyTable) -> None:
        self._sketch.rebind(table)
        self._table = table

    def _raise_negative(self, ids: npt.NDArray[np.int64]) -> None:
        raise_negative_index(self._table, ids, _FIRST)
        raise_negative_index(self._table, ids, _SECOND)

    def __setstate__(self, state: dict[str, Any]) -> None:
        super().__setstate__(state)
        self._rebind(self._table)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(num_workers={self.num_workers}, t={self.t})"


class DChoicesGrouping(_SlbGrouping):
    """D-Choices: a head key goes to the least loaded of its d hash choices; the tail by PKG.

    Args:
        num_workers: n >= 1; start_ms: accepted and ignored (§1).
        t: T of the head threshold theta = 2/(n*T), a number > 0 (default 10, SLBStorm's).
        epsilon: the tolerance of the two inequalities that choose d, a number >= 0 (0.0001).
    Raises: ValueError: t <= 0 or not finite, epsilon < 0 or not finite (the message names the
        parameter and its range); HashIndexError (choose/route) as PARTIAL_KEY.
    Source: dkg-reference.md Appendix A; SLBStorm `DChoiceGrouping`; Nasir et al., ICDE 2016.
    """

    name = "D_CHOICES"
    W_CHOICES = False

    def __init__(
        self,
        num_workers: int,
        *,
        start_ms: int = 0,
        t: float = DEFAULT_T,
        epsilon: float = DEFAULT_EPSILON,
    ) -> None:
        bad = isinstance(epsilon, bool) or not isinstance(epsilon, Real)
        if bad or not math.isfinite(epsilon) or epsilon < 0:
            raise ValueError(f"epsilon must be a finite number >= 0, got {epsilon!r}")
        super().__init__(num_workers, start_ms=start_ms, t=t)
        self.epsilon = float(epsilon)
        self._dchoices = np.zeros((16, max(1, self.num_workers - 1)), dtype=np.int64)
        self._dchoice_rows = 0
        self._base_pow: tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]] | None = None

    def head_choices(self) -> int:
        """d for a head key now, from the summary's current p_top, p_H and |H| (>= n: all)."""
        sketch, size = self._sketch, len(self._sketch)
        if self.messages == 0 or size == 0:
            return 1
        probabilities = item_probability(sketch.counts[:size], sketch.errors[:size], self.messages)
        head = probabilities[probabilities > self.theta].astype(np.float64)
        p_top = float(probabilities[sketch.top_slot])  # stream-lib's topK(1)
        # A sum of float32s in double is exact here, so its order (stream-lib's) does not matter.
        return choice_count(p_top, float(head.sum()), head.size, self.num_workers, self.epsilon)

    def _head_candidates(self, key: str, key_id: int) -> Sequence[int]:
        d = self.head_choices()
        if d >= self.num_workers:
            return range(self.num_workers)
        return [d_choice_index(seed, key, self.num_workers) for seed in d_choice_seeds(d)]

    def _d_choices_inputs(self) -> tuple[float, npt.NDArray[np.float64], npt.NDArray[np.float64]]:
        if self._base_pow is None:
            self._base_pow = base_powers(self.num_workers, DEFAULT_CAPACITY * self.num_workers)
        return (self.epsilon, *self._base_pow)

    def _new_table(self) -> KeyTable:
        table = super()._new_table()
        table.add_column(_DCHOICE_ROW, np.int64, -1)
        self._dchoice_rows = 0  # the rows belong to the old table's key ids
        return table

    def _dchoice_arrays(self) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
        return self._table.column(_DCHOICE_ROW), self._dchoices

    def _add_dchoice_row(self, key_id: int) -> None:
        """Hash the key with every seed D-Choices may use (n - 1 of them), once per key."""
        n = self.num_workers
        if self._dchoice_rows == len(self._dchoices):
            self._dchoices = np.concatenate([self._dchoices, np.zeros_like(self._dchoices)])
        key = self._table.key_of(key_id)
        row = [d_choice_index(seed, key, n) for seed in d_choice_seeds(n - 1)]
        self._dchoices[self._dchoice_rows, : len(row)] = row
        self._table.column(_DCHOICE_ROW)[key_id] = self._dchoice_rows
        self._dchoice_rows += 1

    def _equality_state(self) -> dict[str, Any]:
        state = super()._equality_state()
        for cache_only in _D_CACHES:
            state.pop(cache_only)
        return state

    def __getstate__(self) -> dict[str, Any]:
        state = super().__getstate__()
        for cache_only in _D_CACHES:
            del state[cache_only]
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self._dchoices = np.zeros((16, max(1, state["num_workers"] - 1)), dtype=np.int64)
        self._dchoice_rows = 0
        self._base_pow = None
        super().__setstate__(state)

    def __repr__(self) -> str:
        return f"{super().__repr__()[:-1]}, epsilon={self.epsilon})"


_D_CACHES = ("_dchoices", "_dchoice_rows", "_base_pow")
"""D_CHOICES attributes derived from the keys and n: neither pickled nor compared."""


class WChoicesGrouping(_SlbGrouping):
    """W-Choices: a head key goes to the least loaded of all workers; the tail by PKG.

    `head_loads` keeps the head keys' share apart (SLBSimulator's `localworkloadHH`); choices are
    made on the sum, this instance's `loads`.

    Args:
        num_workers: n >= 1; start_ms: accepted and ignored (§1).
        t: T of the head threshold theta = 2/(n*T), a number > 0 (default 10, SLBStorm's).
    Raises: ValueError: t <= 0 or not finite; HashIndexError (choose/route) as PARTIAL_KEY.
    Source: dkg-reference.md Appendix A; SLBStorm `WChoiceGrouping`; Nasir et al., ICDE 2016.
    """

    name = "W_CHOICES"
    W_CHOICES = True

    def _head_candidates(self, key: str, key_id: int) -> Sequence[int]:
        return range(self.num_workers)
