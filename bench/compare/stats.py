"""Medians over repetitions, and when a difference between two groupings is noise.

A run's figures vary with the data (seed) and, for the Spark run, with the machine; one run per
grouping says nothing about noise. So a comparison reports, per repetition group (the runs that
share experiment_id, grouping, dataset and workers), the median and the interquartile range, and
calls a difference between two groups significant only when a Mann-Whitney U test says so:

- fewer than `MIN_N` (3) runs in either group: no test ("too few repetitions to test");
- otherwise the two-sided test (scipy.stats.mannwhitneyu, exact when there are no ties and the
  samples are small). Its smallest possible p-value is `2 / C(nA + nB, nA)`: 0.100 for 3 vs 3,
  0.057 for 3 vs 4, 0.029 for 4 vs 4. When that floor is >= alpha no difference can be
  significant, so the verdict is "undecidable" rather than a "not significant" that would pass
  for evidence of equality (this needs >= 4 repetitions per group, or 3 vs 5);
- p < alpha (0.05): "significant"; else "not significant: within noise".
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from itertools import combinations

import numpy as np
import numpy.typing as npt
import pandas as pd

ALPHA = 0.05
MIN_N = 3


@dataclass(frozen=True)
class Spread:
    """Median and quartiles of one figure over the repetitions of one group (NaNs dropped)."""

    n: int
    median: float
    q1: float
    q3: float

    @property
    def iqr(self) -> float:
        return self.q3 - self.q1


def spread(values: npt.ArrayLike) -> Spread:
    """Median, 25th and 75th percentile (linear interpolation, numpy's default) of the finite values."""
    x = np.asarray(pd.to_numeric(pd.Series(values, dtype=object), errors="coerce"), dtype=float)
    x = x[np.isfinite(x)]
    if x.size == 0:
        return Spread(0, math.nan, math.nan, math.nan)
    q1, median, q3 = np.percentile(x, [25, 50, 75])
    return Spread(int(x.size), float(median), float(q1), float(q3))


def min_two_sided_p(n_a: int, n_b: int) -> float:
    """Smallest p-value an exact two-sided Mann-Whitney U test can give for sample sizes n_a, n_b.

    Formula: the most extreme of the C(n_a + n_b, n_a) equally likely rank arrangements, counted on
    both sides: `2 / C(n_a + n_b, n_a)`, at most 1. 3 vs 3 -> 0.1; 4 vs 4 -> 2/70 = 0.0286.
    """
    if n_a < 1 or n_b < 1:
        return 1.0
    return min(1.0, 2.0 / math.comb(n_a + n_b, n_a))


@dataclass(frozen=True)
class SampleComparison:
    """The outcome of comparing two samples: U statistic, p-value (None when not tested), verdict."""

    n_a: int
    n_b: int
    u: float | None
    p_value: float | None
    significant: bool | None  # None: not tested, or too few runs for the test to ever reach alpha
    verdict: str


def compare_samples(a: npt.ArrayLike, b: npt.ArrayLike, alpha: float = ALPHA) -> SampleComparison:
    """Two-sided Mann-Whitney U test of samples a and b with the verdict rule of this module."""
    # deferred: scipy.stats takes about 1 s to import; only a comparison with repetitions tests
    from scipy.stats import mannwhitneyu

    xa = np.asarray(a, dtype=float)
    xb = np.asarray(b, dtype=float)
    xa, xb = xa[np.isfinite(xa)], xb[np.isfinite(xb)]
    n_a, n_b = int(xa.size), int(xb.size)
    if min(n_a, n_b) < MIN_N:
        return SampleComparison(n_a, n_b, None, None, None, f"not tested: n < {MIN_N}")
    result = mannwhitneyu(xa, xb, alternative="two-sided")
    u, p = float(result.statistic), float(result.pvalue)
    floor = min_two_sided_p(n_a, n_b)
    if floor >= alpha:
        # The normal approximation used with ties can print p below this floor; it proves nothing.
        return SampleComparison(n_a, n_b, u, p, None, f"undecidable: smallest possible p is {floor:.3f}")
    if p < alpha:
        return SampleComparison(n_a, n_b, u, p, True, "significant")
    return SampleComparison(n_a, n_b, u, p, False, "not significant: within noise")


# --- frame level -------------------------------------------------------------------------------

GROUP_KEYS = ("mode", "dataset", "workers", "experiment_id", "grouping", "input")
"""`input`: the input conditions (`bench.compare.comparison.input_condition`); runs of one grouping
under different conditions are never repetitions of each other."""
CONTEXT_KEYS = ("mode", "dataset", "workers")


def with_group_keys(runs: pd.DataFrame) -> pd.DataFrame:
    """A copy whose missing experiment_id reads `run <run_id>`: a run outside any experiment is its own group."""
    out = runs.copy()
    missing = out["experiment_id"].isna()
    out["experiment_id"] = out["experiment_id"].astype(object)
    out.loc[missing, "experiment_id"] = "run " + out.loc[missing, "run_id"].astype(str)
    if "input" not in out.columns:
        out["input"] = "unknown"
    return out


def group_labels(runs: pd.DataFrame) -> pd.Series:
    """A short name per run for its repetition group: the grouping, plus what tells groups apart.

    `KEY` alone when each grouping appears once; `KEY W=10`, `KEY [stream]`, `KEY (exp-2)` when
    worker counts, modes or experiments differ between runs of one grouping.
    """
    runs = with_group_keys(runs)
    labels = runs["grouping"].astype(str)
    extra = {"workers": lambda v: f" W={v}", "mode": lambda v: f" [{v}]", "experiment_id": lambda v: f" ({v})",
             "dataset": lambda v: f" {v}"}
    for col, fmt in extra.items():
        varies = runs.groupby("grouping", dropna=False)[col].nunique(dropna=False) > 1
        if varies.any():
            labels = labels + runs.apply(lambda r, c=col, f=fmt: f(r[c]) if varies.get(r["grouping"], False) else "",
                                         axis=1)
    stream = runs["mode"] != "simulate" if "mode" in runs.columns else pd.Series(True, index=runs.index)
    if runs.loc[stream, "input"].nunique(dropna=False) > 1:  # mixed input conditions: every label says its own
        labels = labels + " [" + runs["input"].astype(str) + "]"
    return labels


def present_metrics(runs: pd.DataFrame, candidates: tuple[str, ...]) -> list[str]:
    """The candidate figures that at least one run carries (a stream-only figure is skipped for simulate runs)."""
    out = []
    for col in candidates:
        if col in runs.columns and np.isfinite(pd.to_numeric(runs[col], errors="coerce").astype(float)).any():
            out.append(col)
    return out


def repetition_summary(runs: pd.DataFrame, metrics: list[str]) -> pd.DataFrame:
    """One row per repetition group: GROUP_KEYS, label, n, run_ids, and `<m>_median/_q1/_q3/_iqr` per metric."""
    frame = with_group_keys(runs)
    frame["label"] = group_labels(frame)
    rows = []
    for keys, part in frame.groupby(list(GROUP_KEYS), dropna=False, sort=True):
        row = dict(zip(GROUP_KEYS, keys))
        row["label"] = part["label"].iloc[0]
        row["n"] = len(part)
        row["run_ids"] = " ".join(part["run_id"])
        for m in metrics:
            s = spread(part[m])
            row.update({f"{m}_median": s.median, f"{m}_q1": s.q1, f"{m}_q3": s.q3, f"{m}_iqr": s.iqr})
        rows.append(row)
    return pd.DataFrame(rows)


def pairwise_tests(runs: pd.DataFrame, metrics: list[str], alpha: float = ALPHA) -> pd.DataFrame:
    """Mann-Whitney U for every pair of repetition groups sharing mode, dataset and workers, per metric.

    Returns: one row per (context, metric, A, B): n_a, n_b, median_a, median_b, u, p_value,
        significant (True/False/None = not tested), verdict.
    """
    frame = with_group_keys(runs)
    frame["label"] = group_labels(frame)
    rows = []
    for ctx, part in frame.groupby(list(CONTEXT_KEYS), dropna=False, sort=True):
        groups = [(label, g) for label, g in part.groupby("label", sort=True)]
        for m in metrics:
            for (la, ga), (lb, gb) in combinations(groups, 2):
                a = pd.to_numeric(ga[m], errors="coerce").to_numpy(dtype=float)
                b = pd.to_numeric(gb[m], errors="coerce").to_numpy(dtype=float)
                t = compare_samples(a, b, alpha)
                rows.append({**dict(zip(CONTEXT_KEYS, ctx)), "metric": m, "a": la, "b": lb,
                             "n_a": t.n_a, "n_b": t.n_b, "median_a": spread(a).median, "median_b": spread(b).median,
                             "u": t.u, "p_value": t.p_value, "significant": t.significant, "verdict": t.verdict})
    columns = [*CONTEXT_KEYS, "metric", "a", "b", "n_a", "n_b", "median_a", "median_b", "u", "p_value",
               "significant", "verdict"]
    return pd.DataFrame(rows, columns=columns)
