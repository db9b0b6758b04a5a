"""The resume decision of a replay (producers.resume): pure arithmetic on per-partition end offsets."""

from __future__ import annotations

import pytest

from producers.resume import COMPLETE, EMPTY, MISMATCH, PREFIX, TopicState, expected_per_partition


def test_expected_per_partition_is_round_robin():
    assert expected_per_partition(10, 4) == [3, 3, 2, 2]
    assert expected_per_partition(3, 4) == [1, 1, 1, 0]
    assert expected_per_partition(0, 2) == [0, 0]
    assert sum(expected_per_partition(40_000, 7)) == 40_000
    with pytest.raises(ValueError):
        expected_per_partition(5, 0)


@pytest.mark.parametrize(("ends", "state", "missing"), [
    ((3, 3, 2, 2), COMPLETE, 0),
    ((0, 0, 0, 0), EMPTY, 10),
    ((2, 3, 1, 0), PREFIX, 4),          # partitions stop at different points: still a prefix each
    ((3, 3, 2, 3), MISMATCH, 0),        # one record too many on partition 3
    ((4, 3, 2, 2), MISMATCH, 0),
])
def test_state_from_end_offsets(ends, state, missing):
    s = TopicState("t", 10, 4, 4, ends)
    assert s.state == state and s.missing == missing


def test_another_partition_count_is_a_mismatch_naming_both_counts():
    s = TopicState("in.t", 10, 4, 3, (4, 3, 3))
    assert s.state == MISMATCH
    message = str(s.mismatch_error("127.0.0.1:9092"))
    assert "'in.t' has 3 partitions, the replay needs 4" in message
    assert "delete-topic in.t" in message and "--no-replay" in message


def test_a_mismatch_message_names_the_counts():
    message = str(TopicState("in.t", 10, 4, 4, (3, 3, 2, 3)).mismatch_error("b:1"))
    assert "11 of the replay's 10 records" in message and "[3, 3, 2, 3]" in message
