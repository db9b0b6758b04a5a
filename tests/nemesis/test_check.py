"""The nemesis checker's arithmetic (bench/nemesis/check.py)."""

from __future__ import annotations

from collections import Counter

from bench.nemesis.check import count_differences


def test_equal_counts_lose_and_duplicate_nothing():
    assert count_differences(Counter(a=3, b=1), Counter(a=3, b=1)) == (0, 0)


def test_a_lost_key_and_a_duplicated_key_do_not_cancel_out():
    assert count_differences(Counter(a=3, b=1), Counter(a=4)) == (1, 1)


def test_a_key_that_is_not_in_the_input_counts_as_duplicated():
    assert count_differences(Counter(a=2), Counter(a=2, z=5)) == (0, 5)
