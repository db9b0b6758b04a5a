"""Figures and table of rescale runs (rescaling.md §4): throughput and latency over time with each
rescale marked, the costs of each protocol x routing side by side, and one table row per event.

Input: the runs' `summary.json` `rescale.events` (`load_events`) and their `metrics.parquet` per
tick (`throughput_tps`, `latency_ms_p99`, written by `bench simulate --rescale`).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

ROUTING_ORDER = ("KEY", "KEY_GROUP", "VNODE")
_LATENCY = "latency_ms_max"
PROTOCOL_ORDER = ("STOP_THE_WORLD", "SHARED_STATE", "LEARNER", "HANDOFF")

TABLE_COLUMNS = {  # events column -> table header
    "dataset": "dataset", "routing": "routing", "cell": "protocol", "event": "event",
    "moved_groups": "moved units", "moved_keys": "moved keys", "state_bytes_moved": "state bytes moved",
    "pause_ms": "pause ms", "held_tuples": "held tuples", "hold_delay_ms_p50": "hold p50 ms",
    "hold_delay_ms_p99": "hold p99 ms", "hold_delay_ms_max": "hold max ms", "rescale_ms": "rescale ms",
    "old_owner_share_during": "old owner share during", "std_dev_before": "STD_DEV before",
    "std_dev_after": "STD_DEV after", "latency_ms_p99_before": "lat p99 before ms",
    "latency_ms_p99_during": "lat p99 during ms", "latency_ms_p99_after": "lat p99 after ms",
    "ownership_violations": "violations",
}


def cell_name(protocol: str, batch: int) -> str:
    """`HANDOFF b64` for a HANDOFF batch other than 1, else the protocol's name."""
    return f"{protocol} b{batch}" if protocol == "HANDOFF" and batch != 1 else protocol


def load_events(runs: pd.DataFrame) -> pd.DataFrame:
    """One row per rescale event of `runs` (a `load_runs` frame), with run_id, dataset, `cell`
    (protocol and batch) and every field of the event; empty when no run rescaled."""
    rows = []
    if "path" not in runs.columns:
        return pd.DataFrame(rows)
    for _, run in runs.iterrows():
        path = Path(run["path"]) / "summary.json"
        if not path.is_file():
            continue
        summary = json.loads(path.read_text())
        block = summary.get("rescale")
        if not block:
            continue
        for i, event in enumerate(block.get("events", [])):
            rows.append({"run_id": run["run_id"], "dataset": summary.get("dataset"), "index": i,
                         "handoff_batch": block.get("handoff_batch", 1), "state_bytes": block.get("state_bytes", 0),
                         "cell": cell_name(event["protocol"], block.get("handoff_batch", 1)), **event})
    return pd.DataFrame(rows)


def _cells(events: pd.DataFrame) -> list[str]:
    def order(c: str) -> tuple:
        p = c.split()[0]
        return (PROTOCOL_ORDER.index(p) if p in PROTOCOL_ORDER else 99, c)
    return sorted(events["cell"].unique(), key=order)


def _routings(events: pd.DataFrame) -> list[str]:
    return sorted(events["routing"].unique(), key=lambda r: (ROUTING_ORDER.index(r) if r in ROUTING_ORDER else 99, r))


def _palette(routings) -> dict:
    from matplotlib import colormaps

    cmap = colormaps["tab10"]
    return {r: cmap(i) for i, r in enumerate(routings)}


