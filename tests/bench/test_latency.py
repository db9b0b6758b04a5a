"""Processing-latency histograms (`bench.latency`): quantisation, merge, percentiles against exact ones."""

from __future__ import annotations

import numpy as np
import pytest

from bench import latency


def test_vectorised_quantisation_matches_hdrhistogram():
    h = latency.new_histogram()
    rng = np.random.default_rng(1)
    values = np.concatenate([np.arange(1, 5000), rng.integers(1, latency.HIGHEST_US, 5000),
                             [2047, 2048, 2049, 4095, 4096, 4097, latency.HIGHEST_US]])
    expected = [h.get_lowest_equivalent_value(int(v)) for v in values]
    assert latency.lowest_equivalent_us(values).tolist() == expected


def test_recording_quantised_values_gives_the_histogram_of_the_values():
    rng = np.random.default_rng(2)
    values = rng.lognormal(10, 1.5, 20_000).astype(np.int64) + 1
    one_by_one = latency.new_histogram()
    for v in values.tolist():
        one_by_one.record_value(v)
    fast = latency.new_histogram()
    assert latency.record(fast, values) == values.size
    assert fast.encode() == one_by_one.encode()


@pytest.mark.parametrize("seed", [3, 4])
def test_merged_worker_batch_histograms_give_the_exact_percentiles_within_hdr_precision(seed):
    """Per (worker, batch) histograms, encoded as a worker task sends them, merged as the observer
    does: each percentile is the exact one rounded up to its HDR bucket (<= 0.1 % above)."""
    rng = np.random.default_rng(seed)
    chunks = [rng.gamma(2.0, 400.0 * (1 + w), rng.integers(1, 3000)).astype(np.int64) + 1
              for w in range(10) for _batch in range(5)]
    encoded = []
    for chunk in chunks:
        h = latency.new_histogram()
        latency.record(h, chunk)
        encoded.append(latency.encode(h))
    merged = latency.merge(encoded)
    every = np.concatenate(chunks)
    figures = latency.figures_ms(merged)
    assert figures["latency_tuples"] == every.size
    for name, q in latency.PERCENTILES:
        exact_us = latency.exact_percentile(every, q)
        got_us = figures[f"latency_{name}_ms"] * 1000
        assert exact_us <= got_us <= exact_us * 1.001 + 1, (name, exact_us, got_us)
    assert every.max() <= figures["latency_max_ms"] * 1000 <= every.max() * 1.001 + 1


def test_out_of_range_values_are_clamped_and_empty_histograms_have_no_percentiles():
    h = latency.new_histogram()
    assert latency.figures_ms(h)["latency_p99_ms"] is None
    latency.record(h, np.array([-5, 0, latency.HIGHEST_US * 2]))
    assert h.get_total_count() == 3 and h.get_min_value() == 1


def test_processed_times_spread_the_call_over_its_tuples():
    done = latency.processed_at_us(1_000_000_000, 1_004_000_000, 4)  # 4 ms for 4 tuples
    assert done.tolist() == [1_001_000, 1_002_000, 1_003_000, 1_004_000]
