"""The spout's loop: hand a dataset's records to the Kafka client on schedule, record n to
partition ``n mod P``, skipping the records a resumed replay finds already in the topic, and, in one
process of a sharded replay (``Shard``), the records of the other processes' partitions.

Two loops: the unlimited one hands records over a chunk at a time, grouped by partition; the paced
one waits for each record's intended send time (``producers.pacing``), stamps it with that time and
measures the lag into an HDR histogram, so a replay of any length holds it in constant memory. Both
keep exact counts: a first Ctrl-C only sets the ``StopFlag`` they check. Both stop at the first
record the client does not take (``ReplayClient.send_slow``), so that no partition gets a record
behind a missing one.
"""

from __future__ import annotations

import itertools
import time
from array import array
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

import numpy as np
from confluent_kafka import KafkaException
from hdrh.histogram import HdrHistogram

from bench.latency import HIGHEST_US, new_histogram
from datasets.base import SourceRecord

from .client import ReplayClient
from .interrupt import StopFlag
from .pacing import NS_PER_MS, MissingEventTime, Schedule, ScheduleStart, sleep_until

UNLIMITED_CHUNK = 8192
"""Records taken from the dataset at a time in an unlimited run."""
PROGRESS_EVERY = 4096
"""Records between progress-bar updates and client polls (a power of two: a cheap mask test)."""


@dataclass(frozen=True)
class Shard:
    """The partitions one producer process of a replay sends: each partition p with ``p mod of ==
    index`` (``producers.sharded``). The default, one process, sends every partition.

    Raises: ValueError: ``of`` < 1 or ``index`` outside 0..of-1.
    """

    index: int = 0
    of: int = 1

    def __post_init__(self) -> None:
        if self.of < 1 or not 0 <= self.index < self.of:
            raise ValueError(f"shard {self.index} of {self.of}: expected 0 <= index < of, of >= 1")

    def owns(self, partitions: int) -> list[bool]:
        """For each of ``partitions`` partitions, whether this process sends it."""
        return [p % self.of == self.index for p in range(partitions)]


def take_first(records: Iterable[SourceRecord]) -> tuple[Iterator[SourceRecord], bool]:
    """``records`` with its first record already taken, and whether a Ctrl-C came meanwhile (then
    no record). Taken before the clock starts: a dataset's set-up (loading a package's frame,
    opening a file) must not show as lag or lower the measured rate."""
    it: Iterator[SourceRecord] = iter(records)
    try:
        head = next(it)
    except StopIteration:
        return iter(()), False
    except KeyboardInterrupt:
        return iter(()), True
    return itertools.chain((head,), it), False


