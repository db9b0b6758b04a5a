"""The Kafka producer that replays a dataset: the Storm spout's input, on a real broker.

Record i goes to partition ``i mod P`` (round robin, the way a spout feeds its splitters), so a
topic's per-partition order is reproducible. The producer is idempotent (no duplicates or
reordering on retries), stamps each record with its intended send time (Kafka CreateTime) and the
dataset's own event time (header ``event_ms``), and paces open-loop (``producers.pacing``).

Delivery reports are requested for failures only (``delivery.report.only.error``): a success
costs no Python callback, and ``delivered = handed - failed - still unacknowledged at the end``.
"""

from __future__ import annotations

import itertools
import logging
import signal
import threading
import time
from array import array
from collections.abc import Iterable, Iterator
from datetime import datetime, timezone
from typing import Any

import numpy as np

from datasets.base import Dataset, SourceRecord

from .pacing import NS_PER_MS, MissingEventTime, Schedule, sleep_until
from .summary import ReplaySummary, lag_percentiles

log = logging.getLogger("producers")

DEFAULT_TIMEOUT_S = 30.0
"""Bound on reaching the broker and creating the topic."""
DEFAULT_DELIVERY_TIMEOUT_S = 120.0
"""librdkafka ``message.timeout.ms``: a record not acknowledged by then is reported failed."""
UNLIMITED_CHUNK = 8192
"""Records taken from the dataset at a time in an unlimited run."""
PROGRESS_EVERY = 4096
"""Records between progress-bar updates and client polls (a power of two: a cheap mask test)."""
MAX_ERRORS_KEPT = 10


class BrokerUnreachable(RuntimeError):
    """The broker did not answer within the timeout."""


class TopicMismatch(RuntimeError):
    """The topic exists with another partition count than asked: record i -> partition i mod P
    would not hold."""


def producer_config(bootstrap_servers: str, delivery_timeout_s: float, timeout_s: float, extra: dict | None = None) -> dict:
    """Idempotent, batching, failure-only delivery reports. Tuned on a 2-CPU box with a local
    broker: 5 ms linger with up to 10,000 records (1 MB) a batch; no compression (CPU is scarcer
    than loopback bandwidth)."""
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
        "message.timeout.ms": int(delivery_timeout_s * 1000),
        "socket.connection.setup.timeout.ms": max(1000, int(timeout_s * 1000)),
        "log.connection.close": False,
    }
    cfg.update(extra or {})
    return cfg


def _admin(bootstrap_servers: str, timeout_s: float):
    from confluent_kafka.admin import AdminClient

    return AdminClient(
        {
            "bootstrap.servers": bootstrap_servers,
            "socket.connection.setup.timeout.ms": max(1000, int(timeout_s * 1000)),
            "log.connection.close": False,
        },
        logger=log,
    )


def check_broker(bootstrap_servers: str, timeout_s: float = DEFAULT_TIMEOUT_S):
    """An AdminClient whose broker answered ``list_topics`` within ``timeout_s``; else
    ``BrokerUnreachable``."""
    from confluent_kafka import KafkaException

    admin = _admin(bootstrap_servers, timeout_s)
    try:
        admin.list_topics(timeout=timeout_s)
    except KafkaException as e:
        raise BrokerUnreachable(
            f"Kafka at {bootstrap_servers} did not answer within {timeout_s:g} s ({e.args[0] if e.args else e}). "
            "Is the broker running? Start the project's with: python -m bench.stack up"
        ) from None
    return admin


