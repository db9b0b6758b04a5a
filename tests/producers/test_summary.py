"""The replay summary (no broker)."""

from __future__ import annotations

import json
from array import array

import numpy as np
import pytest

from bench.latency import exact_percentile, new_histogram
from producers.handover import Handover
from producers.summary import ReplaySummary, lag_percentiles


def _summary(**kw):
    base = dict(dataset="D", fingerprint={"name": "D"}, topic="t", bootstrap_servers="b", partitions=2,
                pacing={"mode": "rate", "describe": "10 records/s"})
    return ReplaySummary(**{**base, **kw})


def test_ok():
    assert _summary(records=3, delivered=3).ok
    assert not _summary(records=3, delivered=2, failed=1).ok
    assert not _summary(records=3, delivered=2, undelivered=1).ok
    assert not _summary(records=3, delivered=3, interrupted=True).ok


def test_lag_percentiles():
    lags = np.arange(1, 1001, dtype=np.int64) * 1000  # 1..1000 ms in us
    histogram = new_histogram()
    for lag in lags.tolist():
        histogram.record_value(lag)
    p = lag_percentiles(histogram)
    for name, q in (("p50_ms", 50.0), ("p99_ms", 99.0), ("p999_ms", 99.9), ("max_ms", 100.0)):
        exact = exact_percentile(lags, q) / 1000.0
        assert exact <= p[name] <= exact * 1.001, (name, p[name], exact)
    assert p["samples"] == 1000
    assert lag_percentiles(new_histogram()) is None


def test_send_lags_fold_into_the_histogram():
    """The paced loop buffers lags and folds them: the buffer empties, every lag is counted once,
    and a lag outside the histogram's range is clamped into it, not lost."""
    handover = Handover.__new__(Handover)
    handover.lag_histogram, handover.lags = new_histogram(), array("q", [5, 5, 7, -3, 10**15])
    handover.fold_lags()
    handover.lags.extend([7, 12])
    handover.fold_lags()
    assert len(handover.lags) == 0 and handover.lag_histogram.get_total_count() == 7
    assert handover.lag_histogram.get_count_at_value(5) == 2 and handover.lag_histogram.get_count_at_value(7) == 2
    assert handover.lag_histogram.get_count_at_value(0) == 1
    assert handover.lag_histogram.get_max_value() >= 24 * 3600 * 10**6


def test_to_dict_and_human():
    s = _summary(records=3, delivered=3, lag={"p50_ms": 0.1, "p99_ms": 0.5, "p999_ms": 0.6, "max_ms": 1.0, "samples": 3},
                 malformed={"count": 2, "first": [{"file": "/x/f.tsv", "line": 4, "reason": "bad"}]},
                 key_distribution={"distinct_keys": 2, "top1_share": 0.6, "top10_share": 1.0, "zipf_exponent": 0.58})
    d = json.loads(s.to_json())
    assert d["ok"] is True and d["malformed"]["first"][0]["line"] == 4
    text = s.human()
    assert "f.tsv:4 (bad)" in text and "p99 0.500 ms" in text and "s = 0.580" in text


def test_a_shard_owns_every_nth_partition_and_refuses_a_bad_index():
    from producers.handover import Shard

    assert Shard().owns(3) == [True, True, True]
    assert Shard(1, 3).owns(7) == [False, True, False, False, True, False, False]
    for index, of in ((3, 3), (-1, 2), (0, 0)):
        with pytest.raises(ValueError, match="expected 0 <= index < of"):
            Shard(index, of)


def test_the_processes_summaries_merge_into_one():
    """Counts and partitions add up, the lags merge from their histograms (not from percentiles),
    the longest duration decides the rate, and one interrupted process interrupts the replay."""
    from bench.latency import encode
    from producers.sharded import merged

    def lags(values_us):
        histogram = new_histogram()
        for value in values_us:
            histogram.record_value(value)
        return encode(histogram)

    a = _summary(records=3, delivered=3, bytes=30, duration_s=1.0, per_partition=[3, 0], first_timestamp_ms=100,
                 last_timestamp_ms=300, lag_histogram=lags([1000, 2000, 3000]), errors=["e1"])
    b = _summary(records=2, delivered=1, failed=1, bytes=20, duration_s=2.0, per_partition=[0, 2],
                 first_timestamp_ms=150, last_timestamp_ms=250, lag_histogram=lags([9000, 10000]), errors=["e2"])
    out = merged([a, b])
    assert (out.records, out.delivered, out.failed, out.bytes, out.processes) == (5, 4, 1, 50, 2)
    assert out.per_partition == [3, 2] and (out.first_timestamp_ms, out.last_timestamp_ms) == (100, 300)
    assert out.duration_s == 2.0 and out.records_per_s == 2.5 and out.errors == ["e1", "e2"] and not out.ok
    assert out.lag["samples"] == 5 and 9.99 <= out.lag["max_ms"] <= 10.01 and 2.99 <= out.lag["p50_ms"] <= 3.01
    assert "lag_histogram" not in out.to_dict() and not merged([a, _summary(interrupted=True)]).ok
    with pytest.raises(ValueError, match="no producer process"):
        merged([])


def test_more_producer_processes_than_partitions_are_refused_before_the_broker():
    from datasets import get_dataset
    from producers import replay

    with pytest.raises(ValueError, match=r"producer processes must be 1\.\.2"):
        replay(get_dataset("GOLDEN_SKEW", length=10), "t", "127.0.0.1:1", partitions=2, processes=3)
