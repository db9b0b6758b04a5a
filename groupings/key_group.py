"""KEY_GROUP: Apache Flink's key groups (`KeyGroupRangeAssignment`), also Volley's two-level hashing.

A key hashes to one of `max_parallelism` key groups; worker i owns the contiguous range of key
groups `key_group_range(max_parallelism, n, i)`. Rescaling keeps the key groups and recomputes the
ranges, so a key's state moves only with its whole key group.

The pure functions below are Flink's, one formula each, bit-exact for String keys with Flink 1.20
(`flink-runtime` `KeyGroupRangeAssignment`, `flink-core` `MathUtils`); the vectors of
`docs/reference/rescaling.md` §1 (computed with Flink's own jar) are tests.
"""

from __future__ import annotations

from functools import partial

from groupings.base import check_int
from groupings.hashing import java_string_hash
from groupings.ownership import OwnershipGrouping

LOWER_BOUND_MAX_PARALLELISM = 128
"""Flink's `DEFAULT_LOWER_BOUND_MAX_PARALLELISM`: the smallest default max parallelism."""

UPPER_BOUND_MAX_PARALLELISM = 1 << 15
"""Flink's `UPPER_BOUND_MAX_PARALLELISM` (32768): the largest max parallelism Flink accepts."""

_MASK32 = 0xFFFFFFFF
_INT_MIN = -(2**31)


def _as_int32(u: int) -> int:
    """An unsigned 32-bit value as Java's signed `int`."""
    u &= _MASK32
    return u - (1 << 32) if u & 0x80000000 else u


def _rotl32(u: int, r: int) -> int:
    return ((u << r) | (u >> (32 - r))) & _MASK32


def flink_murmur_hash(code: int) -> int:
    """Flink `MathUtils.murmurHash(int)`: one Murmur3 round on an int, made non-negative.

    Args: code: a Java int (signed or unsigned 32-bit form; only the low 32 bits count).
    Returns: in `[0, 2**31)`: the Murmur3 (seed 0, length 4) hash `c` of `code` when `c >= 0`,
        `-c` when it is negative, 0 for `Integer.MIN_VALUE`.
    Source: Flink 1.20 `MathUtils.murmurHash`; rescaling.md §1 (`Turkey` -> 1910255032).
    """
    c = (code * 0xCC9E2D51) & _MASK32
    c = (_rotl32(c, 15) * 0x1B873593) & _MASK32
    c = (_rotl32(c, 13) * 5 + 0xE6546B64) & _MASK32
    c ^= 4
    # Murmur3's finaliser (fmix32, Flink's `bitMix`)
    c ^= c >> 16
    c = (c * 0x85EBCA6B) & _MASK32
    c ^= c >> 13
    c = (c * 0xC2B2AE35) & _MASK32
    c ^= c >> 16
    signed = _as_int32(c)
    if signed >= 0:
        return signed
    return -signed if signed != _INT_MIN else 0


def assign_to_key_group(key: str, max_parallelism: int) -> int:
    """Flink `KeyGroupRangeAssignment.assignToKeyGroup` for a String key.

    Args: key: the tuple's key; max_parallelism: M, the number of key groups.
    Returns: `murmurHash(key.hashCode()) % M`, in `[0, M)`.
    Source: Flink 1.20 `computeKeyGroupForKeyHash`; rescaling.md §1.
    """
    return flink_murmur_hash(java_string_hash(key)) % max_parallelism


def operator_index_for_key_group(max_parallelism: int, parallelism: int, key_group: int) -> int:
    """Flink `computeOperatorIndexForKeyGroup`: the worker that owns `key_group`.

    Args: max_parallelism: M; parallelism: n workers, `1 <= n <= M`; key_group: in `[0, M)`.
    Returns: `key_group * n // M`, in `[0, n)`.
    Source: Flink 1.20 `KeyGroupRangeAssignment`; rescaling.md §1.
    """
    return key_group * parallelism // max_parallelism


