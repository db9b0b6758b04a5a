"""Synthetic generators against their intended laws (chi-square and KS tests)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from datasets import get_dataset
from datasets.stats import fit_zipf_exponent
from datasets.synthetic import zipf_probabilities


@pytest.mark.parametrize("s,keys", [(0.0, 50), (0.8, 200), (1.2, 1000), (2.0, 100)])
def test_zipf_chi_square(s, keys):
    n = 300_000
    ds = get_dataset("ZIPF", s=s, keys=keys, length=n, seed=5)
    counts = ds.key_counts_array()
    expected = zipf_probabilities(s, keys) * n
    # pool the tail so every expected cell is >= 5 (chi-square validity)
    head = expected >= 5
    obs = np.append(counts[head], counts[~head].sum())
    exp = np.append(expected[head], expected[~head].sum())
    if exp[-1] == 0:
        obs, exp = obs[:-1], exp[:-1]
    assert stats.chisquare(obs, exp).pvalue > 1e-4


def test_zipf_ks_on_ranks():
    n = 100_000
    ds = get_dataset("ZIPF", s=1.1, keys=500, length=n, seed=9)
    ranks = np.concatenate(list(ds.key_index_chunks()))
    cdf = np.cumsum(zipf_probabilities(1.1, 500))
    # discrete KS: the largest gap between the empirical and intended CDFs
    emp = np.cumsum(np.bincount(ranks, minlength=500)) / n
    assert np.max(np.abs(emp - cdf)) < 1.63 / np.sqrt(n)  # alpha = 0.01


def test_zipf_fit_recovers_the_exponent():
    ds = get_dataset("ZIPF", s=1.0, keys=10_000, length=1_000_000)
    s = fit_zipf_exponent(ds.key_stats().counts)
    assert abs(s - 1.0) < 0.05
    assert fit_zipf_exponent([5, 5, 5, 5]) == 0.0
    assert fit_zipf_exponent([5]) is None


def test_zipf_records_deterministic():
    a = [r.value for r in get_dataset("ZIPF", length=1000, seed=1).records()]
    assert a == [r.value for r in get_dataset("ZIPF", length=1000, seed=1).records()]
    assert a[0].startswith(b'{"key":"K')


def test_hot_key_shift_phases():
    n, rate = 400_000, 10_000
    ds = get_dataset("HOT_KEY_SHIFT", s=1.2, keys=100, length=n, rate=rate, shift_at_s="10,20,30", seed=2)
    idx = np.concatenate(list(ds.key_index_chunks()))
    ev = np.concatenate([ds.event_ms_chunk(c, min(65536, n - c * 65536)) for c in range((n + 65535) // 65536)])
    assert ev[0] == 1_000_000 and ev[rate] == 1_001_000
    phase = ds.phase_of(ev)
    assert list(np.bincount(phase)) == [100_000] * 4
    p = zipf_probabilities(1.2, 100)
    hot = []
    for k in range(4):
        counts = np.bincount(idx[phase == k], minlength=100)
        expected = np.empty(100)
        expected[ds.permutations[k]] = p * 100_000  # rank r -> key perm[r]
        assert stats.chisquare(counts, expected).pvalue > 1e-4
        hot.append(int(np.argmax(counts)))
    assert hot[0] == 0 and len(set(hot)) == 4  # the hot key changes at every shift
    recs = list(ds.records(3))
    assert recs[0].event_ms == 1_000_000 and recs[1].event_ms == 1_000_000  # 10 records per ms


def test_hot_key_shift_default_phases():
    ds = get_dataset("HOT_KEY_SHIFT", length=1000, rate=100)
    assert ds.shift_at_s == (2.5, 5.0, 7.5)
    with pytest.raises(ValueError):
        get_dataset("HOT_KEY_SHIFT", shift_at_s="5,2")
