"""Is an input topic the complete replay of a dataset, a prefix of it, or something else?

A replay sends record i to partition ``i mod P`` with an idempotent producer, so every partition of
a replay that was stopped (a killed driver, Ctrl-C, a broker outage) holds a prefix of its own
records: partition p holds records p, p+P, p+2P, ... up to a point, with no gap and no duplicate.
Comparing each partition's end offset with the number of records it should hold for N records
tells which case a topic is in, with no need to read the records:

    complete   end offset == expected on every partition         consume it
    prefix     end offset <= expected on every partition         resume the replay from the first
                                                                 missing record of each partition
    mismatch   more records, or another partition count          stop with a clear error

The intended send time of record 0 (the schedule start) is record 0's Kafka timestamp (partition 0,
offset 0), so a resumed paced replay stamps every record as the first attempt would have.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from confluent_kafka import Consumer, TopicPartition

from .broker import end_offsets

COMPLETE, PREFIX, EMPTY, ABSENT, MISMATCH = "complete", "prefix", "empty", "absent", "mismatch"


class ReplayMismatch(RuntimeError):
    """The topic holds something other than a prefix of this replay; the message says how to start clean."""


def expected_per_partition(total: int, partitions: int) -> list[int]:
    """Records partition p holds after a complete replay of ``total`` records round robin over
    ``partitions``: ``ceil((total - p) / P)`` (0 when p >= total)."""
    if partitions < 1 or total < 0:
        raise ValueError(f"need partitions >= 1 and total >= 0, got {partitions}, {total}")
    return [max(0, (total - p + partitions - 1) // partitions) for p in range(partitions)]


@dataclass(frozen=True)
class TopicState:
    """What a topic holds compared with the replay of ``total`` records over ``partitions``."""

    topic: str
    total: int
    partitions: int
    found_partitions: int | None
    """None: the topic does not exist."""
    ends: tuple[int, ...]
    """End (next) offset per partition: the number of records each holds (topics we create start at 0)."""

    @property
    def expected(self) -> list[int]:
        return expected_per_partition(self.total, self.partitions)

    @property
    def present(self) -> int:
        return sum(self.ends)

    @property
    def missing(self) -> int:
        return self.total - self.present if self.state in (PREFIX, EMPTY, ABSENT) else 0

    @property
    def state(self) -> str:
        if self.found_partitions is None:
            return ABSENT
        if self.found_partitions != self.partitions:
            return MISMATCH
        expected = self.expected
        if list(self.ends) == expected:
            return COMPLETE
        if all(e <= x for e, x in zip(self.ends, expected)):
            return EMPTY if self.present == 0 else PREFIX
        return MISMATCH

    def describe(self) -> str:
        if self.state == ABSENT:
            return f"topic {self.topic!r} does not exist"
        if self.state == MISMATCH and self.found_partitions != self.partitions:
            return (f"topic {self.topic!r} has {self.found_partitions} partitions, the replay needs "
                    f"{self.partitions}")
        return (f"topic {self.topic!r} holds {self.present:,} of the replay's {self.total:,} records "
                f"(per partition {list(self.ends)}, expected {self.expected})")

    def mismatch_error(self, bootstrap_servers: str) -> ReplayMismatch:
        return ReplayMismatch(
            f"{self.describe()}: it is not this replay (more records, another partition count, or "
            "another dataset). Start clean with another --topic, or delete it (with the project's stack: "
            f"python -m bench.stack delete-topic {self.topic}, for Kafka at {bootstrap_servers}), or "
            "consume it as it is with --no-replay"
        )


def inspect_topic(bootstrap_servers: str, topic: str, total: int, partitions: int,
                  timeout_s: float = 30.0) -> TopicState:
    """The ``TopicState`` of ``topic`` for a replay of ``total`` records over ``partitions``.

    Raises: BrokerUnreachable (``producers.broker.end_offsets``) if the broker does not answer in
    ``timeout_s``.
    """
    ends = end_offsets(bootstrap_servers, topic, timeout_s)
    if ends is None:
        return TopicState(topic, total, partitions, None, ())
    return TopicState(topic, total, partitions, len(ends), tuple(ends[p] for p in sorted(ends)))


def first_timestamp_ms(bootstrap_servers: str, topic: str, timeout_s: float = 30.0) -> int | None:
    """Kafka timestamp of record 0 (partition 0, offset 0): the schedule start of the replay that
    wrote the topic. None if partition 0 is empty."""
    c = Consumer({"bootstrap.servers": bootstrap_servers, "group.id": "bench-inspect",
                  "enable.auto.commit": False, "log.connection.close": False}, logger=logging.getLogger("producers"))
    try:
        c.assign([TopicPartition(topic, 0, 0)])
        msg = c.poll(timeout_s)
        if msg is None or msg.error() is not None or msg.offset() != 0:
            return None
        return msg.timestamp()[1]
    finally:
        c.close()
