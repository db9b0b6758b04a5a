"""Comparison figures, one function per figure; each returns a matplotlib Figure, or None with no data.

Built on `matplotlib.figure.Figure` (no pyplot): no global backend state, nothing to close, and
the same code draws into files (Agg, PNG + SVG) and into a notebook. Runs of one repetition group
(one label) share a colour: each run is a thin line, their median per tick a thick one.
"""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib import colormaps
from matplotlib.figure import Figure

from bench.compare.table import metric_name
from bench.results.ticks import SOAK_COLUMNS

_SIZE = (8.0, 4.2)


def colours(labels) -> dict[str, tuple]:
    """A stable colour per label (tab10 in sorted order)."""
    cmap = colormaps["tab10"]
    return {label: cmap(i % 10) for i, label in enumerate(sorted(set(labels)))}


def _with_labels(frame: pd.DataFrame, labels: pd.Series) -> pd.DataFrame:
    """`frame` (rows carrying run_id) with the run's group label; `labels` is indexed by run_id."""
    out = frame.copy()
    out["label"] = out["run_id"].map(labels)
    return out[out["label"].notna()]


def _timeseries(ax, metrics: pd.DataFrame, column: str, palette: dict) -> bool:
    """Thin line per run, thick median per tick index over the runs of a label; False if no value."""
    drawn = False
    for label, part in metrics.groupby("label", sort=True):
        values = part[["run_id", "tick", "elapsed_s", column]].dropna(subset=[column])
        if values.empty:
            continue
        runs = values["run_id"].unique()
        for _, run in values.groupby("run_id"):
            if len(runs) > 1:
                ax.plot(run["elapsed_s"], run[column], color=palette[label], alpha=0.3, linewidth=0.8)
        med = values.groupby("tick").agg(x=("elapsed_s", "median"), y=(column, "median"))
        suffix = f" (median of {len(runs)})" if len(runs) > 1 else ""
        ax.plot(med["x"], med["y"], color=palette[label], linewidth=2.0, marker="." if len(med) < 30 else None,
                label=f"{label}{suffix}")
        drawn = True
    return drawn


def _finish(fig: Figure, ax, title: str, ylabel: str, xlabel: str = "time since start (s)") -> None:
    ax.set(title=title, xlabel=xlabel, ylabel=ylabel)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)


def std_dev_over_time(metrics: pd.DataFrame, labels: pd.Series) -> Figure | None:
    """STD_DEV (cumulative, percentage points) at each observer tick, per grouping."""
    m = _with_labels(metrics, labels)
    if "std_dev" not in m.columns or m["std_dev"].notna().sum() == 0:
        return None
    fig = Figure(figsize=_SIZE, layout="constrained")
    ax = fig.add_subplot()
    _timeseries(ax, m, "std_dev", colours(labels))
    _finish(fig, ax, "Load imbalance over time (cumulative STD_DEV; 0 = perfect balance)",
            "STD_DEV (percentage points)")
    ax.set_ylim(bottom=0)
    return fig


def load_share_bars(worker_loads: pd.DataFrame, labels: pd.Series) -> Figure | None:
    """Final share of the total per worker, workers ranked by load (median over repetitions, IQR whiskers).

    Worker ids are arbitrary between repetitions (the hot key lands anywhere), ranks are not.
    The dashed lines mark the perfect share, 100/W.
    """
    w = _with_labels(worker_loads, labels)
    if w.empty:
        return None
    palette = colours(labels)
    groups = sorted(w["label"].unique())
    fig = Figure(figsize=(max(_SIZE[0], 0.35 * w["rank"].max() * len(groups) / 2), _SIZE[1]), layout="constrained")
    ax = fig.add_subplot()
    width = 0.8 / len(groups)
    for i, label in enumerate(groups):
        part = w[w["label"] == label]
        stats = part.groupby("rank")["share_percent"].quantile([0.25, 0.5, 0.75]).unstack()
        x = stats.index.to_numpy() + (i - (len(groups) - 1) / 2) * width
        n = part["run_id"].nunique()
        ax.bar(x, stats[0.5], width=width, color=palette[label],
               label=f"{label}" + (f" (median of {n})" if n > 1 else ""))
        if n > 1:
            ax.errorbar(x, stats[0.5], yerr=[stats[0.5] - stats[0.25], stats[0.75] - stats[0.5]],
                        fmt="none", ecolor="black", elinewidth=0.8, capsize=2)
    for workers in sorted(w["workers"].dropna().unique()):
        ax.axhline(100.0 / int(workers), color="grey", linestyle="--", linewidth=1)
    ranks = int(w["rank"].max()) + 1
    ax.set_xticks(range(ranks), [str(r + 1) for r in range(ranks)], fontsize=7 if ranks > 20 else None)
    ax.set(title="Final load share per worker, most loaded first (dashed: 100/W)",
           xlabel="worker, ranked by load", ylabel="share of the total (%)")
    ax.grid(alpha=0.3, axis="y")
    ax.legend(fontsize=8)
    return fig


