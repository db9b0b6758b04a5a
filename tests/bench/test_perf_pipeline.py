"""The pipeline section's steady-state rate: the figure its ratios rest on."""

import pytest

from bench.perf.pipeline import steady_rate


def test_steady_rate_skips_the_first_batch_and_empty_ones():
    batches = [
        {"batch_id": 2, "input_rows": 1_000, "end_ms": 13_000},
        {"batch_id": 0, "input_rows": 5_000, "end_ms": 10_000},  # start-up batch: not counted
        {"batch_id": 1, "input_rows": 3_000, "end_ms": 11_000},
        {"batch_id": 3, "input_rows": 0, "end_ms": 20_000},  # no-data batch (closing windows)
    ]
    rate, counted = steady_rate(batches)
    assert counted == 2
    assert rate == pytest.approx((3_000 + 1_000) / 3.0)


def test_steady_rate_needs_two_batches_with_data():
    with pytest.raises(ValueError, match="two micro-batches"):
        steady_rate([{"batch_id": 0, "input_rows": 10, "end_ms": 1}, {"batch_id": 1, "input_rows": 0, "end_ms": 2}])