def ensure_topic(admin, topic: str, partitions: int, timeout_s: float = DEFAULT_TIMEOUT_S) -> bool:
    """Create ``topic`` with ``partitions`` partitions (replication 1) unless it exists; wait until
    every partition has a leader. Returns True if it was created. ``TopicMismatch`` if it exists with
    another partition count."""
    from confluent_kafka import KafkaError, KafkaException
    from confluent_kafka.admin import NewTopic

    deadline = time.monotonic() + timeout_s

    def existing() -> int | None:
        md = admin.list_topics(topic=topic, timeout=max(0.1, deadline - time.monotonic()))
        t = md.topics.get(topic)
        if t is None or t.error is not None and t.error.code() == KafkaError.UNKNOWN_TOPIC_OR_PART:
            return None
        if t.error is not None and t.error.code() != KafkaError.LEADER_NOT_AVAILABLE:
            raise KafkaException(t.error)
        return len(t.partitions)

    try:
        found = existing()
        created = False
        if found is None:
            fut = admin.create_topics([NewTopic(topic, num_partitions=partitions, replication_factor=1)],
                                      operation_timeout=timeout_s, request_timeout=timeout_s)[topic]
            try:
                fut.result(timeout=max(0.1, deadline - time.monotonic()))
                created = True
            except KafkaException as e:
                if e.args[0].code() != KafkaError.TOPIC_ALREADY_EXISTS:
                    raise
        # Wait for the metadata to show every partition with a leader.
        while True:
            md = admin.list_topics(topic=topic, timeout=max(0.1, deadline - time.monotonic()))
            t = md.topics.get(topic)
            if t is not None and t.error is None and t.partitions and all(p.leader >= 0 for p in t.partitions.values()):
                if len(t.partitions) != partitions:
                    raise TopicMismatch(
                        f"topic {topic!r} exists with {len(t.partitions)} partitions, not {partitions}: "
                        "use another topic or --partitions " + str(len(t.partitions))
                    )
                return created
            if time.monotonic() > deadline:
                raise BrokerUnreachable(f"topic {topic!r} has no leader for every partition after {timeout_s:g} s")
            time.sleep(0.05)
    except KafkaException as e:
        raise BrokerUnreachable(f"Kafka at admin request for topic {topic!r} failed: {e}") from None


class _Delivery:
    """Failure-only delivery reports and client errors."""

    def __init__(self) -> None:
        self.failed = 0
        self.failed_bytes = 0
        self.errors: list[str] = []
        self.fatal: str | None = None
        self.counting = True

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


