"""The replay summary (no broker)."""

from __future__ import annotations

import json
from array import array

import numpy as np

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
