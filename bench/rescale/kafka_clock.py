"""The simulator's clock for a topic: Kafka timestamps since the input's first record.

`bench simulate --from-topic` measures a rescale event's time from the earliest tuple; the Spark
run measures it from the smallest first timestamp over the topic's partitions (producers write
each partition in intended-time order).
"""

from __future__ import annotations

import time

from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition

TRANSIENT = frozenset({KafkaError.NOT_LEADER_FOR_PARTITION, KafkaError.LEADER_NOT_AVAILABLE,
                       KafkaError.UNKNOWN_TOPIC_OR_PART, KafkaError._TRANSPORT, KafkaError._TIMED_OUT})
"""Broker answers that pass: a partition whose leader is being elected (a topic just created, a
broker starting again), a connection that dropped."""


def watermark_offsets(consumer, partition: TopicPartition, timeout_s: float) -> tuple[int, int]:
    """`consumer.get_watermark_offsets`, asked again every 0.2 s while the broker answers with a
    TRANSIENT error, for up to `timeout_s`. A driver asked it while a test's busy broker still had
    no leader for a new topic's partition (NOT_LEADER_FOR_PARTITION) and ended (2026-12-01).
    Raises: KafkaException, any other error or a transient one past `timeout_s`."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            return consumer.get_watermark_offsets(partition, timeout=timeout_s)
        except KafkaException as e:
            error = e.args[0] if e.args and isinstance(e.args[0], KafkaError) else None
            if error is None or not (error.retriable() or error.code() in TRANSIENT) or time.monotonic() > deadline:
                raise
            time.sleep(0.2)


def topic_timestamps_ms(bootstrap: str, topic: str, timeout_s: float = 15.0) -> tuple[int, int] | None:
    """(first, last) Kafka timestamp of a topic: the smallest first and the largest last record
    timestamp over its partitions (producers write each partition in intended-time order), or None
    for an empty topic."""
    # fetch.wait.max.ms: a fetch left waiting at a partition's end (500 ms by default) holds back the
    # next read; with it, 4 partitions took 4.5 s here, without it 0.1 s.
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"span-{topic}", "enable.auto.commit": False,
                         "fetch.wait.max.ms": 10})
    try:
        parts = consumer.list_topics(topic, timeout=timeout_s).topics[topic].partitions
        first, last = [], []
        for p in parts:
            low, high = watermark_offsets(consumer, TopicPartition(topic, p), timeout_s)
            for offset, out in ((low, first), (high - 1, last)):
                if high <= low:
                    continue
                consumer.assign([TopicPartition(topic, p, offset)])
                msg = consumer.poll(timeout_s)
                if msg is not None and not msg.error():
                    out.append(msg.timestamp()[1])
        return (min(first), max(last)) if first else None
    finally:
        consumer.close()


def topic_span_ms(bootstrap: str, topic: str) -> int | None:
    ts = topic_timestamps_ms(bootstrap, topic)
    return None if ts is None else ts[1] - ts[0]


def first_timestamp(bootstrap: str, topic: str) -> int | None:
    """The topic's first Kafka timestamp (ms), or None while it is empty."""
    ts = topic_timestamps_ms(bootstrap, topic)
    return None if ts is None else ts[0]
