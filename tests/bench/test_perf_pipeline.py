"""The pipeline section's steady-state rate: the figure its ratios rest on."""

import pytest

from bench.perf.pipeline import steady_rate


def test_steady_rate_counts_only_batches_with_input_records_after_the_first():
    batches = [
        {"batch_id": 2, "records": 1_000, "end_ms": 13_000},
        {"batch_id": 0, "records": 5_000, "end_ms": 10_000},  # start-up batch: not counted
        {"batch_id": 1, "records": 3_000, "end_ms": 11_000},
        {"batch_id": 3, "records": 0, "end_ms": 20_000},  # only the end-of-input control record
        {"batch_id": 4, "records": 0, "end_ms": 22_000},  # no-data batch (closing windows)
    ]
    rate, counted = steady_rate(batches)
    assert counted == 2
    assert rate == pytest.approx((3_000 + 1_000) / 3.0)


def test_steady_rate_needs_two_batches_with_data():
    with pytest.raises(ValueError, match="two micro-batches"):
        steady_rate([{"batch_id": 0, "records": 10, "end_ms": 1}, {"batch_id": 1, "records": 0, "end_ms": 2}])