def produce_records(
    records: Iterable[SourceRecord],
    topic: str,
    bootstrap_servers: str,
    *,
    partitions: int = 10,
    rate: float | None = None,
    speed: float | None = None,
    progress: bool = True,
    total: int | None = None,
    start_ms: int | None = None,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    delivery_timeout_s: float = DEFAULT_DELIVERY_TIMEOUT_S,
    config: dict | None = None,
    dataset_name: str = "",
    fingerprint: dict | None = None,
    resume_from: list[int] | None = None,
) -> ReplaySummary:
    """Send ``records`` (record i to partition i mod ``partitions``) on the schedule given by
    ``rate``/``speed`` (neither: unlimited). The core of ``replay``; the perf section calls it with
    pre-built records. See ``replay`` for the parameters.

    ``resume_from``: per partition, the number of its records already in the topic (a stopped
    replay's prefix); those are skipped, keeping every other record's partition and intended time.
    """
    from confluent_kafka import KafkaException, Producer

    if partitions < 1:
        raise ValueError(f"partitions must be >= 1, got {partitions}")
    skip = list(resume_from) if resume_from and any(resume_from) else None
    if skip is not None and len(skip) != partitions:
        raise ValueError(f"resume_from needs one count per partition ({partitions}), got {len(skip)}")
    schedule = Schedule(rate=rate, speed=speed)
    admin = check_broker(bootstrap_servers, timeout_s)
    ensure_topic(admin, topic, partitions, timeout_s)

    dl = _Delivery()
    cfg = producer_config(bootstrap_servers, delivery_timeout_s, timeout_s, config)
    cfg["on_delivery"] = dl.on_delivery
    cfg["error_cb"] = dl.on_error
    producer = Producer(cfg, logger=log)
    produce, poll = producer.produce, producer.poll
    summary = ReplaySummary(
        dataset=dataset_name,
        fingerprint=fingerprint or {},
        topic=topic,
        bootstrap_servers=bootstrap_servers,
        partitions=partitions,
        pacing={"mode": schedule.mode, "rate": rate, "speed": speed, "describe": schedule.describe()},
        producer_config={k: v for k, v in cfg.items() if not callable(v)},
    )

    bar = None
    if progress:
        from tqdm import tqdm

        bar = tqdm(total=total, unit="rec", unit_scale=True, mininterval=0.5, smoothing=0.05, desc=f"-> {topic}", leave=True)

    # Take the first record before the clock starts: a dataset's set-up (loading a package's
    # frame, opening a file) must not show as lag or lower the measured rate.
    it: Iterator[SourceRecord] = iter(records)
    try:
        head = next(it)
    except StopIteration:
        head = None
    except KeyboardInterrupt:
        head, summary.interrupted = None, True
    it = itertools.chain((head,), it) if head is not None else iter(())

    lags = array("q")  # per-record lag in us (paced runs only)
    n = 0  # position in the dataset: record n goes to partition n mod P
    skipped = 0  # records of a resumed replay already in the topic
    nbytes = 0
    first_ts = last_ts = ts = None
    now_epoch_ns = time.time_ns()
    # A whole-ms start, so record i is stamped exactly start_ms + floor(offset_i in ms).
    start_epoch_ns = (start_ms if start_ms is not None else now_epoch_ns // NS_PER_MS) * NS_PER_MS
    start_mono = time.perf_counter_ns() + (start_epoch_ns - now_epoch_ns)
    summary.start_ms = start_epoch_ns // NS_PER_MS
    summary.started_utc = datetime.fromtimestamp(start_epoch_ns / 1e9, timezone.utc).isoformat()
    clock = time.perf_counter_ns
    wall = time.time_ns
    end_mono = start_mono

    def send(value: bytes, partition: int, ts: int, ev: int | None) -> None:
        """The slow path: the client's queue is full (wait for room) or it refuses the record.
        ``ts`` 0 lets librdkafka stamp the hand-over time."""
        headers = None if ev is None else {"event_ms": str(ev)}
        while True:
            try:
                produce(topic, value, partition=partition, timestamp=ts, headers=headers)
                return
            except BufferError:
                poll(0.005)
            except KafkaException as e:
                dl.failed += 1
                dl.failed_bytes += len(value)
                if len(dl.errors) < MAX_ERRORS_KEPT:
                    dl.errors.append(f"partition {partition}: refused: {e}")
                return

    # Ctrl-C sets a flag that the loops check, so the count of handed records stays exact (a
    # KeyboardInterrupt could land between produce() and the count). Main thread only; elsewhere
    # the KeyboardInterrupt path below still ends the run. A second Ctrl-C raises at once.
    stop = [summary.interrupted]
    prev_handler = None

    def on_sigint(signum, frame) -> None:
        if stop[0]:
            raise KeyboardInterrupt
        stop[0] = True

    if threading.current_thread() is threading.main_thread():
        prev_handler = signal.signal(signal.SIGINT, on_sigint)

    try:
        if start_mono > clock():
            sleep_until(start_mono, stop=stop)
        if schedule.unlimited:
            # Hand records over a chunk at a time, grouped by partition: record i still goes to
            # partition i mod P and each partition keeps dataset order, but consecutive produce()
            # calls hit the same partition queue. Round robin record by record wakes librdkafka's
            # broker thread for every record and halves the throughput (measured: docs/datasets.md).
            # No timestamp argument: librdkafka stamps CreateTime with the wall clock inside
            # produce(), which is the hand-over time, i.e. the intended send time of an unlimited
            # run; passing it from Python costs a quarter of the throughput.
            chunk_size = max(partitions, (UNLIMITED_CHUNK // partitions) * partitions)
            first_ts = wall() // NS_PER_MS
            while not dl.fatal and not stop[0]:
                chunk = list(itertools.islice(it, chunk_size))
                if not chunk:
                    break
                base = n
                for q in range(min(partitions, len(chunk))):
                    part = (base + q) % partitions
                    group = chunk[q::partitions]
                    if skip is not None:
                        # base is a multiple of P: group[j] is record base//P + j of its partition
                        present = min(len(group), max(0, skip[part] - base // partitions))
                        if present:
                            n += present
                            skipped += present
                            group = group[present:]
                            if not group:
                                continue
                    values = [rec.value for rec in group]
                    events = [rec.event_ms for rec in group]
                    if events.count(None) == len(events):
                        # The common case (no event time) without per-record branches or keyword
                        # arguments: positional (topic, value, key, partition).
                        for value in values:
                            try:
                                produce(topic, value, None, part)
                            except (BufferError, KafkaException):
                                send(value, part, 0, None)
                    else:
                        for value, ev in zip(values, events):
                            try:
                                if ev is None:
                                    produce(topic, value, None, part)
                                else:
                                    produce(topic, value, None, part, headers={"event_ms": str(ev)})
                            except (BufferError, KafkaException):
                                send(value, part, 0, ev)
                    nbytes += sum(map(len, values))
                    n += len(group)  # exact: Ctrl-C only sets `stop` (see on_sigint)
                poll(0)
                if bar is not None:
                    bar.update(n - bar.n)
            last_ts = wall() // NS_PER_MS
            if not n:
                first_ts = last_ts = None
        else:
            offset_ns = schedule.offset_ns
            for rec in it:
                ev = rec.event_ms
                off = offset_ns(n, ev)
                if skip is not None and n // partitions < skip[n % partitions]:
                    n += 1  # already in the topic (offset_ns was still called: speed mode keeps its origin)
                    skipped += 1
                    continue
                due = start_mono + off
                now = clock()
                if due > now:
                    poll(0)
                    sleep_until(due, stop=stop)
                    now = clock()
                if stop[0]:
                    break
                lags.append((now - due) // 1000)
                ts = (start_epoch_ns + off) // NS_PER_MS
                value = rec.value
                try:
                    if ev is None:
                        produce(topic, value, partition=n % partitions, timestamp=ts)
                    else:
                        produce(topic, value, partition=n % partitions, timestamp=ts, headers={"event_ms": str(ev)})
                except (BufferError, KafkaException):
                    send(value, (n % partitions), ts, ev)
                n += 1
                nbytes += len(value)
                if first_ts is None:
                    first_ts = ts
                last_ts = ts
                if not n & (PROGRESS_EVERY - 1):
                    poll(0)
                    if bar is not None:
                        bar.update(n - bar.n)
                    if dl.fatal:
                        break
        end_mono = clock()
        if stop[0]:
            summary.interrupted = True
    except KeyboardInterrupt:
        end_mono = clock()
        # A second Ctrl-C (a hard stop): the count may miss the record being handed over.
        summary.interrupted = True
        last_ts = ts if not schedule.unlimited else wall() // NS_PER_MS
    except MissingEventTime:
        producer.flush(5)
        raise
    finally:
        if prev_handler is not None:
            signal.signal(signal.SIGINT, prev_handler)
        if bar is not None:
            bar.update(n - bar.n)
            bar.close()

    # Flush what was handed over; a second Ctrl-C stops waiting.
    t = time.perf_counter()
    deadline = time.monotonic() + delivery_timeout_s + 5
    try:
        while len(producer) > 0 and time.monotonic() < deadline:
            producer.flush(min(0.5, max(0.0, deadline - time.monotonic())))
    except KeyboardInterrupt:
        summary.interrupted = True
    summary.undelivered = len(producer)
    dl.counting = False
    if summary.undelivered:
        try:
            producer.purge(in_queue=True, in_flight=True)
            producer.poll(0)
        except Exception:  # noqa: BLE001 - best effort on the way out
            pass
    summary.flush_s = time.perf_counter() - t
    if dl.fatal and f"fatal: {dl.fatal}" not in dl.errors:
        dl.errors.insert(0, f"fatal: {dl.fatal}")

    handed = n - skipped
    summary.records = handed
    summary.already_present = skipped
    summary.resumed_from = skip
    summary.failed = dl.failed
    summary.delivered = handed - dl.failed - summary.undelivered
    summary.bytes = nbytes
    summary.duration_s = max(0, end_mono - start_mono) / 1e9
    summary.records_per_s = handed / summary.duration_s if summary.duration_s > 0 else 0.0
    summary.lag = lag_percentiles(np.frombuffer(lags, dtype=np.int64)) if not schedule.unlimited else None
    summary.first_timestamp_ms, summary.last_timestamp_ms = first_ts, last_ts
    summary.per_partition = [max(0, (n - p + partitions - 1) // partitions - (skip[p] if skip else 0))
                             for p in range(partitions)]
    summary.errors = dl.errors
    return summary


def expected_records(dataset: Dataset, limit: int | None) -> int:
    """The number of records ``dataset.records(limit)`` yields: from ``documented_records`` when
    the dataset knows it, else by reading them once."""
    if dataset.documented_records is not None:
        return dataset.documented_records if limit is None else min(limit, dataset.documented_records)
    return sum(1 for _ in dataset.records(limit))


def replay(
    dataset: Dataset,
    topic: str,
    bootstrap_servers: str,
    *,
    partitions: int = 10,
    rate: float | None = None,
    speed: float | None = None,
    limit: int | None = None,
    progress: bool = True,
    start_ms: int | None = None,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    delivery_timeout_s: float = DEFAULT_DELIVERY_TIMEOUT_S,
    key_stats: bool = True,
    config: dict | None = None,
    resume: bool = False,
) -> ReplaySummary:
    """Replay ``dataset`` into ``topic``.

    Args:
        partitions: P; the topic is created with P partitions (replication 1) if missing, and
            record i goes to partition i mod P.
        rate: records/s, open-loop from the schedule start; speed: K for ``xK`` of the dataset's own
            event times; neither: unlimited (intended send time = hand-over time).
        limit: the first ``limit`` records only.
        start_ms: epoch ms of the schedule start (the intended send time of record 0); default now.
        timeout_s: bound on reaching the broker (``BrokerUnreachable``) and creating the topic.
        delivery_timeout_s: a record not acknowledged by then is counted failed.
        key_stats: compute the realised key distribution (a second, vectorised where possible, pass
            over the handed records after the run).
        config: extra librdkafka settings.
        resume: if the topic already holds a prefix of this replay (a stopped attempt), send only
            the missing records, each to its own partition with its own intended time (the schedule
            start is record 0's Kafka timestamp); a complete topic sends nothing. ``ReplayMismatch``
            if the topic holds anything else (``producers.resume``).
    Returns: the ``ReplaySummary``; ``.ok`` is False if a record was not delivered or the run was
        interrupted (Ctrl-C: what was handed over is flushed first).
    Raises: BrokerUnreachable, TopicMismatch, ReplayMismatch, MissingEventTime (``speed`` on a dataset without event
        times), DatasetFileMissing.
    """
    fingerprint = dataset.fingerprint()
    total = limit if limit is not None else dataset.documented_records
    if total is not None and dataset.documented_records is not None:
        total = min(total, dataset.documented_records)
    resume_from = None
    if resume:
        from .resume import COMPLETE, MISMATCH, PREFIX, first_timestamp_ms, inspect_topic

        state = inspect_topic(bootstrap_servers, topic, expected_records(dataset, limit), partitions, timeout_s)
        if state.state == MISMATCH:
            raise state.mismatch_error(bootstrap_servers)
        if state.state in (PREFIX, COMPLETE):
            resume_from = list(state.ends)
            if start_ms is None and (rate is not None or speed is not None):
                start_ms = first_timestamp_ms(bootstrap_servers, topic, timeout_s)
            log.info("%s: resuming the replay", state.describe())
    summary = produce_records(
        dataset.records(limit),
        topic,
        bootstrap_servers,
        partitions=partitions,
        rate=rate,
        speed=speed,
        progress=progress,
        total=total,
        start_ms=start_ms,
        timeout_s=timeout_s,
        delivery_timeout_s=delivery_timeout_s,
        config=config,
        dataset_name=dataset.name,
        fingerprint=fingerprint,
        resume_from=resume_from,
    )
    # The reader's counts, taken before a second pass resets them.
    summary.malformed = dataset.malformed.to_dict()
    summary.skipped = dict(dataset.skipped)
    if key_stats and summary.already_present + summary.records:
        from datasets.stats import distribution_summary

        try:
            summary.key_distribution = distribution_summary(
                dataset.key_stats(summary.already_present + summary.records))
        except KeyboardInterrupt:
            summary.interrupted = True
    return summary
