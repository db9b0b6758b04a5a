"""Pure hashing arithmetic of the reference groupings, with Java semantics.

Every function here is a small, pure formula, named after what it computes and tested against the
published vectors of the reference spec (`docs/reference/dkg-reference.md`):

- §2: the murmur3 64-bit hash of a key (`as_long`), Java's `Math.abs(long)` and remainder
  (`java_index_of_long`) and the worker index built from both (`index`);
- §7.4: Java's `String.hashCode`, the `HashMap` spread and bucket functions, and
  `HashMap.tableSizeFor`, which together decide the KeySpace's iteration order (its tie-break rule).
"""

from __future__ import annotations

import mmh3

KEY_SEED = 13
"""Murmur3 seed of KEY, of DKG's home worker and of PKG's first choice (§2.1)."""

SECOND_SEED = 17
"""Murmur3 seed of PKG's second choice (§2.1)."""

LONG_MIN = -(2**63)
"""Java `Long.MIN_VALUE`, the one value whose `Math.abs` stays negative (§2.3, Q13)."""

_MASK32 = 0xFFFFFFFF


class HashIndexError(ValueError):
    """A key hashed to `Long.MIN_VALUE`, so the reference's worker index is negative.

    The reference throws an `ArrayIndexOutOfBoundsException` on such a key (§2.3, Q13); we raise
    this error, naming the key. The probability is 2**-64 per distinct key; no key is known to hit
    it.
    """


def key_bytes(key: str) -> bytes:
    """The bytes the reference hashes for `key`: UTF-8, an unpaired surrogate becoming `?`.

    Args: key: the tuple's key.
    Returns: `key.encode("utf-8", "replace")`, which is what Java's `String.getBytes()` yields with
        a UTF-8 platform charset (Java also substitutes `?`, 0x3F, for an unencodable char).
    Source: §2.2 (decision Q14).
    """
    return key.encode("utf-8", "replace")


def as_long(seed: int, key: str) -> int:
    """Guava `Hashing.murmur3_128(seed).hashBytes(key_bytes(key)).asLong()`.

    Args: seed: 32-bit murmur3 seed (13 or 17 in the reference); key: the tuple's key.
    Returns: the first 64-bit word of the MurmurHash3 x64 128-bit digest, little-endian, signed,
        in `[-2**63, 2**63)`.
    Source: §2.1; `mmh3.hash64(..., signed=True)[0]` equals Guava on every vector of §2.4.
    """
    return mmh3.hash64(key_bytes(key), seed, signed=True)[0]


def java_abs_long(v: int) -> int:
    """Java `Math.abs(long)`: `abs(v)`, except that `abs(Long.MIN_VALUE)` is `Long.MIN_VALUE`.

    Args: v: a signed 64-bit value.
    Returns: `|v|`, or `-2**63` when `v == -2**63` (two's-complement overflow).
    Source: §2.3.
    """
    return v if v == LONG_MIN else abs(v)


def java_remainder(a: int, n: int) -> int:
    """Java `a % n` for `n > 0`: the remainder takes the sign of the dividend.

    Args: a: any integer; n: a positive modulus.
    Returns: `a mod n` for `a >= 0`, `-((-a) mod n)` for `a < 0`.
    Source: §2.3 ("Java remainder").
    """
    return a % n if a >= 0 else -((-a) % n)


def java_index_of_long(v: int, n: int) -> int:
    """The reference's worker index of a 64-bit hash: `(int) (Math.abs(v) % n)`.

    Args: v: signed 64-bit hash (`as_long`); n: number of workers, `n >= 1`.
    Returns: an index in `[0, n)`; the one exception is `v == -2**63`, where Java yields
        `-(2**63 mod n)`: 0 when n is a power of two, negative otherwise (the caller must raise
        `HashIndexError`, as the reference throws).
    Source: §2.3.
    """
    return java_remainder(java_abs_long(v), n)


def index(seed: int, key: str, n: int) -> int:
    """Worker index of `key` under murmur3 `seed` for `n` workers, with Java semantics.

    KEY is `index(13, key, n)`; PARTIAL_KEY's choices are `index(13, ...)` and `index(17, ...)`;
    DYNAMIC_KEY's home worker is `index(13, ...)`.

    Args: seed: murmur3 seed; key: the tuple's key; n: number of workers, `n >= 1`.
    Returns: `java_index_of_long(as_long(seed, key), n)`; may be negative, see there.
    Source: §2.3, vectors in §2.4.
    """
    return java_index_of_long(as_long(seed, key), n)


def java_string_hash(key: str) -> int:
    """Java `String.hashCode()` as an unsigned 32-bit value.

    Args: key: any string; a character outside the BMP counts as its two UTF-16 surrogate units,
        and a lone surrogate as itself.
    Returns: `h` in `[0, 2**32)` with `h = (31*h + u) mod 2**32` over the UTF-16 code units `u`
        (Java's signed int is `h - 2**32` when `h >= 2**31`).
    Source: §7.4 ("String hash"); `Turkey` gives 2516402894.
    """
    h = 0
    if key.isascii():
        # Fast path: one UTF-16 unit per character, equal to its code point.
        for ch in key.encode("ascii"):
            h = (31 * h + ch) & _MASK32
        return h
    units = key.encode("utf-16-le", "surrogatepass")
    for i in range(0, len(units), 2):
        h = (31 * h + (units[i] | (units[i + 1] << 8))) & _MASK32
    return h


def hashmap_spread(h: int) -> int:
    """Java `HashMap.hash`: the string hash with its high half folded into the low half.

    Args: h: `java_string_hash(key)`, unsigned 32-bit.
    Returns: `h XOR (h >>> 16)`, unsigned 32-bit.
    Source: §7.4 ("Bucket").
    """
    return (h ^ (h >> 16)) & _MASK32


def hashmap_bucket(h: int, capacity: int) -> int:
    """Bucket of a key in a Java `HashMap` table of `capacity` slots.

    Args: h: `java_string_hash(key)`; capacity: the table size, a power of two.
    Returns: `hashmap_spread(h) & (capacity - 1)`, in `[0, capacity)`.
    Source: §7.4; `Turkey` is in bucket 3 at capacity 16 and 51 at capacity 64.
    """
    return hashmap_spread(h) & (capacity - 1)


def table_size_for(initial_capacity: int) -> int:
    """Java `HashMap.tableSizeFor`: the table size of a map created with `initial_capacity`.

    Args: initial_capacity: the constructor argument, `>= 0`.
    Returns: the smallest power of two `>= initial_capacity`, and 1 when it is `<= 1`.
    Source: §7.4 ("Capacity").
    """
    cap = 1
    while cap < initial_capacity:
        cap <<= 1
    return cap


def hashmap_threshold(capacity: int) -> int:
    """Java `HashMap` resize threshold of a table of `capacity` slots (load factor 0.75).

    Args: capacity: the table size, a power of two.
    Returns: `int(capacity * 0.75)`; the map doubles its table once its size exceeds this.
    Source: §7.4 ("Capacity").
    """
    return int(capacity * 0.75)
