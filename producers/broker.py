"""The broker checks before a replay: does Kafka answer, and does the input topic have the P
partitions that record i -> partition ``i mod P`` needs?

Both the replay and the resume inspection (``producers.resume``) raise ``BrokerUnreachable`` from
here, so the command line can tell an absent broker (exit 3) from a bad argument.
"""

from __future__ import annotations

import logging
import time

from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

log = logging.getLogger("producers")

DEFAULT_TIMEOUT_S = 30.0
"""Bound on reaching the broker and creating the topic."""


TRANSIENT_ERRORS = frozenset({KafkaError.NOT_LEADER_FOR_PARTITION, KafkaError.LEADER_NOT_AVAILABLE,
                              KafkaError._TRANSPORT, KafkaError._TIMED_OUT, KafkaError._DESTROY_BROKER,
                              KafkaError._UNKNOWN_PARTITION})
"""Errors a read of end offsets retries until its timeout: a topic created a moment ago, or a broker
just restarted, answers NOT_LEADER_FOR_PARTITION or LEADER_NOT_AVAILABLE for a while; and a request
in flight on the bootstrap connection fails with _DESTROY_BROKER ("Broker handle destroyed without
termination") when the client retires that connection for the broker's own, or with
_UNKNOWN_PARTITION when the client's metadata cache lags the partitions it has just listed (both
seen here with both cores busy, 2026-11-27)."""


class BrokerUnreachable(RuntimeError):
    """The broker did not answer within the timeout."""


class TopicMismatch(RuntimeError):
    """The topic exists with another partition count than asked: record i -> partition i mod P
    would not hold."""


def admin_client(bootstrap_servers: str, timeout_s: float) -> AdminClient:
    """A Kafka AdminClient that gives up connecting after ``timeout_s`` (at least 1 s); its
    librdkafka lines go to the ``producers`` logger."""
    return AdminClient(
        {
            "bootstrap.servers": bootstrap_servers,
            "socket.connection.setup.timeout.ms": max(1000, int(timeout_s * 1000)),
            "log.connection.close": False,
        },
        logger=log,
    )


def check_broker(bootstrap_servers: str, timeout_s: float = DEFAULT_TIMEOUT_S) -> AdminClient:
    """An AdminClient whose broker answered ``list_topics`` within ``timeout_s``; else
    ``BrokerUnreachable``."""
    admin = admin_client(bootstrap_servers, timeout_s)
    try:
        admin.list_topics(timeout=timeout_s)
    except KafkaException as e:
        raise BrokerUnreachable(
            f"Kafka at {bootstrap_servers} did not answer within {timeout_s:g} s ({e.args[0] if e.args else e}). "
            "Is the broker running? Start the project's with: python -m bench.stack up"
        ) from None
    return admin


def ensure_topic(admin: AdminClient, topic: str, partitions: int, timeout_s: float = DEFAULT_TIMEOUT_S) -> bool:
    """Create ``topic`` with ``partitions`` partitions (replication 1) unless it exists; wait until
    every partition has a leader. Returns True if it was created. ``TopicMismatch`` if it exists with
    another partition count; ``BrokerUnreachable`` if an admin request fails or the leaders do not
    show within ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    try:
        created = False
        if _partition_count(admin, topic, deadline) is None:
            created = _create_topic(admin, topic, partitions, timeout_s, deadline)
        _wait_for_leaders(admin, topic, partitions, timeout_s, deadline)
        return created
    except KafkaException as e:
        raise BrokerUnreachable(f"Kafka at admin request for topic {topic!r} failed: {e}") from None


def _left(deadline: float) -> float:
    return max(0.1, deadline - time.monotonic())


def _partition_count(admin: AdminClient, topic: str, deadline: float) -> int | None:
    """The topic's partition count as the metadata shows it; None if the topic does not exist."""
    t = admin.list_topics(topic=topic, timeout=_left(deadline)).topics.get(topic)
    if t is None or t.error is not None and t.error.code() == KafkaError.UNKNOWN_TOPIC_OR_PART:
        return None
    if t.error is not None and t.error.code() != KafkaError.LEADER_NOT_AVAILABLE:
        raise KafkaException(t.error)
    return len(t.partitions)


def _create_topic(admin: AdminClient, topic: str, partitions: int, timeout_s: float, deadline: float) -> bool:
    """Create the topic (replication 1); False if another client created it first."""
    fut = admin.create_topics([NewTopic(topic, num_partitions=partitions, replication_factor=1)],
                              operation_timeout=timeout_s, request_timeout=timeout_s)[topic]
    try:
        fut.result(timeout=_left(deadline))
        return True
    except KafkaException as e:
        if e.args[0].code() != KafkaError.TOPIC_ALREADY_EXISTS:
            raise
    return False


def _wait_for_leaders(admin: AdminClient, topic: str, partitions: int, timeout_s: float, deadline: float) -> None:
    """Wait for the metadata to show every partition with a leader, then check the count."""
    while True:
        t = admin.list_topics(topic=topic, timeout=_left(deadline)).topics.get(topic)
        if t is not None and t.error is None and t.partitions and all(p.leader >= 0 for p in t.partitions.values()):
            if len(t.partitions) != partitions:
                raise TopicMismatch(
                    f"topic {topic!r} exists with {len(t.partitions)} partitions, not {partitions}: "
                    "use another topic or --partitions " + str(len(t.partitions))
                )
            return
        if time.monotonic() > deadline:
            raise BrokerUnreachable(f"topic {topic!r} has no leader for every partition after {timeout_s:g} s")
        time.sleep(0.05)


def end_offsets(bootstrap_servers: str, topic: str, timeout_s: float = DEFAULT_TIMEOUT_S) -> dict[int, int] | None:
    """The next offset (high watermark) of each partition of ``topic``, by partition; None if the
    topic does not exist. ``TRANSIENT_ERRORS`` are retried, with a new client, until ``timeout_s``;
    then, or on any other error, ``BrokerUnreachable``."""
    deadline = time.monotonic() + timeout_s
    while True:
        c = Consumer({"bootstrap.servers": bootstrap_servers, "group.id": f"bench-offsets-{time.time_ns()}",
                      "enable.auto.commit": False, "log.connection.close": False}, logger=log)
        try:
            meta = c.list_topics(topic, timeout=_left(deadline)).topics.get(topic)
            if meta is None or (meta.error is not None and meta.error.code() == KafkaError.UNKNOWN_TOPIC_OR_PART):
                return None
            return {p: c.get_watermark_offsets(TopicPartition(topic, p), timeout=_left(deadline))[1]
                    for p in sorted(meta.partitions)}
        except KafkaException as e:
            if e.args[0].code() not in TRANSIENT_ERRORS or time.monotonic() >= deadline:
                raise BrokerUnreachable(
                    f"Kafka at {bootstrap_servers}: reading the end offsets of {topic!r} failed: {e}") from None
        finally:
            c.close()
        time.sleep(0.2)
