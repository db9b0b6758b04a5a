"""A recorded topic replayed into a fresh one at the pace of its timestamps (producers.recorded), on the
real broker of the project's stack: the rescale peers' input."""

from __future__ import annotations

import pytest

from datasets import get_dataset
from producers import replay
from producers.recorded import RELEASE_HEADER, read_recorded, replay_recorded
from tests.producers.test_replay_integration import read_topic

pytestmark = pytest.mark.integration


def test_the_copy_keeps_every_record_partition_and_timestamp_and_stamps_its_release(stack):
    bs = stack.bootstrap_servers
    source, dest = "test.recorded.source", "test.recorded.copy"
    assert replay(get_dataset("NYC_FLIGHTS"), source, bs, partitions=3, limit=600, rate=3000, progress=False).ok
    partitions, rows = read_recorded(bs, source)
    assert partitions == 3 and len(rows) == 600
    assert [r.ts_ms for r in rows] == sorted(r.ts_ms for r in rows)

    summary = replay_recorded(bs, source, dest, speed=2.0)
    assert summary.records == 600

    def records(topic):
        return {p: [(value, ts) for value, ts, _ in got] for p, got in read_topic(bs, topic).items()}

    assert records(dest) == records(source)  # same partitions, same order, same timestamps and values
    copied = sorted((ts, int(headers[RELEASE_HEADER])) for got in read_topic(bs, dest).values()
                    for _, ts, headers in got)
    releases = [release for _, release in copied]
    assert releases == sorted(releases)  # handed over in timestamp order
    assert releases[0] >= summary.start_ms


def test_a_missing_source_or_a_bad_speed_is_refused(stack):
    with pytest.raises(RuntimeError, match="test.recorded.absent.*does not exist"):
        read_recorded(stack.bootstrap_servers, "test.recorded.absent", timeout_s=10)
    with pytest.raises(ValueError, match="speed must be > 0"):
        replay_recorded(stack.bootstrap_servers, "a", "b", speed=0)
