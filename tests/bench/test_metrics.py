"""The observer's metric formulas against the reference vectors (spec §10, §15.1)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from bench.metrics import (
    dist_cost,
    dist_cost_of_routing,
    max_mean_imbalance,
    max_minus_mean_imbalance,
    std_dev_percent,
    throughput_ratio,
)


@pytest.mark.parametrize(
    ("loads", "workers", "expected"),
    [
        ([100] + [0] * 9, 10, 30.0),
        ([50, 50] + [0] * 8, 10, 20.0),
        ([80, 20], 5, 30.983866769659336),  # three workers never seen count as 0 %
        ([10, 20, 30, 40], 4, 11.180339887498949),
        ([12000] * 5, 5, 0.0),
    ],
)
def test_std_dev_reference_vectors(loads: list[int], workers: int, expected: float) -> None:
    assert std_dev_percent(np.array(loads), workers) == pytest.approx(expected, abs=1e-9)


@pytest.mark.parametrize(
    ("counts", "expected"),
    [
        ([50437, 1812, 2725, 2758, 2268], 32.0360),
        ([25113, 25114, 3257, 3258, 3258], 17.8452),
        ([14269, 13801, 13800, 13799, 4331], 6.3980),
        ([1208, 840, 1171, 1705, 1298, 49229, 972, 1554, 1053, 970], 24.0199),
        ([1405, 1386, 1398, 1408, 1401, 24404, 24403, 1405, 1401, 1389], 15.3363),
        ([8993, 1339, 1237, 1632, 1383, 9404, 9012, 9000, 9000, 9000], 6.2677),
    ],
)
def test_std_dev_of_the_published_scenarios(counts: list[int], expected: float) -> None:
    assert round(std_dev_percent(counts), 4) == pytest.approx(expected, abs=1e-12)


def test_std_dev_edge_cases() -> None:
    assert std_dev_percent([], 0) == -1.0
    assert math.isnan(std_dev_percent([0, 0, 0]))
    assert std_dev_percent([7], 1) == 0.0
    # One worker takes everything: 100 * sqrt(W - 1) / W.
    assert std_dev_percent([5], 20) == pytest.approx(100 * math.sqrt(19) / 20)
    with pytest.raises(ValueError):
        std_dev_percent([1, 2, 3], 2)
    with pytest.raises(ValueError):
        std_dev_percent([1, -2])
    with pytest.raises(ValueError):
        std_dev_percent([[1, 2]])


@pytest.mark.parametrize(
    ("pairs", "keys", "expected"),
    [(1005, 201, 5.0), (201, 201, 1.0), (272, 201, 1.3532), (369, 201, 1.8358), (2006, 201, 9.9801),
     (329, 201, 1.6368), (411, 201, 2.0448), (0, 0, 0.0)],
)  # fmt: skip
def test_dist_cost_published_ratios(pairs: int, keys: int, expected: float) -> None:
    assert round(dist_cost(pairs, keys), 4) == expected


def test_dist_cost_errors() -> None:
    with pytest.raises(ValueError):
        dist_cost(-1, 2)
    with pytest.raises(ValueError):
        dist_cost(1, 2)


def test_dist_cost_of_routing() -> None:
    keys = ["a", "a", "b", "a", "c", "b"]
    workers = [0, 1, 1, 1, 2, 1]
    assert dist_cost_of_routing(keys, workers) == (4 / 3, 4, 3)
    assert dist_cost_of_routing(np.array([7, 7, 9]), np.array([3, 4, 3])) == (1.5, 3, 2)
    assert dist_cost_of_routing([], []) == (0.0, 0, 0)
    with pytest.raises(ValueError):
        dist_cost_of_routing(["a"], [0, 1])


@pytest.mark.parametrize(
    ("total", "elapsed_ms", "expected"),
    [(5000, 2500, 2500.0), (5000, 2999, 2500.0), (5000, 3000, 5000 / 3), (1, 999, math.inf),
     (10, 0, math.inf), (120_000, 60_000, 2000.0)],
)  # fmt: skip
def test_throughput_ratio_divides_by_whole_seconds(total: int, elapsed_ms: int, expected: float) -> None:
    assert throughput_ratio(total, elapsed_ms) == expected


def test_throughput_ratio_edge_cases() -> None:
    assert math.isnan(throughput_ratio(0, 10))
    assert throughput_ratio(0, 5000) == 0.0
    with pytest.raises(ValueError):
        throughput_ratio(1, -1)


def test_imbalance_figures() -> None:
    assert max_mean_imbalance([10, 10, 10]) == 1.0
    assert max_mean_imbalance([30], 3) == 3.0
    assert max_mean_imbalance([3, 1], 4) == pytest.approx(3 / 1.0)
    assert math.isnan(max_mean_imbalance([0, 0]))
    assert max_minus_mean_imbalance([30, 0, 0]) == 20.0
    assert max_minus_mean_imbalance([5, 5]) == 0.0
    with pytest.raises(ValueError):
        max_mean_imbalance([], 0)
    with pytest.raises(ValueError):
        max_minus_mean_imbalance([1, 2], 1)
