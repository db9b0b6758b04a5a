"""Hash arithmetic against the published vectors (spec §2.4, §7.4)."""

from __future__ import annotations

import pickle

import pytest

from groupings import HashIndexError, create_grouping
from groupings._keytable import KeyTable
from groupings.hashing import (
    LONG_MIN,
    as_long,
    hashmap_bucket,
    hashmap_threshold,
    index,
    java_abs_long,
    java_index_of_long,
    java_remainder,
    java_string_hash,
    key_bytes,
    table_size_for,
)

# key: (as_long seed 13, as_long seed 17, {n: (index13, index17)})  — §2.4
HASH_VECTORS = {
    "Turkey": (-427684801386502345, 7979424307051361886, [(0, 1), (5, 6), (5, 6), (45, 36), (45, 86)]),
    "Germany": (-3943748476822496995, 8828878774950078693, [(0, 3), (5, 3), (15, 13), (45, 43), (95, 93)]),
    "Afghanistan": (5846224766063328213, -5462568596507215696, [(3, 1), (3, 6), (13, 16), (13, 46), (13, 96)]),
    "Zimbabwe": (5582228121691754290, -4155365976659175834, [(0, 4), (0, 4), (10, 14), (40, 34), (90, 34)]),
    "turkey": (4914041097580604050, 2465626758700262132, [(0, 2), (0, 2), (10, 12), (0, 32), (50, 32)]),
    "ElectionDay": (4179363758177974984, 3565267891696091900, [(4, 0), (4, 0), (4, 0), (34, 0), (84, 0)]),
    "": (-6841345300810786470, -4666168469225958328, [(0, 3), (0, 8), (10, 8), (20, 28), (70, 28)]),
    "K000": (-728845460568349735, -3546658139252020285, [(0, 0), (5, 5), (15, 5), (35, 35), (35, 85)]),
    "Türkiye": (3178152554529848584, 1821103456845004622, [(4, 2), (4, 2), (4, 2), (34, 22), (84, 22)]),
    "\U0001f600x": (3043571183902410102, 2208876430465710374, [(2, 4), (2, 4), (2, 14), (2, 24), (2, 74)]),
}
SIZES = (5, 10, 20, 50, 100)


@pytest.mark.parametrize("key", list(HASH_VECTORS))
def test_as_long_and_index_vectors(key: str) -> None:
    long13, long17, pairs = HASH_VECTORS[key]
    assert as_long(13, key) == long13
    assert as_long(17, key) == long17
    for n, (a, b) in zip(SIZES, pairs, strict=True):
        assert (index(13, key, n), index(17, key, n)) == (a, b), n


@pytest.mark.parametrize("key", list(HASH_VECTORS))
def test_key_table_caches_the_same_indices(key: str) -> None:
    for n, (a, b) in zip(SIZES, HASH_VECTORS[key][2], strict=True):
        table = KeyTable(n, seeds=(13, 17))
        key_id = table.id_of(key)
        assert (table.column("index13")[key_id], table.column("index17")[key_id]) == (a, b)


def test_key_bytes_are_utf8_with_question_mark_for_lone_surrogates() -> None:
    assert key_bytes("Türkiye") == "Türkiye".encode()
    assert key_bytes("a\ud800b") == b"a?b"  # Java substitutes '?' for an unpaired surrogate
    assert as_long(13, "a\ud800b") == as_long(13, "a?b")


def test_java_abs_and_remainder_of_long_min() -> None:
    assert java_abs_long(LONG_MIN) == LONG_MIN
    assert java_abs_long(-5) == 5
    assert java_remainder(-7, 5) == -2
    assert java_remainder(7, 5) == 2
    # 2**63 mod 5 == 3 and mod 10 == 8: the reference's index is negative there, 0 for 2**k.
    assert java_index_of_long(LONG_MIN, 5) == -3
    assert java_index_of_long(LONG_MIN, 10) == -8
    assert java_index_of_long(LONG_MIN, 8) == 0
    assert java_index_of_long(LONG_MIN + 1, 10) == (2**63 - 1) % 10


@pytest.mark.parametrize("name", ["KEY", "PARTIAL_KEY", "DYNAMIC_KEY"])
def test_long_min_hash_raises_naming_the_key(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    import groupings._keytable as keytable

    real = keytable.as_long
    monkeypatch.setattr(keytable, "as_long", lambda seed, key: LONG_MIN if key == "evil" else real(seed, key))
    g = create_grouping(name, 5)
    g.route(["Turkey", "K000"] * 20, 100)
    before = pickle.dumps(g)
    with pytest.raises(HashIndexError, match="'evil'"):
        g.choose("evil", 50_000)
    with pytest.raises(HashIndexError, match="'evil'"):
        g.route(["Turkey", "evil"], 50_000)
    assert g == pickle.loads(before) and g.last_now_ms == 100  # nothing routed, clock unchanged
    # With a power-of-two n the Java index is 0: no error.
    assert create_grouping(name, 8).choose("evil", 0) == 0


# §7.4: (key, String.hashCode as unsigned, bucket at cap 16, bucket at cap 64)
STRING_HASH_VECTORS = [
    ("Turkey", 2516402894, 3, 51),
    ("K000", 2281989, 7, 39),
    ("k00", 104363, 10, 42),
    ("new1", 3377809, 2, 34),
    ("Türkiye", 269050420, 13, 61),
    ("", 0, 0, 0),
]


@pytest.mark.parametrize(("key", "h", "b16", "b64"), STRING_HASH_VECTORS)
def test_java_string_hash_and_buckets(key: str, h: int, b16: int, b64: int) -> None:
    assert java_string_hash(key) == h
    assert hashmap_bucket(h, 16) == b16
    assert hashmap_bucket(h, 64) == b64


def test_java_string_hash_uses_utf16_code_units() -> None:
    # U+1F600 is the surrogate pair D83D DE00 in UTF-16; Java hashes both units.
    expected = ((0xD83D * 31 + 0xDE00) * 31 + ord("x")) % 2**32
    assert java_string_hash("\U0001f600x") == expected
    assert java_string_hash("Turkey") - 2**32 == -1778564402  # the Java int of §7.4


def test_table_size_and_threshold() -> None:
    assert [table_size_for(c) for c in (0, 1, 2, 3, 10, 16, 17, 40, 50)] == [1, 1, 2, 4, 16, 16, 32, 64, 64]
    assert [hashmap_threshold(c) for c in (1, 2, 16, 64)] == [0, 1, 12, 48]
