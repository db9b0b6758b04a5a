"""The stages section's arithmetic: a query's cost per batch and per record from two batch sizes."""

import pytest

from bench.perf.stages import BatchCost, batch_cost, prefix_frame, rows_of


def test_batch_cost_is_the_line_through_the_two_batch_sizes():
    # 1.5 s per batch + 6.4 µs per record: 200,000 records in 2.78 s, 1,000,000 in 7.9 s.
    rates = {1_000_000: 1_000_000 / 7.9, 200_000: 200_000 / 2.78}
    cost = batch_cost(rates)
    assert cost.fixed_ms == pytest.approx(1_500)
    assert cost.per_record_us == pytest.approx(6.4)
    assert cost.ceiling == pytest.approx(156_250)
    assert cost.rate(200_000) == pytest.approx(rates[200_000])


def test_a_noisy_pair_keeps_its_negative_fixed_cost():
    cost = batch_cost({100: 100.0, 200: 250.0})  # 1 s for 100 records, 0.8 s for 200
    assert cost.fixed_ms == pytest.approx(1_200)
    assert cost.per_record_us == pytest.approx(-2_000)
    assert cost.ceiling == float("inf")


@pytest.mark.parametrize("rates", [{100: 10.0}, {100: 10.0, 200: 0.0}, {100: 1.0, 200: 2.0, 300: 3.0}])
def test_batch_cost_needs_two_sizes_with_positive_rates(rates):
    with pytest.raises(ValueError):
        batch_cost(rates)


def test_rows_compare_each_query_with_reading_alone_and_with_the_query_before_it():
    read, split = BatchCost(100, 1.0), BatchCost(300, 3.0)
    rates = {name: {b: cost.rate(b) for b in (1_000, 9_000)} for name, cost in (("read", read), ("split", split))}
    rows = rows_of(rates)
    assert [r.case for r in rows] == ["read: per-record ceiling", "split: per-record ceiling"]
    assert rows[0].rate == pytest.approx(1e6) and rows[0].ratio == pytest.approx(1.0)
    assert rows[1].rate == pytest.approx(1e6 / 3) and rows[1].ratio == pytest.approx(1 / 3)
    assert "300 ms/batch + 3.00 µs/record" in rows[1].note
    assert "adds +200 ms/batch and +2.00 µs/record to read" in rows[1].note


def test_the_topology_gets_issue_37s_two_targets_against_reading_alone():
    """Read: 100 ms per batch + 1 µs per record; topology: 250 ms + 2 µs. Its per-record cost (2x
    the read's) meets the 2.5x target; its per-batch cost (2.5x) misses the 2x one."""
    costs = {"read": BatchCost(100, 1.0), "topology": BatchCost(250, 2.0)}
    rows = rows_of({name: {b: cost.rate(b) for b in (1_000, 9_000)} for name, cost in costs.items()})
    per_record, per_batch = rows[-2:]
    assert per_record.case == "topology: per-record ceiling, target" and per_record.meets_target is True
    assert per_record.target == pytest.approx(1e6 / 2.5) and "2.00x" in per_record.note
    assert per_batch.case == "topology: batches/s with no record, target" and per_batch.meets_target is False
    assert per_batch.rate == pytest.approx(4.0) and per_batch.baseline_rate == pytest.approx(10.0)
    assert "2.50x" in per_batch.note


def test_an_unknown_prefix_is_refused_before_spark_is_asked():
    with pytest.raises(ValueError, match="unknown prefix 'sink'"):
        prefix_frame(None, "sink", "topic", "127.0.0.1:9", 1_000)
