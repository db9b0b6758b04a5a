"""Processing-latency histograms (`bench.latency`): merge, percentiles against exact ones."""

from __future__ import annotations

import numpy as np
import pytest

from bench import latency
from tests.histograms import histogram


@pytest.mark.parametrize("seed", [3, 4])
def test_merged_worker_batch_histograms_give_the_exact_percentiles_within_hdr_precision(seed):
    """Per (worker, batch) histograms, encoded as a worker task sends them, merged as the observer
    does: each percentile is the exact one rounded up to its HDR bucket (<= 0.1 % above)."""
    rng = np.random.default_rng(seed)
    chunks = [rng.gamma(2.0, 400.0 * (1 + w), rng.integers(1, 3000)).astype(np.int64) + 1
              for w in range(10) for _batch in range(5)]
    encoded = []
    for chunk in chunks:
        encoded.append(latency.encode(histogram(chunk)))
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
    assert latency.figures_ms(latency.new_histogram())["latency_p99_ms"] is None
    h = histogram([-5, 0, latency.HIGHEST_US * 2])
    assert h.get_total_count() == 3 and h.get_min_value() == 1
