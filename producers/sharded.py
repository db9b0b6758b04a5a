"""A replay shared by several producer processes: what each one sends and the summary of them all.

One Python process hands about 120,000 records/s to the Kafka client on this machine kind, so a
capacity ladder above that rate measures the producer, not the system under test. With N processes
(``replay(..., processes=N)``), process j sends the records of the partitions p with ``p mod N ==
j`` (``producers.handover.Shard``). Each reads the whole dataset in order and passes over the other
processes' records, keeping every record's partition (record i to partition i mod P) and intended
send time from one common schedule start: the topic gets the same records, at the same offsets,
with the same timestamps as from one process.
"""

from __future__ import annotations

from dataclasses import replace

from bench.latency import encode, merge

from .summary import ReplaySummary, lag_percentiles

SPAWN_LEAD_MS = 3000
"""A sharded replay's schedule starts this long after it is asked for (when no start is given): a
spawned Python process takes about a second to import the Kafka client and the datasets."""


def merged(parts: list[ReplaySummary]) -> ReplaySummary:
    """One summary of the processes' summaries (``parts``, one per process, in process order):
    counts summed, per partition summed (each process counts only its own), the duration and
    flush the longest, the lags merged from their histograms, interrupted if any was.

    Raises: ValueError: no part.
    """
    if not parts:
        raise ValueError("no producer process reported")
    first = parts[0]
    out = replace(first, processes=len(parts), errors=[e for p in parts for e in p.errors][:10])
    for name in ("records", "already_present", "delivered", "failed", "undelivered", "bytes"):
        setattr(out, name, sum(getattr(p, name) for p in parts))
    out.duration_s = max(p.duration_s for p in parts)
    out.flush_s = max(p.flush_s for p in parts)
    out.records_per_s = out.records / out.duration_s if out.duration_s > 0 else 0.0
    out.interrupted = any(p.interrupted for p in parts)
    out.per_partition = [sum(counts) for counts in zip(*(p.per_partition for p in parts))]
    firsts = [p.first_timestamp_ms for p in parts if p.first_timestamp_ms is not None]
    lasts = [p.last_timestamp_ms for p in parts if p.last_timestamp_ms is not None]
    out.first_timestamp_ms, out.last_timestamp_ms = (min(firsts) if firsts else None), (max(lasts) if lasts else None)
    histograms = [p.lag_histogram for p in parts if p.lag_histogram]
    if histograms:
        lags = merge(histograms)
        out.lag, out.lag_histogram = lag_percentiles(lags), encode(lags)
    return out