def key_group_range(max_parallelism: int, parallelism: int, operator_index: int) -> range:
    """Flink `computeKeyGroupRangeForOperatorIndex`: the key groups worker `operator_index` owns.

    Args: max_parallelism: M; parallelism: n, `1 <= n <= M`; operator_index: in `[0, n)`.
    Returns: the contiguous range `[(i*M + n - 1) // n, ((i+1)*M - 1) // n]` (end inclusive in
        Flink, exclusive in the returned `range`); never empty when `n <= M`.
    Source: Flink 1.20 `KeyGroupRangeAssignment`; rescaling.md §1 (maxP 256, p 5: [0,52) [52,103)
        [103,154) [154,205) [205,256)).
    """
    start = (operator_index * max_parallelism + parallelism - 1) // parallelism
    end = ((operator_index + 1) * max_parallelism - 1) // parallelism
    return range(start, end + 1)


def default_max_parallelism(parallelism: int) -> int:
    """Flink `computeDefaultMaxParallelism`: the max parallelism Flink picks for n workers.

    Args: parallelism: n >= 1.
    Returns: `min(max(roundUpToPowerOfTwo(n + n // 2), 128), 32768)`: 128 for n <= 85, 256 for
        n = 100, 2048 for n = 1000.
    Source: Flink 1.20 `KeyGroupRangeAssignment.computeDefaultMaxParallelism`.
    """
    target = parallelism + parallelism // 2
    power = 1
    while power < target:
        power <<= 1
    return min(max(power, LOWER_BOUND_MAX_PARALLELISM), UPPER_BOUND_MAX_PARALLELISM)


class KeyGroupGrouping(OwnershipGrouping):
    """Flink's key groups: key -> key group (Murmur of `String.hashCode`) -> contiguous ranges.

    With workers `w_0 < w_1 < ... < w_{n-1}` (ids 0..n-1 unless rescheduled to other ids), worker
    `w_i` owns the key groups `key_group_range(M, n, i)`: Flink numbers the subtasks of the new
    parallelism 0..n-1, and the i-th smallest id plays subtask i. `reschedule` recomputes the
    ranges by that formula, as Flink does on restore from a savepoint: 4 -> 5 workers with M = 256
    moves 126 of 256 key groups (the minimum would be 52).

    Args:
        num_workers: n >= 1.
        max_parallelism: M, the number of key groups, `n <= M <= 32768`; default (None) is Flink's
            rule `default_max_parallelism(n)` (128 for n <= 85). Fixed for the life of the
            instance, as in Flink (changing it would move every key).
        start_ms: accepted and ignored.
    Raises: ValueError: `max_parallelism` outside `[n, 32768]` or not an integer (named in the
        message); reschedule to more than M workers.
    Source: rescaling.md §1; Flink 1.20 `KeyGroupRangeAssignment`.
    """

    name = "KEY_GROUP"

    def __init__(
        self, num_workers: int, *, start_ms: int = 0, max_parallelism: int | None = None
    ) -> None:
        n = check_int("num_workers", num_workers, minimum=1)
        if max_parallelism is None:
            max_parallelism = default_max_parallelism(n)
        m = check_int("max_parallelism", max_parallelism)
        if not n <= m <= UPPER_BOUND_MAX_PARALLELISM:
            raise ValueError(
                f"max_parallelism must be in [num_workers, {UPPER_BOUND_MAX_PARALLELISM}] = "
                f"[{n}, {UPPER_BOUND_MAX_PARALLELISM}], got {m}"
            )
        self.max_parallelism = m
        super().__init__(n, start_ms=start_ms, groups=m)

    def group_of(self, key: str) -> int:
        """The key group of `key`: `assign_to_key_group(key, max_parallelism)`."""
        return assign_to_key_group(key, self.max_parallelism)

    def _group_function(self) -> partial[int]:
        return partial(assign_to_key_group, max_parallelism=self.max_parallelism)

    def _owners_for(self, workers: tuple[int, ...]) -> list[int]:
        n, m = len(workers), self.max_parallelism
        return [workers[operator_index_for_key_group(m, n, kg)] for kg in range(m)]

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(num_workers={self.num_workers}, "
            f"max_parallelism={self.max_parallelism}, workers={list(self.workers)})"
        )
