"""Tuple streams for the simulator: a dataset under a virtual clock, or a recorded Kafka topic.

Both apply the dataset's own splitter rule (`Dataset.extract`, the Python twin of the streaming
splitter's SQL), so a record yields the same tuples here as in the topology; records it rejects are
counted as dead letters, as the streaming run counts them.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from confluent_kafka import Consumer, KafkaException, TopicPartition

from bench.simulate.engine import TupleTable
from datasets.base import INVALID_UTF8, KEY_TOO_LONG, MAX_KEY_BYTES, NULL_VALUE, Dataset, MalformedRecord


@dataclass
class DeadLetters:
    """Records the splitter rule rejected: counted, with the first few reasons kept."""

    count: int = 0
    first: list[dict] = field(default_factory=list)

    def add(self, where: dict, reason: str) -> None:
        self.count += 1
        if len(self.first) < 10:
            self.first.append({**where, "reason": reason})


class _Builder:
    """Accumulates tuples into the columns of a `TupleTable`."""

    def __init__(self, max_key_bytes: int = MAX_KEY_BYTES) -> None:
        self.max_key_bytes = max_key_bytes
        self.codes: dict[str, int] = {}
        self.splitter: list[int] = []
        self.key_code: list[int] = []
        self.count: list[int] = []
        self.ts: list[int] = []
        self.records = 0
        self.dead = DeadLetters()

    def add_record(self, dataset: Dataset, value: bytes, splitter: int, ts_ms: int, where: dict) -> None:
        self.records += 1
        if value is None:
            self.dead.add(where, NULL_VALUE)
            return
        try:
            tuples = dataset.extract(value.decode("utf-8"))
        except UnicodeDecodeError:
            self.dead.add(where, INVALID_UTF8)
            return
        except MalformedRecord as exc:
            self.dead.add(where, exc.reason)
            return
        limit = self.max_key_bytes  # UTF-8 is at most 4 bytes a character: encode long keys only
        if any(len(k) > limit // 4 and len(k.encode()) > limit for k, _ in tuples):
            self.dead.add(where, KEY_TOO_LONG)
            return
        codes = self.codes
        for key, count in tuples:
            code = codes.get(key)
            if code is None:
                code = codes[key] = len(codes)
            self.key_code.append(code)
            self.count.append(count)
        n = len(tuples)
        self.splitter.extend([splitter] * n)
        self.ts.extend([ts_ms] * n)

    def table(self) -> TupleTable:
        keys = np.empty(len(self.codes), dtype=object)
        keys[:] = list(self.codes)
        return TupleTable(
            splitter=np.asarray(self.splitter, dtype=np.int32),
            key_code=np.asarray(self.key_code, dtype=np.int32),
            count=np.asarray(self.count, dtype=np.int64),
            ts_ms=np.asarray(self.ts, dtype=np.int64),
            keys=keys,
        )


@dataclass(frozen=True)
class VirtualClock:
    """How the simulator times a dataset's records (ms).

    - `rate` (records/s): record i at `origin_ms + floor(1000 * i / rate)`, the producer's open-loop
      schedule and the golden protocol's clock (spec §14).
    - `speed` K: record i at `origin_ms + floor((event_ms_i - event_ms_0) / K)`, the producer's
      `--speed xK`.
    - neither: the dataset's own event times, or `rate=1000` for a dataset that has none.
    `origin_ms` defaults to the first record's event time (0 without one).
    """

    rate: float | None = None
    speed: float | None = None
    origin_ms: int | None = None

    def timer(self):
        """A function `(i, event_ms) -> clock ms` for records taken in order from index 0."""
        first_event: list[int] = []

        def time_of(i: int, event_ms: int | None) -> int:
            if not first_event:
                first_event.append(event_ms if event_ms is not None else 0)
            origin = self.origin_ms if self.origin_ms is not None else first_event[0]
            if self.rate is None and event_ms is not None:
                return origin + int((event_ms - first_event[0]) // (self.speed or 1))
            rate = self.rate or 1000.0
            return origin + int((1000 * i) // rate)

        return time_of


def from_dataset(
    dataset: Dataset, splitters: int, clock: VirtualClock, limit: int | None = None, progress=None
) -> tuple[TupleTable, int, DeadLetters]:
    """Tuples of `dataset` under `clock`, record i going to splitter i mod S (the producer's
    partition i mod P with P = S, and one splitter per partition).

    Returns: (table, records read, dead letters).
    """
    builder = _Builder()
    time_of = clock.timer()
    for i, rec in enumerate(dataset.records(limit)):
        builder.add_record(dataset, rec.value, i % splitters, time_of(i, rec.event_ms), {"record": i})
        if progress is not None:
            progress.update(1)
    return builder.table(), builder.records, builder.dead


def from_topic(
    dataset: Dataset, topic: str, bootstrap_servers: str, splitters: int, timeout_s: float = 30.0, progress=None
) -> tuple[TupleTable, int, DeadLetters]:
    """Tuples of a recorded input topic, exactly as the streaming run sees them: partition p feeds
    splitter p mod S, each partition in offset order, the clock being the record's Kafka timestamp.

    Raises: RuntimeError if the broker does not answer within `timeout_s` or the topic is missing.
    """
    consumer = Consumer({
        "bootstrap.servers": bootstrap_servers, "group.id": f"bench-simulate-{topic}",
        "enable.auto.commit": False, "auto.offset.reset": "earliest", "enable.partition.eof": False,
        # A fetch left waiting at a partition's end (up to fetch.wait.max.ms, 500 ms by default) holds
        # back the next partition's offsets and records: 0.5 s a partition, 3 s for 4 of 2,000 records.
        "fetch.wait.max.ms": 10,
    })
    try:
        try:
            meta = consumer.list_topics(topic, timeout=timeout_s)
        except KafkaException as exc:
            raise RuntimeError(f"Kafka at {bootstrap_servers} did not answer within {timeout_s:.0f} s: {exc}") from None
        info = meta.topics.get(topic)
        if info is None or info.error is not None or not info.partitions:
            raise RuntimeError(f"topic {topic!r} does not exist at {bootstrap_servers}")
        builder = _Builder()
        for p in sorted(info.partitions):
            low, high = consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=timeout_s)
            if high <= low:
                continue
            consumer.assign([TopicPartition(topic, p, low)])
            offset = low
            while offset < high:
                # Ask for no more than what is left: consume() waits its full timeout for a short batch.
                for msg in consumer.consume(num_messages=min(10_000, high - offset), timeout=timeout_s):
                    if msg.error() is not None:
                        raise RuntimeError(f"reading {topic}[{p}]: {msg.error()}")
                    _, ts = msg.timestamp()
                    builder.add_record(dataset, msg.value(), p % splitters, ts, {"partition": p, "offset": msg.offset()})
                    offset = msg.offset() + 1
                    if progress is not None:
                        progress.update(1)
        return builder.table(), builder.records, builder.dead
    finally:
        consumer.close()
