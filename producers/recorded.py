"""Replay a recorded topic into a fresh one, at the pace its Kafka timestamps give: the open-loop
input of a peer (`bench.peers.rescale`), so that every system reads the very records the
harness read, arriving as they arrived when they were recorded.

Each record keeps its partition, value and Kafka timestamp (CreateTime), so per-key state
(`first_ts_ms`, `last_ts_ms`) is comparable with the harness's run on the recorded topic. Header
``release_ms`` (ASCII epoch ms) is the wall time at which the record was handed to the producer: a
peer's per-tuple latency is its processing time minus ``release_ms``.

Record r is due at ``start + (ts_r - t0) / speed``, t0 the recorded topic's smallest timestamp;
records are handed over in timestamp order (ties in partition and offset order). A record handed
over late (the machine busy) is not delayed further: the schedule is open-loop, and the lag shows
in the latency the peer measures from ``release_ms``.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition

from .broker import check_broker, ensure_topic
from .pacing import NS_PER_MS, sleep_until

RELEASE_HEADER = "release_ms"
"""Header of each copied record: the wall time (epoch ms, ASCII) it was handed to the producer."""


@dataclass(frozen=True)
class RecordedRecord:
    """One record of the recorded topic: partition, offset, Kafka timestamp (epoch ms), value."""

    partition: int
    offset: int
    ts_ms: int
    value: bytes | None


@dataclass(frozen=True)
class CopySummary:
    """What `replay_recorded` did: records copied, the schedule's start (epoch ms), the largest
    lag behind the schedule (ms) and the copy's wall time (s)."""

    records: int
    start_ms: int
    max_lag_ms: float
    wall_s: float


def read_recorded(bootstrap: str, topic: str, timeout_s: float = 60.0) -> tuple[int, list[RecordedRecord]]:
    """Every record of `topic`, from each partition's start to its end at the time of the call.

    Returns: (partition count, the records in timestamp order; ties by partition, then offset).
    Raises: RuntimeError when the topic does not exist or is not read to its end within `timeout_s`.
    """
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"recorded-{topic}", "enable.auto.commit": False,
                         "fetch.wait.max.ms": 10})
    try:
        meta = consumer.list_topics(topic, timeout=timeout_s).topics.get(topic)
        if meta is None or meta.error is not None or not meta.partitions:
            raise RuntimeError(f"topic {topic!r} does not exist on {bootstrap}")
        ends = {}
        for p in meta.partitions:
            low, high = consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=timeout_s)
            if high > low:
                ends[p] = (low, high)
        consumer.assign([TopicPartition(topic, p, low) for p, (low, _) in ends.items()])
        records: list[RecordedRecord] = []
        left = {p: high for p, (_, high) in ends.items()}
        deadline = time.monotonic() + timeout_s
        while left and time.monotonic() < deadline:
            for msg in consumer.consume(num_messages=10_000, timeout=0.5):
                if msg.error():
                    raise KafkaException(msg.error())
                p = msg.partition()
                if p in left and msg.offset() < left[p]:
                    records.append(RecordedRecord(p, msg.offset(), msg.timestamp()[1], msg.value()))
                    if msg.offset() + 1 >= left[p]:
                        del left[p]
        if left:
            raise RuntimeError(f"topic {topic!r}: partitions {sorted(left)} not read to their end in {timeout_s:g} s")
        records.sort(key=lambda r: (r.ts_ms, r.partition, r.offset))
        return len(meta.partitions), records
    finally:
        consumer.close()


def replay_recorded(bootstrap: str, source: str, dest: str, speed: float = 1.0,
                    records: tuple[int, list[RecordedRecord]] | None = None, log=None) -> CopySummary:
    """Copy `source` into `dest` (created with the same partition count unless it exists) at the
    pace of the records' Kafka timestamps divided by `speed`, with header `release_ms`.

    Args: records: `read_recorded(bootstrap, source)` when already read (the copy then starts at
        once, as a peer is waiting for it); log: called with one line when done.
    Raises: ValueError: `speed` not > 0; RuntimeError: the source is missing or empty, or the
        producer could not deliver every record (its first error in the message);
        BrokerUnreachable: Kafka does not answer.
    """
    if not speed > 0:
        raise ValueError(f"speed must be > 0, got {speed!r}")
    partitions, rows = records if records is not None else read_recorded(bootstrap, source)
    if not rows:
        raise RuntimeError(f"topic {source!r} is empty")
    ensure_topic(check_broker(bootstrap), dest, partitions)
    failures: list[str] = []

    def delivered(err, _msg):
        if err is not None:
            failures.append(str(err))

    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 1, "enable.idempotence": True})
    t0 = rows[0].ts_ms
    start_ns, start_ms = time.perf_counter_ns(), time.time_ns() // NS_PER_MS
    max_lag_ns = 0
    for r in rows:
        due = start_ns + int((r.ts_ms - t0) / speed * NS_PER_MS)
        sleep_until(due)
        max_lag_ns = max(max_lag_ns, time.perf_counter_ns() - due)
        producer.produce(dest, r.value, partition=r.partition, timestamp=r.ts_ms, on_delivery=delivered,
                         headers={RELEASE_HEADER: str(time.time_ns() // NS_PER_MS)})
        producer.poll(0)
    left = producer.flush(60)
    if left or failures:
        raise RuntimeError(f"copying {source} into {dest}: {left} records undelivered, "
                           f"{len(failures)} failed{': ' + failures[0] if failures else ''}")
    summary = CopySummary(len(rows), start_ms, max_lag_ns / NS_PER_MS, (time.perf_counter_ns() - start_ns) / 1e9)
    if log is not None:
        log(f"copied {summary.records:,} records of {source} into {dest} at x{speed:g} in {summary.wall_s:.1f} s "
            f"(largest lag behind the schedule {summary.max_lag_ms:.1f} ms)")
    return summary
