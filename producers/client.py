"""The Kafka client of a replay: its settings, its failure-only delivery reports, the slow path of a
hand-over, and the final flush.

Delivery reports are requested for failures only (``delivery.report.only.error``): a success
costs no Python callback, and ``delivered = handed - failed - still unacknowledged at the end``.

Every partition of the topic holds a prefix of its records, whatever happens to the broker (the
resume of a stopped replay counts on it, ``producers.resume``). The idempotent producer keeps each
partition in order without duplicates, but a record that librdkafka expires (``message.timeout.ms``)
leaves a gap that later records land behind, and ``enable.gapless.guarantee`` does not cover those
expiries. So no record ever expires (``message.timeout.ms`` 0: infinite): a broker that is down
holds the records in the client's queue until it is back. The replay's own bound is on handing
over: a record the client will not take (its queue full for ``delivery_timeout_s``, or refused)
stops the hand-over, and nothing after it is handed. The final flush purges what is still
unacknowledged after its wait, a suffix of each partition.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import Any

from confluent_kafka import KafkaException, Producer

log = logging.getLogger("producers")

DEFAULT_DELIVERY_TIMEOUT_S = 120.0
"""How long a replay waits for the broker to take records: a hand-over blocked by the client's full
queue this long stops the replay, and the final flush waits this long (plus 5 s) for the rest."""
MAX_ERRORS_KEPT = 10


def producer_config(bootstrap_servers: str, timeout_s: float, extra: dict | None = None) -> dict:
    """Idempotent, batching, failure-only delivery reports, no record ever expired (the module's
    docstring says why). Tuned on a 2-CPU box with a local broker: 5 ms linger with up to 10,000
    records (1 MB) a batch; no compression (CPU is scarcer than loopback bandwidth)."""
    cfg: dict[str, Any] = {
        "bootstrap.servers": bootstrap_servers,
        "client.id": "bench-producer",
        "enable.idempotence": True,
        "acks": "all",
        "linger.ms": 5,
        "batch.num.messages": 10_000,
        "batch.size": 1_000_000,
        "queue.buffering.max.messages": 1_000_000,
        "queue.buffering.max.kbytes": 1_048_576,
        "compression.type": "none",
        "delivery.report.only.error": True,
        "message.timeout.ms": 0,
        "socket.connection.setup.timeout.ms": max(1000, int(timeout_s * 1000)),
        "log.connection.close": False,
    }
    cfg.update(extra or {})
    return cfg


class DeliveryReports:
    """Failure-only delivery reports and client errors: the failed records (and their bytes), the
    first ``MAX_ERRORS_KEPT`` error texts, and the client's fatal error if any."""

    def __init__(self) -> None:
        self.failed = 0
        self.failed_bytes = 0
        self.errors: list[str] = []
        self.fatal: str | None = None
        self.counting = True
        """False once the final flush gave up: the purged records are counted undelivered, not failed."""

    def on_delivery(self, err, msg) -> None:
        if err is None or not self.counting:
            return
        self.failed += 1
        v = msg.value()
        self.failed_bytes += len(v) if v else 0
        if len(self.errors) < MAX_ERRORS_KEPT:
            self.errors.append(f"partition {msg.partition()}: {err.str()}")

    def on_error(self, err) -> None:
        if len(self.errors) < MAX_ERRORS_KEPT:
            self.errors.append(f"client: {err.str()}")
        if err.fatal():
            self.fatal = err.str()

    def refused(self, partition: int, value: bytes, error: KafkaException | str) -> None:
        """The client did not take a record at hand-over (refused it, or its queue stayed full): it
        counts as failed."""
        self.failed += 1
        self.failed_bytes += len(value)
        if len(self.errors) < MAX_ERRORS_KEPT:
            self.errors.append(f"partition {partition}: refused: {error}")


@dataclass
class Flushed:
    """The end of a replay's delivery: records still unacknowledged, seconds spent flushing, and
    whether a Ctrl-C stopped the wait."""

    undelivered: int
    flush_s: float
    interrupted: bool


class ReplayClient:
    """One idempotent librdkafka producer writing ``topic``, with its ``DeliveryReports``.

    ``produce`` and ``poll`` are the client's own bound methods: the hand-over loops call them
    directly (the fast path); ``send_slow`` is the path when the queue is full or a record is refused.
    A hand-over loop stops at the first record ``send_slow`` gives up.
    """

    def __init__(self, topic: str, cfg: dict, stall_s: float = DEFAULT_DELIVERY_TIMEOUT_S) -> None:
        self.topic = topic
        self.stall_s = stall_s
        """How long ``send_slow`` waits for room in a full queue before it gives the record up."""
        self.delivery = DeliveryReports()
        self.config = {**cfg, "on_delivery": self.delivery.on_delivery, "error_cb": self.delivery.on_error}
        self.producer = Producer(self.config, logger=log)
        self.produce = self.producer.produce
        self.poll = self.producer.poll

    def send_slow(self, value: bytes, partition: int, ts: int, ev: int | None) -> bool:
        """The slow path: the client's queue is full (wait for room, at most ``stall_s``) or it
        refuses the record. ``ts`` 0 lets librdkafka stamp the hand-over time.

        Returns: False if the record was not taken (counted failed, the reason among the errors);
        the caller then hands nothing more over, so that its partition keeps a prefix of its records.
        """
        headers = None if ev is None else {"event_ms": str(ev)}
        deadline = time.monotonic() + self.stall_s
        while True:
            try:
                self.produce(self.topic, value, partition=partition, timestamp=ts, headers=headers)
                return True
            except BufferError:
                if time.monotonic() > deadline:
                    self.delivery.refused(partition, value, f"the client's queue stayed full for {self.stall_s:g} s "
                                                            "(the broker took nothing): the replay stops here")
                    return False
                self.poll(0.005)
            except KafkaException as e:
                self.delivery.refused(partition, value, e)
                return False

    def finish(self, delivery_timeout_s: float) -> Flushed:
        """Flush what was handed over, for at most ``delivery_timeout_s`` + 5 s; a second Ctrl-C
        stops waiting. What is still unacknowledged then is purged and counted undelivered."""
        producer = self.producer
        t = time.perf_counter()
        interrupted = False
        deadline = time.monotonic() + delivery_timeout_s + 5
        try:
            while len(producer) > 0 and time.monotonic() < deadline:
                producer.flush(min(0.5, max(0.0, deadline - time.monotonic())))
        except KeyboardInterrupt:
            interrupted = True
        undelivered = len(producer)
        self.delivery.counting = False
        if undelivered:
            try:
                producer.purge(in_queue=True, in_flight=True)
                producer.poll(0)
            except Exception:  # noqa: BLE001 - best effort on the way out
                pass
        flush_s = time.perf_counter() - t
        fatal = self.delivery.fatal
        if fatal and f"fatal: {fatal}" not in self.delivery.errors:
            self.delivery.errors.insert(0, f"fatal: {fatal}")
        return Flushed(undelivered, flush_s, interrupted)