class Handover:
    """Hands records to ``client``; after ``run`` its counters say what was handed.

    Counters: ``n`` records passed (record n goes to partition n mod P; after an unlimited run gave
    up part-way through a chunk, not the first n), ``skipped`` of them were already in the topic
    (``skip[p]``: records of partition p there before the run), ``foreign`` of them belong to
    another process's partitions (``shard``), ``per_partition`` the records handed to each
    partition, ``nbytes`` of values handed, ``first_ts``/``last_ts`` the first and last Kafka timestamps (epoch ms),
    ``lag_histogram`` the per-record send lag in whole us (paced runs only; ``bench.latency``'s
    range and precision), ``end_mono_ns`` the last hand-over.
    """

    def __init__(self, client: ReplayClient, schedule: Schedule, partitions: int, skip: list[int] | None,
                 start: ScheduleStart, stop: StopFlag, bar=None, shard: Shard = Shard()) -> None:
        self.client = client
        self.schedule = schedule
        self.partitions = partitions
        self.skip = skip
        self.mine = shard.owns(partitions)
        self.start = start
        self.stop = stop
        self.bar = bar
        self.n = 0
        self.skipped = 0
        self.foreign = 0
        self.nbytes = 0
        self.first_ts: int | None = None
        self.last_ts: int | None = None
        self.ts: int | None = None
        """The last intended timestamp computed (the record being handed over at a hard stop)."""
        self.lag_histogram: HdrHistogram = new_histogram()
        self.lags = array("q")
        """The lags not yet folded into ``lag_histogram`` (at most PROGRESS_EVERY of them)."""
        self.end_mono_ns = start.mono_ns
        self.per_partition = [0] * partitions
        self.gave_up = False
        """True once the client did not take a record: nothing after it was handed over."""

    @property
    def handed(self) -> int:
        return self.n - self.skipped - self.foreign

    def fold_lags(self) -> None:
        """Move the buffered lags into ``lag_histogram`` (a lag below 0 us, a wake-up a hair early,
        counts as 0; one above a day as a day), leaving the buffer empty."""
        if not self.lags:
            return
        values, counts = np.unique(np.frombuffer(self.lags, dtype=np.int64).clip(0, HIGHEST_US), return_counts=True)
        record = self.lag_histogram.record_value
        for value, count in zip(values.tolist(), counts.tolist()):
            record(value, count)
        del self.lags[:]

    def run(self, records: Iterator[SourceRecord]) -> bool:
        """Wait for the schedule start, hand every record over; True if a Ctrl-C stopped the run.
        Ctrl-C is caught by ``stop`` while the loop runs; the SIGINT handler is restored and the
        progress bar closed on the way out. ``MissingEventTime`` (paced by speed, a record without
        event time) after flushing what was handed."""
        clock = time.perf_counter_ns
        self.stop.install()
        try:
            if self.start.mono_ns > clock():
                sleep_until(self.start.mono_ns, stop=self.stop)
            if self.schedule.unlimited:
                self._unlimited(records)
            else:
                self._paced(records)
            self.end_mono_ns = clock()
            return self.stop.stopped
        except KeyboardInterrupt:
            self.end_mono_ns = clock()
            # A second Ctrl-C (a hard stop): the count may miss the record being handed over.
            self.last_ts = self.ts if not self.schedule.unlimited else time.time_ns() // NS_PER_MS
            return True
        except MissingEventTime:
            self.client.producer.flush(5)
            raise
        finally:
            self.stop.restore()
            if self.bar is not None:
                self.bar.update(self.n - self.bar.n)
                self.bar.close()

    def _unlimited(self, it: Iterator[SourceRecord]) -> None:
        """Hand records over a chunk at a time, grouped by partition: record i still goes to
        partition i mod P and each partition keeps dataset order, but consecutive produce() calls
        hit the same partition queue. Round robin record by record wakes librdkafka's broker thread
        for every record and halves the throughput (measured: docs/datasets.md)."""
        partitions, delivery, stop, bar = self.partitions, self.client.delivery, self.stop, self.bar
        chunk_size = max(partitions, (UNLIMITED_CHUNK // partitions) * partitions)
        self.first_ts = time.time_ns() // NS_PER_MS
        while not delivery.fatal and not stop.stopped and not self.gave_up:
            chunk = list(itertools.islice(it, chunk_size))
            if not chunk:
                break
            base = self.n
            for q in range(min(partitions, len(chunk))):
                group, part = chunk[q::partitions], (base + q) % partitions
                if self.gave_up:
                    break
                if self.mine[part]:
                    self._hand_group(group, part, base)
                else:
                    self.n += len(group)
                    self.foreign += len(group)
            self.client.poll(0)
            if bar is not None:
                bar.update(self.n - bar.n)
        self.last_ts = time.time_ns() // NS_PER_MS
        if not self.n:
            self.first_ts = self.last_ts = None

    def _hand_group(self, group: list[SourceRecord], part: int, base: int) -> None:
        """Hand over one partition's records of a chunk starting at record ``base``. No timestamp
        argument: librdkafka stamps CreateTime with the wall clock inside produce(), which is the
        hand-over time, i.e. the intended send time of an unlimited run; passing it from Python
        costs a quarter of the throughput.

        A record the client does not take ends the group there (``gave_up``): the counters take the
        records up to it, which is counted failed, and the records after it are not handed."""
        if self.skip is not None:
            # base is a multiple of P: group[j] is record base//P + j of its partition
            present = min(len(group), max(0, self.skip[part] - base // self.partitions))
            if present:
                self.n += present
                self.skipped += present
                group = group[present:]
                if not group:
                    return
        produce, send_slow, topic = self.client.produce, self.client.send_slow, self.client.topic
        values = [rec.value for rec in group]
        events = [rec.event_ms for rec in group]
        pending = iter(values)  # what is left of it tells how far the group got (no per-record count)
        if events.count(None) == len(events):
            # The common case (no event time) without per-record branches or keyword
            # arguments: positional (topic, value, key, partition).
            for value in pending:
                try:
                    produce(topic, value, None, part)
                except (BufferError, KafkaException):
                    if not send_slow(value, part, 0, None):
                        self.gave_up = True
                        break
        else:
            for value, ev in zip(pending, events):
                try:
                    if ev is None:
                        produce(topic, value, None, part)
                    else:
                        produce(topic, value, None, part, headers={"event_ms": str(ev)})
                except (BufferError, KafkaException):
                    if not send_slow(value, part, 0, ev):
                        self.gave_up = True
                        break
        taken = len(values) - sum(1 for _ in pending)
        self.nbytes += sum(map(len, values[:taken]))
        self.per_partition[part] += taken
        self.n += taken  # exact: Ctrl-C only sets `stop` (see producers.interrupt)

    def _paced(self, it: Iterator[SourceRecord]) -> None:
        """Hand each record over at its intended time (stamped with it, header ``event_ms`` when
        the dataset has one), recording the lag; the counters live in locals while the loop runs."""
        client = self.client
        partitions, skip, stop, bar, delivery = self.partitions, self.skip, self.stop, self.bar, client.delivery
        produce, poll, send_slow, topic = client.produce, client.poll, client.send_slow, client.topic
        offset_ns, clock, lags, mine = self.schedule.offset_ns, time.perf_counter_ns, self.lags, self.mine
        start_mono, start_epoch_ns = self.start.mono_ns, self.start.epoch_ns
        n, skipped, foreign, nbytes = self.n, self.skipped, self.foreign, self.nbytes
        first_ts, last_ts, ts = self.first_ts, self.last_ts, self.ts
        try:
            for rec in it:
                if not n & (PROGRESS_EVERY - 1):  # every PROGRESS_EVERY records passed, whoever's
                    poll(0)
                    self.fold_lags()
                    if bar is not None:
                        bar.update(n - bar.n)
                    if delivery.fatal:
                        break
                ev = rec.event_ms
                off = offset_ns(n, ev)
                if not mine[n % partitions]:
                    n += 1  # another process's partition (offset_ns was still called, as below)
                    foreign += 1
                    continue
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
                if stop.stopped:
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
                    if not send_slow(value, n % partitions, ts, ev):
                        n += 1  # counted failed; nothing after it is handed
                        nbytes += len(value)
                        self.gave_up = True
                        break
                n += 1
                nbytes += len(value)
                if first_ts is None:
                    first_ts = ts
                last_ts = ts
        finally:
            self.n, self.skipped, self.foreign, self.nbytes = n, skipped, foreign, nbytes
            self.first_ts, self.last_ts, self.ts = first_ts, last_ts, ts
            self.per_partition = [max(0, (n - p + partitions - 1) // partitions - (skip[p] if skip else 0))
                                  if mine[p] else 0 for p in range(partitions)]
            self.fold_lags()
