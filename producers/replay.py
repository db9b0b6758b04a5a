"""The Kafka producer that replays a dataset: the Storm spout's input, on a real broker.

Record i goes to partition ``i mod P`` (round robin, the way a spout feeds its splitters), so a
topic's per-partition order is reproducible. The producer is idempotent (no duplicates or
reordering on retries), stamps each record with its intended send time (Kafka CreateTime) and the
dataset's own event time (header ``event_ms``), and paces open-loop (``producers.pacing``).

A replay's steps, each in its own module: the broker and topic checks (``producers.broker``), the
client and its failure-only delivery reports (``producers.client``), the hand-over loop
(``producers.handover``, stopped by Ctrl-C through ``producers.interrupt``), the final flush, and
the counts into the ``ReplaySummary`` (``producers.summary``).
"""

from __future__ import annotations

import logging
import multiprocessing
import time
from collections.abc import Iterable
from concurrent.futures import ProcessPoolExecutor
from datetime import datetime, timezone

from tqdm import tqdm

from bench.latency import encode
from datasets.base import Dataset, SourceRecord
from datasets.stats import distribution_summary

from .broker import DEFAULT_TIMEOUT_S, check_broker, ensure_topic
from .client import DEFAULT_DELIVERY_TIMEOUT_S, DeliveryReports, Flushed, ReplayClient, producer_config
from .handover import Handover, Shard, take_first
from .interrupt import StopFlag
from .pacing import Schedule, ScheduleStart
from .resume import COMPLETE, MISMATCH, PREFIX, first_timestamp_ms, inspect_topic
from .sharded import SPAWN_LEAD_MS, merged
from .summary import ReplaySummary, lag_percentiles

log = logging.getLogger("producers")


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
    shard: Shard = Shard(),
) -> ReplaySummary:
    """Send ``records`` (record i to partition i mod ``partitions``) on the schedule given by
    ``rate``/``speed`` (neither: unlimited). The core of ``replay``; the perf section calls it with
    pre-built records. See ``replay`` for the parameters.

    ``resume_from``: per partition, the number of its records already in the topic (a stopped
    replay's prefix); those are skipped, keeping every other record's partition and intended time.
    ``shard``: the partitions this process sends (one process of a sharded replay,
    ``producers.sharded``); the others' records are passed over, keeping every record's intended time.
    """
    if partitions < 1:
        raise ValueError(f"partitions must be >= 1, got {partitions}")
    skip = list(resume_from) if resume_from and any(resume_from) else None
    if skip is not None and len(skip) != partitions:
        raise ValueError(f"resume_from needs one count per partition ({partitions}), got {len(skip)}")
    schedule = Schedule(rate=rate, speed=speed)
    ensure_topic(check_broker(bootstrap_servers, timeout_s), topic, partitions, timeout_s)

    client = ReplayClient(topic, producer_config(bootstrap_servers, timeout_s, config), stall_s=delivery_timeout_s)
    summary = ReplaySummary(
        dataset=dataset_name,
        fingerprint=fingerprint or {},
        topic=topic,
        bootstrap_servers=bootstrap_servers,
        partitions=partitions,
        pacing={"mode": schedule.mode, "rate": rate, "speed": speed, "describe": schedule.describe()},
        producer_config={k: v for k, v in client.config.items() if not callable(v)},
    )
    bar = None
    if progress:
        bar = tqdm(total=total, unit="rec", unit_scale=True, mininterval=0.5, smoothing=0.05, desc=f"-> {topic}", leave=True)
    it, summary.interrupted = take_first(records)
    start = ScheduleStart.at(start_ms)
    summary.start_ms = start.ms
    summary.started_utc = datetime.fromtimestamp(start.epoch_ns / 1e9, timezone.utc).isoformat()

    handover = Handover(client, schedule, partitions, skip, start, StopFlag(summary.interrupted), bar, shard)
    if handover.run(it):
        summary.interrupted = True
    _count(summary, handover, client.delivery, client.finish(delivery_timeout_s), skip)
    return summary