def timeline_figure(metrics: pd.DataFrame, events: pd.DataFrame, dataset: str) -> Figure | None:
    """Throughput (tuples finished / s), the worst latency of each tick (ms, log when it spans
    more than 20x) and, when recorded, the share of the moved units' tuples their old owner
    processed, over time: one column per protocol cell, one line per routing, each rescale shaded
    from its request to the new routing in force. The worst latency, not a percentile: a hand-off
    holds few tuples, and a percentile of a tick hides them."""
    ev = events[events["dataset"] == dataset]
    m = metrics[metrics["run_id"].isin(ev["run_id"])]
    if ev.empty or "throughput_tps" not in m.columns:
        return None
    cells, routings = _cells(ev), _routings(ev)
    palette = _palette(routings)
    styles = {r: ("-", "--", ":", "-.")[i % 4] for i, r in enumerate(routings)}
    share = "moved_old_owner_share" in m.columns
    rows = 3 if share else 2
    fig = Figure(figsize=(3.4 * len(cells), 3.0 * rows), layout="constrained")
    axes = fig.subplots(rows, len(cells), squeeze=False, sharex=True)
    for col, cell in enumerate(cells):
        for routing in routings:
            runs = ev[(ev["cell"] == cell) & (ev["routing"] == routing)]
            for run_id in runs["run_id"].unique():
                series = m[m["run_id"] == run_id].sort_values("elapsed_s")
                axes[0, col].plot(series["elapsed_s"], series["throughput_tps"], color=palette[routing],
                                  linestyle=styles[routing], linewidth=1.4, label=routing)
                lat = pd.to_numeric(series[_LATENCY], errors="coerce")
                axes[1, col].plot(series["elapsed_s"], lat, color=palette[routing], linestyle=styles[routing],
                                  linewidth=1.4, label=routing)
                if share:
                    old = pd.to_numeric(series["moved_old_owner_share"], errors="coerce")
                    axes[2, col].plot(series["elapsed_s"], old, color=palette[routing], linestyle=styles[routing],
                                      linewidth=1.4, label=routing)
            for _, e in runs.iterrows():
                for ax in axes[:, col]:
                    ax.axvspan(e["started_ms"] / 1000.0, max(e["done_ms"], e["started_ms"] + 500) / 1000.0,
                               color=palette[routing], alpha=0.15, linewidth=0)
                    ax.axvline(e["at_ms"] / 1000.0, color="grey", linestyle=":", linewidth=0.8)
        axes[0, col].set_title(cell, fontsize=10)
        tps = pd.to_numeric(m.loc[m["run_id"].isin(ev.loc[ev["cell"] == cell, "run_id"]), "throughput_tps"],
                            errors="coerce").dropna()
        axes[0, col].set_ylim(0, 1.1 * float(tps.max()) if not tps.empty and tps.max() > 0 else 1.0)
        lat_all = pd.to_numeric(m.loc[m["run_id"].isin(ev.loc[ev["cell"] == cell, "run_id"]), _LATENCY],
                                errors="coerce").dropna()
        if not lat_all.empty and lat_all.min() > 0 and lat_all.max() / lat_all.min() > 20:
            axes[1, col].set_yscale("log")
        else:
            axes[1, col].set_ylim(bottom=0, top=max(1.0, float(lat_all.max()) * 1.5) if not lat_all.empty else 1.0)
        axes[rows - 1, col].set_xlabel("event time since start (s)")
        if share:
            axes[2, col].set_ylim(-0.05, 1.05)
        for ax in axes[:, col]:
            ax.grid(alpha=0.3)
    axes[0, 0].set_ylabel("throughput (tuples/s)")
    axes[1, 0].set_ylabel("worst latency in the tick (ms)")
    if share:
        axes[2, 0].set_ylabel("moved units: share at old owner")
    axes[0, 0].legend(fontsize=8)
    fig.suptitle(f"{dataset}: rescales (dotted: request; shaded: until the new routing is in force)", fontsize=11)
    return fig


