"""The replay summary (no broker)."""

from __future__ import annotations

import json

import numpy as np

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
    p = lag_percentiles(lags)
    assert abs(p["p50_ms"] - 500.5) < 1e-9 and abs(p["p99_ms"] - 990.01) < 1e-6 and p["max_ms"] == 1000 and p["samples"] == 1000
    assert lag_percentiles(np.array([], dtype=np.int64)) is None


def test_to_dict_and_human():
    s = _summary(records=3, delivered=3, lag={"p50_ms": 0.1, "p99_ms": 0.5, "p999_ms": 0.6, "max_ms": 1.0, "samples": 3},
                 malformed={"count": 2, "first": [{"file": "/x/f.tsv", "line": 4, "reason": "bad"}]},
                 key_distribution={"distinct_keys": 2, "top1_share": 0.6, "top10_share": 1.0, "zipf_exponent": 0.58})
    d = json.loads(s.to_json())
    assert d["ok"] is True and d["malformed"]["first"][0]["line"] == 4
    text = s.human()
    assert "f.tsv:4 (bad)" in text and "p99 0.500 ms" in text and "s = 0.580" in text
