"""Medians, IQR and the significance rule on constructed data whose answer is known."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from bench.compare.stats import (
    compare_samples,
    group_labels,
    min_two_sided_p,
    pairwise_tests,
    repetition_summary,
    spread,
)
from bench.compare.table import to_markdown


def test_spread_median_and_quartiles():
    s = spread([1, 2, 3, 4, 5])
    assert (s.n, s.median, s.q1, s.q3, s.iqr) == (5, 3.0, 2.0, 4.0, 2.0)
    s = spread([7.0, float("nan"), float("inf")])  # non-finite values are not repetitions
    assert (s.n, s.median, s.iqr) == (1, 7.0, 0.0)
    assert spread([]).n == 0 and math.isnan(spread([]).median)


def test_min_two_sided_p():
    assert min_two_sided_p(3, 3) == pytest.approx(0.1)
    assert min_two_sided_p(3, 4) == pytest.approx(2 / 35)
    assert min_two_sided_p(4, 4) == pytest.approx(2 / 70)
    assert min_two_sided_p(3, 5) == pytest.approx(2 / 56)
    assert min_two_sided_p(1, 1) == 1.0


def test_clearly_different_samples_are_significant():
    t = compare_samples([10.1, 10.3, 9.9, 10.0, 10.2], [20.4, 19.8, 20.1, 20.0, 19.9])
    assert t.significant is True and t.verdict == "significant"
    assert t.p_value == pytest.approx(2 / 252)  # exact: the most extreme of C(10, 5) arrangements, both sides
    assert t.u in (0.0, 25.0)


def test_identical_distributions_are_not_significant():
    rng = np.random.default_rng(7)
    a, b = rng.normal(10, 1, size=8), rng.normal(10, 1, size=8)
    t = compare_samples(a, b)
    assert t.significant is False and t.p_value >= 0.05
    assert "within noise" in t.verdict
    same = compare_samples([5.0] * 5, [5.0] * 5)
    assert same.significant is False and same.p_value == pytest.approx(1.0)


def test_three_repetitions_cannot_decide_even_when_far_apart():
    t = compare_samples([1.0, 1.1, 1.2], [9.0, 9.1, 9.2])
    assert t.significant is None and t.p_value == pytest.approx(0.1)
    assert t.verdict.startswith("undecidable")
    # with ties scipy falls back to the normal approximation, whose p can dip under the exact floor
    tied = compare_samples([0.0, 0.0, 0.0], [1.0, 1.0, 1.0])
    assert tied.significant is None


def test_fewer_than_three_is_not_tested():
    t = compare_samples([1.0, 2.0], [5.0, 6.0, 7.0])
    assert t.significant is None and t.p_value is None and t.verdict.startswith("not tested")


def _runs(values: dict[str, list[float]], other: dict[str, list[float]] | None = None) -> pd.DataFrame:
    rows = []
    for grouping, xs in values.items():
        for i, x in enumerate(xs):
            rows.append({"run_id": f"{grouping.lower()}-{i}", "mode": "simulate", "dataset": "D", "workers": 10,
                         "experiment_id": "e", "grouping": grouping, "std_dev": x,
                         "dist_cost": (other or {}).get(grouping, [1.0] * len(xs))[i]})
    return pd.DataFrame(rows)


def test_table_marks_significant_and_noise():
    runs = _runs({"KEY": [24.1, 24.0, 23.9, 24.2, 24.05], "DYNAMIC_KEY": [12.0, 11.9, 12.1, 11.95, 12.05],
                  "PARTIAL_KEY": [24.0, 24.15, 23.95, 24.1, 24.02]},
                 {"KEY": [1.0] * 5, "DYNAMIC_KEY": [2.0, 1.9, 2.1, 2.0, 1.95], "PARTIAL_KEY": [1.6] * 5})
    summary = repetition_summary(runs, ["std_dev", "dist_cost"])
    key = summary.set_index("label").loc["KEY"]
    assert key["n"] == 5 and key["std_dev_median"] == pytest.approx(24.05)
    assert key["std_dev_q1"] == pytest.approx(24.0) and key["std_dev_q3"] == pytest.approx(24.1)
    tests = pairwise_tests(runs, ["std_dev", "dist_cost"])
    assert len(tests) == 6  # 3 pairs x 2 figures
    by = tests.set_index(["metric", "a", "b"])
    assert by.loc[("std_dev", "DYNAMIC_KEY", "KEY"), "significant"] == True  # noqa: E712
    assert by.loc[("std_dev", "KEY", "PARTIAL_KEY"), "significant"] == False  # noqa: E712
    md = to_markdown(summary, tests, ["std_dev", "dist_cost"])
    assert "| KEY | 5 | 24.05 [24–24.1] |" in md
    assert "| STD_DEV (pp) | KEY | PARTIAL_KEY | 5 vs 5 |" in md
    assert "not significant: within noise" in md
    assert ("Not significant, the difference is within the noise of these repetitions: "
            "KEY vs PARTIAL_KEY on STD_DEV (pp)") in md
    assert "smallest p-value the test can give is 2/C(nA+nB, nA): 0.100 for 3 vs 3" in md


def test_table_with_single_runs_says_too_few():
    runs = _runs({"KEY": [24.0], "SHUFFLE": [0.1]})
    summary = repetition_summary(runs, ["std_dev"])
    tests = pairwise_tests(runs, ["std_dev"])
    md = to_markdown(summary, tests, ["std_dev"])
    assert "| KEY | 1 | 24 |" in md  # a single run: its value, no interval
    assert "not tested: n < 3" in md and "Too few repetitions to test: KEY, SHUFFLE" in md


def test_labels_tell_groups_apart_only_when_needed():
    runs = _runs({"KEY": [1.0, 2.0], "SHUFFLE": [0.0]})
    assert group_labels(runs).tolist() == ["KEY", "KEY", "SHUFFLE"]
    runs.loc[1, "workers"] = 20
    assert group_labels(runs).tolist() == ["KEY W=10", "KEY W=20", "SHUFFLE"]
    # and groupings on different worker counts are never tested against each other
    assert pairwise_tests(runs, ["std_dev"]).query("a == 'KEY W=20' or b == 'KEY W=20'").empty


def test_runs_outside_any_experiment_are_not_repetitions():
    runs = _runs({"KEY": [24.0, 25.0, 26.0], "SHUFFLE": [0.1]})
    runs["experiment_id"] = None
    summary = repetition_summary(runs, ["std_dev"])
    assert sorted(summary["label"]) == ["KEY (run key-0)", "KEY (run key-1)", "KEY (run key-2)", "SHUFFLE"]
    assert (summary["n"] == 1).all()