def costs_figure(events: pd.DataFrame, dataset: str) -> Figure | None:
    """Global pause, p99 hold delay, rescale duration and state moved, per protocol cell and routing
    (bars; solid: first event, hatched: second), log scales."""
    ev = events[events["dataset"] == dataset]
    if ev.empty:
        return None
    cells, routings = _cells(ev), _routings(ev)
    palette = _palette(routings)
    panels = [("pause_ms", "global pause (ms)"), ("hold_delay_ms_p99", "hold delay p99 (ms)"),
              ("rescale_ms", "rescale duration (ms)"), ("held_tuples", "tuples held")]
    fig = Figure(figsize=(4.2 * len(panels), 4.2), layout="constrained")
    axes = fig.subplots(1, len(panels), squeeze=False)[0]
    n_events = int(ev["index"].max()) + 1
    width = 0.8 / (len(routings) * n_events)
    x = np.arange(len(cells))
    for ax, (column, title) in zip(axes, panels):
        positive = False
        for r, routing in enumerate(routings):
            for i in range(n_events):
                values = []
                for cell in cells:
                    sel = ev[(ev["cell"] == cell) & (ev["routing"] == routing) & (ev["index"] == i)]
                    v = pd.to_numeric(sel[column], errors="coerce").max() if not sel.empty else np.nan
                    values.append(v if pd.notna(v) and v > 0 else np.nan)
                positive = positive or bool(np.isfinite(values).any())
                offset = (r * n_events + i) * width - 0.4 + width / 2
                ax.bar(x + offset, values, width, color=palette[routing], hatch="//" if i else None,
                       edgecolor="white" if i else None, label=routing if i == 0 else None)
        ax.set_xticks(x, cells, rotation=30, ha="right", fontsize=8)
        if positive:
            ax.set_yscale("log")
        else:  # a log axis needs a positive value: say "all zero" instead
            ax.text(0.5, 0.5, "0 for every cell", transform=ax.transAxes, ha="center", va="center")
        ax.set_title(title, fontsize=10)
        ax.grid(alpha=0.3, axis="y")
    axes[0].legend(fontsize=8)
    fig.suptitle(f"{dataset}: what each rescale cost (empty bar: zero)", fontsize=11)
    return fig


def rescale_figures(metrics: pd.DataFrame, events: pd.DataFrame) -> dict[str, Figure]:
    """`rescale_timeline_<dataset>` and `rescale_costs_<dataset>` for every dataset with events."""
    out: dict[str, Figure] = {}
    if events.empty:
        return out
    for dataset in sorted(events["dataset"].dropna().unique()):
        stem = str(dataset).lower()
        timeline = timeline_figure(metrics, events, dataset)
        if timeline is not None:
            out[f"rescale_timeline_{stem}"] = timeline
        costs = costs_figure(events, dataset)
        if costs is not None:
            out[f"rescale_costs_{stem}"] = costs
    return out


def _fmt(value) -> str:
    if value is None or (isinstance(value, float) and np.isnan(value)):
        return "-"
    if isinstance(value, float):
        return f"{value:.3g}" if abs(value) < 1000 else f"{value:,.0f}"
    if isinstance(value, int | np.integer):
        return f"{value:,}"
    return str(value)


def rescale_table_markdown(events: pd.DataFrame) -> str:
    """The protocol x routing table: one row per rescale event (markdown)."""
    if events.empty:
        return "No rescale events in these runs.\n"
    ev = events.copy()
    ev["_r"] = ev["routing"].map(lambda r: ROUTING_ORDER.index(r) if r in ROUTING_ORDER else 99)
    ev["_c"] = ev["cell"].map({c: i for i, c in enumerate(_cells(ev))})
    ev = ev.sort_values(["dataset", "index", "_c", "_r"])
    cols = [c for c in TABLE_COLUMNS if c in ev.columns]
    lines = ["## Rescale events (protocol x routing)", "",
             "| " + " | ".join(TABLE_COLUMNS[c] for c in cols) + " |",
             "|" + "---|" * len(cols)]
    for _, row in ev.iterrows():
        lines.append("| " + " | ".join(_fmt(row[c]) for c in cols) + " |")
    lines += ["", "Units: moved units are key groups / vnodes (KEY: keys); times on the virtual clock; "
              "`old owner share during`: share of the moved units' tuples processed by their old owner "
              "while the rescale was under way; see docs/rescaling.md.", ""]
    return "\n".join(lines)