def dist_cost_figure(metrics: pd.DataFrame, runs: pd.DataFrame, labels: pd.Series) -> Figure | None:
    """DIST_COST (workers per key): over time (left) and final, median with IQR and each run (right)."""
    m = _with_labels(metrics, labels)
    r = _with_labels(runs, labels)
    have_time = "dist_cost" in m.columns and m["dist_cost"].notna().any()
    have_final = "dist_cost" in r.columns and r["dist_cost"].notna().any()
    if not (have_time or have_final):
        return None
    palette = colours(labels)
    fig = Figure(figsize=(_SIZE[0] * 1.3, _SIZE[1]), layout="constrained")
    ax_t, ax_f = fig.subplots(1, 2, width_ratios=[3, 2])
    if have_time:
        _timeseries(ax_t, m, "dist_cost", palette)
    _finish(fig, ax_t, "DIST_COST over time", "DIST_COST (workers per key)")
    groups = sorted(r["label"].unique())
    for i, label in enumerate(groups):
        values = r.loc[r["label"] == label, "dist_cost"].dropna().to_numpy(dtype=float)
        if values.size == 0:
            continue
        q1, med, q3 = np.percentile(values, [25, 50, 75])
        ax_f.bar(i, med, color=palette[label], width=0.6)
        if values.size > 1:
            ax_f.errorbar(i, med, yerr=[[med - q1], [q3 - med]], fmt="none", ecolor="black", capsize=3)
        ax_f.scatter(np.full(values.size, i), values, color="black", s=8, zorder=3)
    ax_f.set_xticks(range(len(groups)), groups, rotation=30, ha="right", fontsize=8)
    ax_f.set(title="final DIST_COST (median, IQR, runs)", ylabel="DIST_COST")
    ax_f.grid(alpha=0.3, axis="y")
    finite = pd.concat([m.get("dist_cost", pd.Series(dtype=float)), r["dist_cost"]]).dropna()
    if len(finite) and finite.min() > 0 and finite.max() / finite.min() > 20:
        ax_t.set_yscale("log")
        ax_f.set_yscale("log")
    return fig


def _numeric_columns(frame: pd.DataFrame, match) -> list[str]:
    return [c for c in frame.columns if match(c) and pd.api.types.is_numeric_dtype(frame[c]) and frame[c].notna().any()]


def _is_throughput(column: str) -> bool:
    return column.startswith("throughput") or column.endswith("_per_s")


def _is_latency(column: str) -> bool:
    return column.startswith("latency")


def throughput_over_time(metrics: pd.DataFrame, labels: pd.Series) -> Figure | None:
    """Every `throughput*` and `*_per_s` column of the metrics over time (per second), one panel each."""
    m = _with_labels(metrics, labels)
    simulated = set(m["mode"].dropna()) == {"simulate"}
    note = "\n(simulate: the virtual clock's replay rate, not a measured speed)" if simulated else ""
    return _panels_over_time(m, labels, _is_throughput, note=note, from_zero=True)


def latency_over_time(metrics: pd.DataFrame, labels: pd.Series) -> Figure | None:
    """Every `latency*` column of the metrics over time (ms), one panel each; None when no run has latency."""
    return _panels_over_time(_with_labels(metrics, labels), labels, _is_latency)


def resources_over_time(metrics: pd.DataFrame, labels: pd.Series) -> Figure | None:
    """What the runs held over time, one panel each (a soak's figure, `bench.observer.resources`): the
    driver's and Spark's resident memory, the Spark JVM's committed and used heap and the checkpoint's
    size (MiB), the state store's memory (bytes) and the batch time (ms); None when no run sampled any."""
    return _panels_over_time(_with_labels(metrics, labels), labels, lambda c: c in SOAK_COLUMNS, from_zero=True)


def _panels_over_time(m: pd.DataFrame, labels: pd.Series, wanted, *, note: str = "",
                      from_zero: bool = False) -> Figure | None:
    """One panel per numeric column of `m` that `wanted(column)` accepts; None when there is none."""
    columns = _numeric_columns(m, wanted)
    if not columns:
        return None
    fig = Figure(figsize=(_SIZE[0], _SIZE[1] * len(columns)), layout="constrained")
    axes = np.atleast_1d(fig.subplots(len(columns), 1, squeeze=False)[:, 0])
    for ax, column in zip(axes, columns):
        _timeseries(ax, m, column, colours(labels))
        _finish(fig, ax, f"{metric_name(column)} over time{note}", metric_name(column))
        if from_zero:
            ax.set_ylim(bottom=0)
    return fig


def save_figure(fig: Figure, stem: Path) -> list[Path]:
    """Save as `<stem>.png` (120 dpi) and `<stem>.svg`; returns both paths."""
    stem.parent.mkdir(parents=True, exist_ok=True)
    paths = []
    for ext in ("png", "svg"):
        path = stem.with_name(f"{stem.name}.{ext}")
        fig.savefig(path, dpi=120, format=ext)
        paths.append(path)
    return paths


def png_bytes(fig: Figure) -> bytes:
    """The figure as PNG bytes (for embedding)."""
    buf = io.BytesIO()
    fig.savefig(buf, dpi=100, format="png")
    return buf.getvalue()
