"""COUNTRY_SKEW_R<r>, COUNTRY_HALF_SKEW_R80 and GOLDEN_SKEW against the reference's laws."""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from datasets import get_dataset
from datasets.country import COUNTRY_NAMES_MD5, country_names

GOLDEN = Path(__file__).resolve().parents[1] / "groupings" / "golden"


def test_names_are_the_reference_list():
    names = country_names()
    assert len(names) == 204 and names[189] == "Turkey" and len(set(names)) == 204
    packaged = Path(__file__).resolve().parents[2] / "datasets" / "data" / "country_names.txt"
    assert hashlib.md5(packaged.read_bytes()).hexdigest() == COUNTRY_NAMES_MD5  # the reference's list


def test_record_format_and_length():
    ds = get_dataset("COUNTRY_SKEW_R100", length=1000)
    recs = list(ds.records())
    assert len(recs) == 1000
    assert {r.value for r in recs} == {b'{"country":"Turkey"}'}
    assert all(r.event_ms is None for r in recs)
    assert ds.extract('{"country":"Turkey"}') == [("Turkey", 1)]
    assert get_dataset("COUNTRY_SKEW_R80").documented_records == 10_000_000


def test_deterministic_and_prefix_stable():
    a = [r.value for r in get_dataset("COUNTRY_SKEW_R50", length=200_000, seed=7).records()]
    b = [r.value for r in get_dataset("COUNTRY_SKEW_R50", length=200_000, seed=7).records(70_001)]
    c = [r.value for r in get_dataset("COUNTRY_SKEW_R50", length=200_000, seed=8).records(70_001)]
    assert a[:70_001] == b
    assert b != c


def test_tuples_and_key_stats_agree_with_records():
    ds = get_dataset("COUNTRY_SKEW_R30", length=5000, seed=1)
    from_records = [ds.extract(r.value.decode())[0][0] for r in ds.records()]
    assert [k for k, _, _ in ds.tuples()] == from_records
    st = ds.key_stats()
    assert st.records == st.tuples == 5000
    assert st.counts == __import__("collections").Counter(from_records)


@pytest.mark.parametrize("r", [0, 20, 80, 100])
def test_skew_law_chi_square(r):
    """P(Turkey) = r/100 + (1 - r/100)/204, every other name (1 - r/100)/204 (reference §11)."""
    n = 400_000
    ds = get_dataset(f"COUNTRY_SKEW_R{r}", length=n, seed=11)
    counts = ds.key_counts_array()
    names = country_names()
    p = np.full(204, (1 - r / 100) / 204)
    p[names.index("Turkey")] += r / 100
    assert counts.sum() == n
    if r == 100:
        assert counts[names.index("Turkey")] == n
        return
    chi = stats.chisquare(counts, p * n)
    assert chi.pvalue > 1e-4, chi


def test_half_skew_halves():
    n = 200_000
    ds = get_dataset("COUNTRY_HALF_SKEW_R80", length=n, seed=3)
    keys = np.concatenate(list(ds.key_index_chunks()))
    hot = country_names().index("Turkey")
    first, second = (keys[: n // 2] == hot).mean(), (keys[n // 2 :] == hot).mean()
    assert abs(first - (0.8 + 0.2 / 204)) < 0.005
    assert abs(second - 1 / 204) < 0.002
    assert ds.name == "COUNTRY_HALF_SKEW_R80"


def test_golden_stream_first_30_keys_and_clock():
    # reference §15.3
    expected = (
        ["Turkey"] * 4 + ["K190", "Turkey", "K031"] + ["Turkey"] * 2 + ["K084"] + ["Turkey"] * 3 + ["K192"]
        + ["Turkey"] * 5 + ["K041", "K142", "K015"] + ["Turkey"] * 3 + ["K126", "Turkey", "K053"] + ["Turkey"] * 2
    )  # fmt: skip
    ds = get_dataset("GOLDEN_SKEW")
    recs = list(ds.records())
    assert len(recs) == 60_000
    assert [ds.extract(r.value.decode())[0][0] for r in recs[:30]] == expected
    # now_ms = T0 + 1000*(i//R) + (1000*(i%R))//R, T0 = 1,000,000, R = 200
    assert [r.event_ms for r in recs[:3]] == [1_000_000, 1_000_005, 1_000_010]
    assert recs[200].event_ms == 1_001_000 and recs[-1].event_ms == 1_000_000 + 299_000 + 995
    keys = {ds.extract(r.value.decode())[0][0] for r in recs}
    assert len(keys) == 201
    assert recs[0].value == b'{"country":"Turkey"}'


def test_golden_stream_matches_the_reference_trace():
    """The keys of the published KEY trace (reference §15.4) are the stream's keys."""
    import gzip

    trace = GOLDEN / "trace_kg_n5_s1_skew80.txt.gz"
    lines = gzip.decompress(trace.read_bytes()).decode().splitlines()
    keys = [t[0] for t in get_dataset("GOLDEN_SKEW").tuples()]
    assert keys == [line.split()[2] for line in lines]
