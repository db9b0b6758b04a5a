"""The comparison table: median [IQR] per repetition group, pairwise significance, as markdown and CSV."""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd

from bench.compare.stats import ALPHA, CONTEXT_KEYS, MIN_N, min_two_sided_p

_NAMES = {
    "std_dev": "STD_DEV (pp)",
    "dist_cost": "DIST_COST",
    "max_mean_imbalance": "max/mean load",
    "throughput_ratio": "throughput (rec/s)",
    "duration_ms": "duration (ms)",
    "processed_rows_per_s": "Spark processed rows/s",
    "driver_rss_mib": "driver RSS (MiB)",
    "spark_rss_mib": "Spark RSS (MiB)",
    "spark_heap_committed_mib": "Spark heap committed (MiB)",
    "spark_heap_used_mib": "Spark heap used (MiB)",
    "spark_heap_live_mib": "Spark heap live after full GC (MiB)",
    "spark_full_gcs": "Spark full collections",
    "checkpoint_mib": "checkpoint (MiB)",
    "state_memory_bytes": "state store memory (bytes)",
    "state_sst_bytes": "state store SST files (bytes)",
    "batch_duration_ms": "batch time (ms)",
    "batch_us_per_row": "batch time per row (µs)",
}


def metric_name(column: str) -> str:
    """Display name with unit: `std_dev` -> `STD_DEV (pp)`, `latency_p99_ms` -> `latency p99 (ms)`."""
    if column in _NAMES:
        return _NAMES[column]
    if column.startswith("latency") and column.endswith("_ms"):
        middle = column.removeprefix("latency").removesuffix("_ms").strip("_").replace("_", " ")
        return f"latency {middle} (ms)".replace("  ", " ")
    return column.replace("_", " ")


def fmt(value) -> str:
    """A figure for a table cell: 4 significant digits, thousands separated, '-' for missing."""
    if value is None or (isinstance(value, float) and not math.isfinite(value)) or pd.isna(value):
        return "-"
    value = float(value)
    if abs(value) >= 1000:
        return f"{value:,.0f}"
    return f"{value:.4g}"


def _cell(row: pd.Series, m: str) -> str:
    median = row.get(f"{m}_median")
    if pd.isna(median):
        return "-"
    if row["n"] < 2:
        return fmt(median)
    return f"{fmt(median)} [{fmt(row[f'{m}_q1'])}–{fmt(row[f'{m}_q3'])}]"


def _md_table(header: list[str], rows: list[list[str]]) -> list[str]:
    out = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    out += ["| " + " | ".join(str(c).replace("|", "\\|") for c in r) + " |" for r in rows]
    return out


def notes(summary: pd.DataFrame, tests: pd.DataFrame, alpha: float = ALPHA) -> list[str]:
    """The notes that make the table readable on its own: what the numbers are, what the test can tell."""
    out = [
        "Cells: median [25th–75th percentile] over repetitions, i.e. runs sharing experiment_id, grouping, "
        "dataset and workers; n = repetitions. A single run shows its value alone.",
        f"Significance: two-sided Mann-Whitney U (scipy.stats.mannwhitneyu) between groupings on the same "
        f"dataset, workers and mode, alpha = {alpha}. With n < {MIN_N} in a group no test is run ('not tested'). "
        f"The smallest p-value the test can give is 2/C(nA+nB, nA): {min_two_sided_p(3, 3):.3f} for 3 vs 3, "
        f"{min_two_sided_p(4, 4):.3f} for 4 vs 4, so a difference can only be significant with at least 4 "
        "repetitions per group (or 3 vs 5); below that the verdict is 'undecidable'. 'Not significant' "
        "means the difference is within the noise of these repetitions, not that the groupings are equal.",
    ]
    if len(summary) and (summary["n"] < MIN_N).any():
        few = ", ".join(summary.loc[summary["n"] < MIN_N, "label"].astype(str))
        out.append(f"Too few repetitions to test: {few}. Repeat the run (e.g. other seeds under one "
                   "--experiment-id) for a significance test.")
    tested = int(tests["significant"].notna().sum()) if len(tests) else 0
    if tested > 1:
        out.append(f"The {tested} p-values are not corrected for multiple comparisons: at alpha = {alpha}, about "
                   f"{tested * alpha:.1f} of {tested} tests would read 'significant' by chance if no grouping "
                   "differed. Trust a difference that is also large against the IQRs.")
    if len(tests):
        decided = tests[tests["significant"].notna()]
        same = decided[~decided["significant"].astype(bool)]
        if len(same):
            pairs = "; ".join(f"{r.a} vs {r.b} on {metric_name(r.metric)} (p = {r.p_value:.3g})"
                              for r in same.itertuples())
            out.append(f"Not significant, the difference is within the noise of these repetitions: {pairs}.")
        undecided = tests[tests["significant"].isna()]
        if len(undecided):
            out.append(f"{len(undecided)} of {len(tests)} comparisons are undecided ('not tested' or "
                       "'undecidable'): too few repetitions for the test; their medians alone are no evidence "
                       "of a difference.")
    return out


def to_markdown(summary: pd.DataFrame, tests: pd.DataFrame, metrics: list[str], alpha: float = ALPHA) -> str:
    """The comparison as markdown: one section per (mode, dataset, workers), the tests, then the notes."""
    lines: list[str] = []
    for ctx, part in summary.groupby(list(CONTEXT_KEYS), dropna=False, sort=True):
        mode, dataset, workers = ctx
        lines.append(f"### {dataset}, W={workers}, {mode}")
        lines.append("")
        header = ["grouping", "n", *(metric_name(m) for m in metrics)]
        rows = [[r["label"], int(r["n"]), *(_cell(r, m) for m in metrics)] for _, r in part.iterrows()]
        lines += _md_table(header, rows)
        lines.append("")
        sub = tests
        for k, v in zip(CONTEXT_KEYS, ctx):
            sub = sub[(sub[k] == v) | (sub[k].isna() & pd.isna(v))]
        if len(sub):
            lines.append(f"Pairwise Mann-Whitney U, two-sided, alpha = {alpha}:")
            lines.append("")
            rows = [[metric_name(r.metric), r.a, r.b, f"{r.n_a} vs {r.n_b}", fmt(r.median_a), fmt(r.median_b),
                     fmt(r.u), "-" if r.p_value is None or pd.isna(r.p_value) else f"{r.p_value:.3g}", r.verdict]
                    for r in sub.itertuples()]
            lines += _md_table(["metric", "A", "B", "n", "median A", "median B", "U", "p", "verdict"], rows)
            lines.append("")
    lines.append("Notes:")
    lines.append("")
    lines += [f"- {n}" for n in notes(summary, tests, alpha)]
    return "\n".join(lines) + "\n"


def write_tables(summary: pd.DataFrame, tests: pd.DataFrame, metrics: list[str], out_dir: Path,
                 alpha: float = ALPHA) -> list[Path]:
    """`comparison.md`, `comparison.csv` (one row per group) and `significance.csv` (one row per test) in out_dir."""
    out_dir.mkdir(parents=True, exist_ok=True)
    md = out_dir / "comparison.md"
    md.write_text(to_markdown(summary, tests, metrics, alpha))
    csv = out_dir / "comparison.csv"
    summary.to_csv(csv, index=False)
    sig = out_dir / "significance.csv"
    tests.to_csv(sig, index=False)
    return [md, csv, sig]