def _count(summary: ReplaySummary, handover: Handover, delivery: DeliveryReports, flushed: Flushed,
           skip: list[int] | None) -> None:
    """The figures of a finished replay into ``summary``: ``delivered = handed - failed - undelivered``
    (failure-only delivery reports), the rate over the offered load's duration, the lag percentiles."""
    if flushed.interrupted:
        summary.interrupted = True
    summary.undelivered = flushed.undelivered
    summary.flush_s = flushed.flush_s
    handed = handover.handed
    summary.records = handed
    summary.already_present = handover.skipped
    summary.resumed_from = skip
    summary.failed = delivery.failed
    summary.delivered = handed - delivery.failed - flushed.undelivered
    summary.bytes = handover.nbytes
    summary.duration_s = max(0, handover.end_mono_ns - handover.start.mono_ns) / 1e9
    summary.records_per_s = handed / summary.duration_s if summary.duration_s > 0 else 0.0
    unlimited = handover.schedule.unlimited
    summary.lag = lag_percentiles(handover.lag_histogram) if not unlimited else None
    summary.lag_histogram = encode(handover.lag_histogram) if not unlimited else None
    summary.first_timestamp_ms, summary.last_timestamp_ms = handover.first_ts, handover.last_ts
    summary.per_partition = handover.per_partition
    summary.errors = delivery.errors


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
    processes: int = 1,
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
        delivery_timeout_s: how long the replay waits for the broker: a record the client cannot
            queue for this long (its queue full) is counted failed and stops the replay; the final
            flush waits this long (+ 5 s), then counts what is unacknowledged as undelivered. A
            record is never expired on its own, so a broker outage leaves no gap in a partition
            (``producers.client``).
        key_stats: compute the realised key distribution (a second, vectorised where possible, pass
            over the handed records after the run).
        config: extra librdkafka settings.
        resume: if the topic already holds a prefix of this replay (a stopped attempt), send only
            the missing records, each to its own partition with its own intended time (the schedule
            start is record 0's Kafka timestamp); a complete topic sends nothing. ``ReplayMismatch``
            if the topic holds anything else (``producers.resume``).
        processes: producer processes sharing the replay, each sending its own partitions
            (``producers.sharded``); 1 sends from this process, with the progress bar.
    Returns: the ``ReplaySummary``; ``.ok`` is False if a record was not delivered or the run was
        interrupted (Ctrl-C: what was handed over is flushed first).
    Raises: BrokerUnreachable, TopicMismatch, ReplayMismatch, MissingEventTime (``speed`` on a dataset without event
        times), DatasetFileMissing; ValueError: ``processes`` not in 1..``partitions``.
    """
    if not 1 <= processes <= partitions:
        raise ValueError(f"producer processes must be 1..{partitions} (one partition at least each), got {processes}")
    fingerprint = dataset.fingerprint()
    resume_from = None
    if resume:
        resume_from, start_ms = _resume_point(dataset, limit, topic, bootstrap_servers, partitions, start_ms,
                                              rate is not None or speed is not None, timeout_s)
    send = dict(partitions=partitions, rate=rate, speed=speed, timeout_s=timeout_s,
                delivery_timeout_s=delivery_timeout_s, config=config, dataset_name=dataset.name,
                fingerprint=fingerprint, resume_from=resume_from)
    if processes == 1:
        summary = _send_shard(dataset, limit, topic, bootstrap_servers, Shard(),
                              dict(send, progress=progress, total=_progress_total(dataset, limit), start_ms=start_ms))
    else:
        summary = _send_sharded(dataset, limit, topic, bootstrap_servers, processes, send, start_ms)
    if key_stats and summary.already_present + summary.records:
        _add_key_distribution(summary, dataset)
    return summary


def _send_shard(dataset: Dataset, limit: int | None, topic: str, bootstrap_servers: str, shard: Shard,
                send: dict) -> ReplaySummary:
    """One process's part of a replay (``produce_records`` with ``send``), with the reader's counts
    of the dataset (taken before a second pass resets them)."""
    summary = produce_records(dataset.records(limit), topic, bootstrap_servers, shard=shard, **send)
    summary.malformed = dataset.malformed.to_dict()
    summary.skipped = dict(dataset.skipped)
    return summary


def _send_sharded(dataset: Dataset, limit: int | None, topic: str, bootstrap_servers: str, processes: int,
                  send: dict, start_ms: int | None) -> ReplaySummary:
    """The replay in ``processes`` spawned processes, each sending its shard from one schedule
    start; their summaries merged (``producers.sharded``). A Ctrl-C reaches the processes too (the
    same process group): each flushes and reports what it delivered."""
    ensure_topic(check_broker(bootstrap_servers, send["timeout_s"]), topic, send["partitions"], send["timeout_s"])
    if start_ms is None:
        start_ms = time.time_ns() // 1_000_000 + SPAWN_LEAD_MS
    send = dict(send, progress=False, start_ms=start_ms)
    with ProcessPoolExecutor(processes, mp_context=multiprocessing.get_context("spawn")) as pool:
        futures = [pool.submit(_send_shard, dataset, limit, topic, bootstrap_servers, Shard(j, processes), send)
                   for j in range(processes)]
        while True:
            try:
                return merged([f.result() for f in futures])
            except KeyboardInterrupt:
                continue


def _progress_total(dataset: Dataset, limit: int | None) -> int | None:
    """The records the progress bar expects: ``limit`` capped by the documented count; None if unknown."""
    total = limit if limit is not None else dataset.documented_records
    if total is not None and dataset.documented_records is not None:
        total = min(total, dataset.documented_records)
    return total


def _add_key_distribution(summary: ReplaySummary, dataset: Dataset) -> None:
    """The realised key distribution of the records in the topic (those already there and those
    handed over): a second pass over the dataset, which a Ctrl-C cuts short (then interrupted)."""
    try:
        summary.key_distribution = distribution_summary(dataset.key_stats(summary.already_present + summary.records))
    except KeyboardInterrupt:
        summary.interrupted = True


def _resume_point(dataset: Dataset, limit: int | None, topic: str, bootstrap_servers: str, partitions: int,
                  start_ms: int | None, paced: bool, timeout_s: float) -> tuple[list[int] | None, int | None]:
    """Where a resumed replay starts: per partition, the records already in the topic (None when it
    holds none), and the schedule start (record 0's Kafka timestamp for a paced replay, unless
    ``start_ms`` is given). ``ReplayMismatch`` if the topic holds something else."""
    state = inspect_topic(bootstrap_servers, topic, expected_records(dataset, limit), partitions, timeout_s)
    if state.state == MISMATCH:
        raise state.mismatch_error(bootstrap_servers)
    if state.state not in (PREFIX, COMPLETE):
        return None, start_ms
    if start_ms is None and paced:
        start_ms = first_timestamp_ms(bootstrap_servers, topic, timeout_s)
    log.info("%s: resuming the replay", state.describe())
    return list(state.ends), start_ms
