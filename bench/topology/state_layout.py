"""Where a logical worker's state lives: the physical layout of the worker-state operator.

Every stateful operator of a Spark query has the same number N of state partitions
(`spark.sql.shuffle.partitions` when its checkpoint was created; `repartition` changes it for all of
them), and a stateful operator places the rows of grouping key g in partition
`pmod(murmur3(g, seed 42), N)` (Spark's `HashPartitioning.partitionIdExpression`). Keyed by the
worker id itself, ten workers would land in about seven partitions, as with `repartition(n, col)`.
So the worker-state operator is keyed by a *slot*: for each logical worker w an int whose hash
puts it in partition `w mod N`. Worker w's per-key state then sits in state partition w (for w < N),
the task with index w of the operator's stage; with more workers than partitions, partition p
carries the workers p, p + N, ... (a fixed physical layout carrying several logical workers).

Pure arithmetic, no Spark: tests check `spark_hash_int` against Spark SQL's `hash()`.
"""

from __future__ import annotations

SPARK_HASH_SEED = 42
"""Seed of Spark's `Murmur3Hash` expression (SQL `hash()`, `HashPartitioning`)."""

_M32 = 0xFFFFFFFF


def _rotl32(x: int, r: int) -> int:
    return ((x << r) | (x >> (32 - r))) & _M32


def spark_hash_int(value: int, seed: int = SPARK_HASH_SEED) -> int:
    """Spark's `Murmur3_x86_32.hashInt(value, seed)`: the hash of an IntegerType column value.

    Args: value: a signed 32-bit int. Returns: the signed 32-bit hash (as Spark SQL `hash(CAST(v AS
    INT))` returns it). Source: Spark `org.apache.spark.unsafe.hash.Murmur3_x86_32` (mixK1, mixH1,
    fmix with length 4).
    """
    k1 = (value & _M32) * 0xCC9E2D51 & _M32
    k1 = _rotl32(k1, 15) * 0x1B873593 & _M32
    h1 = (seed & _M32) ^ k1
    h1 = (_rotl32(h1, 13) * 5 + 0xE6546B64) & _M32
    h1 ^= 4
    h1 ^= h1 >> 16
    h1 = h1 * 0x85EBCA6B & _M32
    h1 ^= h1 >> 13
    h1 = h1 * 0xC2B2AE35 & _M32
    h1 ^= h1 >> 16
    return h1 - (1 << 32) if h1 >= 1 << 31 else h1


def state_partition(slot: int, partitions: int) -> int:
    """The state partition of grouping key `slot` (an int column): `pmod(hash(slot), partitions)`."""
    return spark_hash_int(slot) % partitions


def slot_table(workers: int, partitions: int) -> list[int]:
    """`slots[w]` for w in 0..workers-1: distinct non-negative ints with
    `state_partition(slots[w], partitions) == w % partitions`, the smallest such in ascending order
    (worker w gets the (w // partitions)-th preimage of its partition).

    Raises: ValueError: workers < 1 or partitions < 1.
    """
    if workers < 1 or partitions < 1:
        raise ValueError(f"need workers >= 1 and partitions >= 1, got {workers} and {partitions}")
    per_partition = -(-workers // partitions)
    found: list[list[int]] = [[] for _ in range(partitions)]
    missing = workers
    candidate = 0
    while missing:
        p = state_partition(candidate, partitions)
        if len(found[p]) < per_partition:
            found[p].append(candidate)
            if p + partitions * (len(found[p]) - 1) < workers:
                missing -= 1
        candidate += 1
    return [found[w % partitions][w // partitions] for w in range(workers)]
