"""The replay summary written into the run record."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any

from hdrh.histogram import HdrHistogram


def lag_percentiles(lags_us: HdrHistogram) -> dict[str, float] | None:
    """p50 / p99 / p99.9 / max of the send lag (actual - intended hand-over time) in ms, and the
    number of samples, from a histogram of whole us (`bench.latency`: each figure the highest value
    equivalent to the exact one, at most 0.1 % above it); None for an empty histogram."""
    samples = int(lags_us.get_total_count())
    if not samples:
        return None
    p50, p99, p999 = (lags_us.get_value_at_percentile(q) / 1000.0 for q in (50.0, 99.0, 99.9))
    return {"p50_ms": p50, "p99_ms": p99, "p999_ms": p999, "max_ms": lags_us.get_max_value() / 1000.0,
            "samples": samples}


@dataclass
class ReplaySummary:
    """What a replay did. ``ok`` is True only when every handed record was delivered and the run
    was not interrupted."""

    dataset: str
    fingerprint: dict[str, Any]
    topic: str
    bootstrap_servers: str
    partitions: int
    pacing: dict[str, Any]
    records: int = 0
    """Records handed to the Kafka client (record i to partition i mod P)."""
    already_present: int = 0
    """A resumed replay: records found in the topic from an earlier attempt, not sent again."""
    resumed_from: list[int] | None = None
    """A resumed replay: per partition, the records already there (None: a replay from scratch)."""
    delivered: int = 0
    failed: int = 0
    """Records whose delivery report was an error, or that the client refused."""
    undelivered: int = 0
    """Records still unacknowledged when the final flush gave up (broker gone)."""
    bytes: int = 0
    """Sum of the record values handed to the client."""
    duration_s: float = 0.0
    """From the schedule start to the last hand-over (the offered load's duration)."""
    flush_s: float = 0.0
    records_per_s: float = 0.0
    lag: dict[str, float] | None = None
    """Send lag percentiles (None for an unlimited run, where intended = actual by definition)."""
    processes: int = 1
    """Producer processes that shared the replay, each sending its own partitions (``producers.sharded``)."""
    interrupted: bool = False
    started_utc: str = ""
    start_ms: int = 0
    """Epoch ms of the schedule start (intended send time of record 0)."""
    first_timestamp_ms: int | None = None
    last_timestamp_ms: int | None = None
    per_partition: list[int] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    """The first few delivery errors."""
    malformed: dict[str, Any] = field(default_factory=lambda: {"count": 0, "first": []})
    """Input lines skipped as malformed (user files), with the first few file/line numbers."""
    skipped: dict[str, int] = field(default_factory=dict)
    """Input lines that are not records by design (headers, tweet-stream notices), by reason."""
    key_distribution: dict[str, Any] | None = None
    """Realised key distribution of the handed records (see ``datasets.stats``)."""
    producer_config: dict[str, Any] = field(default_factory=dict)
    headers: str = "event_ms: the dataset's event time, epoch ms as ASCII decimal (absent if none)"
    timestamps: str = (
        "Kafka CreateTime = the intended send time (epoch ms): start_ms + the schedule's offset; "
        "unlimited runs: stamped by the client at hand-over"
    )

    @property
    def ok(self) -> bool:
        return not self.interrupted and self.failed == 0 and self.undelivered == 0 and self.delivered == self.records

    lag_histogram: str | None = field(default=None, repr=False)
    """The send lags as an encoded HDR histogram of whole µs (``bench.latency.encode``), for merging
    the processes' lags; not in ``to_dict``."""

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d.pop("lag_histogram")
        d["ok"] = self.ok
        return d

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2, default=str)

    def human(self) -> str:
        lag = (
            "lag n/a (unlimited)"
            if self.lag is None
            else f"lag p50 {self.lag['p50_ms']:.3f} ms, p99 {self.lag['p99_ms']:.3f} ms, max {self.lag['max_ms']:.1f} ms"
        )
        lines = [
            f"{self.dataset} -> {self.topic} ({self.partitions} partitions) at {self.pacing.get('describe')}:",
            f"  {self.records:,} records handed, {self.delivered:,} delivered, {self.failed:,} failed, "
            f"{self.undelivered:,} undelivered; {self.bytes:,} bytes in {self.duration_s:.2f} s "
            f"({self.records_per_s:,.0f} records/s); {lag}",
        ]
        if self.resumed_from is not None:
            lines.append(f"  resumed: {self.already_present:,} records were already in the topic "
                         f"(per partition {self.resumed_from}); only the missing ones were sent")
        if self.malformed.get("count"):
            first = ", ".join(f"{e['file'].rsplit('/', 1)[-1]}:{e['line']} ({e['reason']})" for e in self.malformed["first"][:5])
            lines.append(f"  malformed input lines skipped: {self.malformed['count']:,} (first: {first})")
        if self.skipped:
            lines.append(f"  lines skipped by design: {self.skipped}")
        kd = self.key_distribution
        if kd:
            s = kd.get("zipf_exponent")
            lines.append(
                f"  keys: {kd['distinct_keys']:,} distinct, top-1 {100 * (kd['top1_share'] or 0):.2f}%, "
                f"top-10 {100 * (kd['top10_share'] or 0):.2f}%, fitted Zipf s = {'-' if s is None else f'{s:.3f}'}"
            )
        if self.errors:
            lines.append(f"  first delivery errors: {self.errors[:3]}")
        if self.interrupted:
            lines.append("  INTERRUPTED")
        return "\n".join(lines)
