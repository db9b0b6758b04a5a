"""Key-distribution summaries: distinct keys, top-k shares, fitted Zipf exponent."""

from __future__ import annotations

import math
from collections import Counter

import numpy as np

from .base import KeyStats

ZIPF_FIT_TOP = 100


def fit_zipf_exponent(counts: Counter | list[int] | np.ndarray, top: int = ZIPF_FIT_TOP) -> float | None:
    """Zipf exponent s fitted by least squares on (log rank, log frequency) of the ``top`` most
    frequent keys: log f_r = c - s log r, r = 1..min(top, distinct keys).

    A rough shape figure, not a goodness-of-fit claim: the head of a real distribution drives it,
    and a flat head (uniform keys) gives s close to 0. None with fewer than 2 keys.
    """
    values = np.asarray(sorted(counts.values() if isinstance(counts, Counter) else counts, reverse=True)[:top], dtype=np.float64)
    values = values[values > 0]
    if len(values) < 2:
        return None
    x = np.log(np.arange(1, len(values) + 1, dtype=np.float64))
    y = np.log(values)
    slope = np.polyfit(x, y, 1)[0]
    s = -float(slope)
    return 0.0 if math.isclose(s, 0.0, abs_tol=1e-12) else s


def _shares(counter: Counter, total: int, top: int) -> list[list]:
    if total <= 0:
        return []
    return [[k, c / total] for k, c in counter.most_common(top)]


def distribution_summary(st: KeyStats, top: int = 10) -> dict:
    """The realised key distribution as the run record stores it (shares of tuples, and of the
    weighted count when the dataset carries counts: reference Q19)."""
    top_t = _shares(st.counts, st.tuples, top)
    out = {
        "records": st.records,
        "tuples": st.tuples,
        "malformed_records": st.malformed,
        "distinct_keys": len(st.counts),
        "top1_share": top_t[0][1] if top_t else None,
        "top10_share": sum(s for _, s in top_t[:10]) if top_t else None,
        "top10": top_t,
        "zipf_exponent": fit_zipf_exponent(st.counts),
        "zipf_fit": f"least squares on log(rank), log(frequency) of the top {ZIPF_FIT_TOP} keys",
    }
    if st.weight != st.tuples or st.weights != st.counts:
        top_w = _shares(st.weights, st.weight, top)
        out["weighted"] = {
            "total": st.weight,
            "top1_share": top_w[0][1] if top_w else None,
            "top10_share": sum(s for _, s in top_w[:10]) if top_w else None,
            "top10": top_w,
            "zipf_exponent": fit_zipf_exponent(st.weights),
        }
    return out
