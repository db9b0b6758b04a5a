"""Figures and table of rescale runs (rescaling.md §4): throughput and latency over time with each
rescale marked, the costs of each protocol x routing side by side, and one table row per event.

Input: the runs' `summary.json` `rescale.events` (`load_events`) and their `metrics.parquet` per
tick: `throughput_tps` and `latency_ms_max`, written by `bench simulate --rescale` on the tuples'
clock. A Spark run (`bench run --rescale`) has neither column: its ticks are on the driver's wall
clock, and `stream_ticks` derives them from its record (the observer's batch journal
`observer/progress.jsonl` and the tick's `latency_max_ms`). Its events are drawn on that clock
(`stop_wall_ms` to `resumed_wall_ms`, the pause), in a column of their own (`<protocol> (Spark)`).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib import colormaps
from matplotlib.figure import Figure

from bench.results.batches import journal_batches

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


SPARK = "(Spark)"
"""Suffix of the cell of a Spark run's events: its pause is measured on Spark, on the wall clock, a
simulator's is the cost model's on the tuples' clock; the two are not drawn in one bar or column."""


def cell_name(protocol: str, batch: int, mode: str | None = None) -> str:
    """`HANDOFF b64` for a HANDOFF batch other than 1, else the protocol's name; `STOP_THE_WORLD
    (Spark)` for the events of a stream run (`mode` `stream`)."""
    name = f"{protocol} b{batch}" if protocol == "HANDOFF" and batch != 1 else protocol
    return f"{name} {SPARK}" if mode == "stream" else name


def load_events(runs: pd.DataFrame) -> pd.DataFrame:
    """One row per rescale event of `runs` (a `load_runs` frame), with run_id, dataset, `mode`
    (`simulate` or `stream`), `path` (the run record), `cell` (protocol and batch, `(Spark)` for a
    stream run) and every field of the event; empty when no run rescaled."""
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
        mode = summary.get("mode") or "simulate"
        for i, event in enumerate(block.get("events", [])):
            rows.append({"run_id": run["run_id"], "dataset": summary.get("dataset"), "index": i, "mode": mode,
                         "path": str(run["path"]),
                         "handoff_batch": block.get("handoff_batch", 1), "state_bytes": block.get("state_bytes", 0),
                         "cell": cell_name(event["protocol"], block.get("handoff_batch", 1), mode), **event})
    return pd.DataFrame(rows)


def stream_ticks(ticks: pd.DataFrame, path: str | Path, tick_ms: float | None) -> pd.DataFrame:
    """A Spark run's ticks (its `load_metrics` rows) with the simulator's timeline columns, on the
    wall clock:

    - `throughput_tps` (tuples/s): the tuples of the micro-batches that ended in the tick, from the
      observer's batch journal `<path>/observer/progress.jsonl` (`tuples` per worker, `end_ms`),
      over the tick's length: (previous tick's `time_ms`, `time_ms`], the first tick `tick_ms`
      long (the observer's tick, ms). The rescale figures' windows count the same way
      (bench/rescale/figures.py); NaN without a journal;
    - `latency_ms_max` (ms): the tick's `latency_max_ms`, the worst processing latency of its batches
      (NaN on a recorded topic, whose Kafka timestamps give the topic's age, not a latency).
    """
    out = ticks.sort_values("time_ms").copy()
    out["latency_ms_max"] = (pd.to_numeric(out["latency_max_ms"], errors="coerce") if "latency_max_ms" in out.columns
                             else np.nan)
    batches = journal_batches(path)
    if not batches:
        out["throughput_tps"] = np.nan
        return out
    ends = np.array([b["end_ms"] for b in batches.values()], dtype=float)
    tuples = np.array([sum(b.get("tuples") or []) for b in batches.values()], dtype=float)
    hi = out["time_ms"].to_numpy(dtype=float)
    first = hi[0] - (float(tick_ms) if tick_ms is not None and pd.notna(tick_ms) else
                     float(np.median(np.diff(hi))) if len(hi) > 1 else 1000.0)
    lo = np.concatenate([[first], hi[:-1]])
    done = np.array([tuples[(ends > a) & (ends <= b)].sum() for a, b in zip(lo, hi)])
    out["throughput_tps"] = np.where(hi > lo, 1000.0 * done / np.maximum(hi - lo, 1e-9), np.nan)
    return out


def with_stream_ticks(metrics: pd.DataFrame, events: pd.DataFrame) -> pd.DataFrame:
    """`metrics` with the rows of every stream run of `events` replaced by `stream_ticks`' (the
    simulate runs' rows as they are)."""
    if events.empty or "mode" not in events.columns:
        return metrics
    stream = events[events["mode"] == "stream"].drop_duplicates("run_id")
    if stream.empty:
        return metrics
    parts = [metrics[~metrics["run_id"].isin(stream["run_id"])]]
    for _, e in stream.iterrows():
        rows = metrics[metrics["run_id"] == e["run_id"]]
        if not rows.empty:
            parts.append(stream_ticks(rows, e["path"], _tick_ms_of(e["path"])))
    return pd.concat([p for p in parts if not p.empty], ignore_index=True)


def _tick_ms_of(path: str | Path) -> float | None:
    """The observer's tick (ms) of a stream run, from its run.json (`observer_tick_s`)."""
    try:
        seconds = json.loads((Path(path) / "run.json").read_text())["config"].get("observer_tick_s")
    except (OSError, ValueError, KeyError):
        return None
    return 1000.0 * seconds if isinstance(seconds, int | float) else None


def _span_s(event: pd.Series, series: pd.DataFrame) -> tuple[float, float, float | None]:
    """Where event `event` is drawn on its run's x axis (`elapsed_s`): (start, end, request line).
    A simulate run: from its start to the new routing in force (`started_ms`, `done_ms`, tuples'
    clock), request at `at_ms`. A Spark run: its pause on the wall clock, from the stop
    (`stop_wall_ms`) to the end of the switch batch (`resumed_wall_ms`, the stop if that batch never
    ran), placed by the ticks' `time_ms - 1000 * elapsed_s`; the request is on the Kafka clock,
    which the wall clock does not show, so no line."""
    if event.get("mode") != "stream":
        return (event["started_ms"] / 1000.0, max(event["done_ms"], event["started_ms"] + 500) / 1000.0,
                event["at_ms"] / 1000.0)
    origin_ms = float((series["time_ms"] - 1000.0 * series["elapsed_s"]).iloc[0])
    stop = float(event["stop_wall_ms"])
    resumed = event.get("resumed_wall_ms")
    end = float(resumed) if resumed is not None and pd.notna(resumed) else stop
    return (stop - origin_ms) / 1000.0, (max(end, stop + 500) - origin_ms) / 1000.0, None


def _cells(events: pd.DataFrame) -> list[str]:
    def order(c: str) -> tuple:
        p = c.split()[0]
        return (PROTOCOL_ORDER.index(p) if p in PROTOCOL_ORDER else 99, c)
    return sorted(events["cell"].unique(), key=order)


def _routings(events: pd.DataFrame) -> list[str]:
    return sorted(events["routing"].unique(), key=lambda r: (ROUTING_ORDER.index(r) if r in ROUTING_ORDER else 99, r))


def _palette(routings) -> dict:
    cmap = colormaps["tab10"]
    return {r: cmap(i) for i, r in enumerate(routings)}


def timeline_figure(metrics: pd.DataFrame, events: pd.DataFrame, dataset: str) -> Figure | None:
    """Throughput (tuples finished / s), the worst latency of each tick (ms, log when it spans
    more than 20x) and, when recorded, the share of the moved units' tuples their old owner
    processed, over time: one column per protocol cell, one line per routing, each rescale shaded
    from its request to the new routing in force. The worst latency, not a percentile: a hand-off
    holds few tuples, and a percentile of a tick hides them."""
    ev = events[events["dataset"] == dataset]
    m = with_stream_ticks(metrics[metrics["run_id"].isin(ev["run_id"])], ev)
    if ev.empty or "throughput_tps" not in m.columns:
        return None
    cells, routings = _cells(ev), _routings(ev)
    palette = _palette(routings)
    styles = {r: ("-", "--", ":", "-.")[i % 4] for i, r in enumerate(routings)}
    share = "moved_old_owner_share" in m.columns
    rows = 3 if share else 2
    fig = Figure(figsize=(max(3.4 * len(cells), 6.8), 3.0 * rows), layout="constrained")  # room for the title
    axes = fig.subplots(rows, len(cells), squeeze=False, sharex="col")  # a Spark cell is on the wall clock
    for col, cell in enumerate(cells):
        for routing in routings:
            runs = ev[(ev["cell"] == cell) & (ev["routing"] == routing)]
            for run_id in runs["run_id"].unique():
                series = m[m["run_id"] == run_id].sort_values("elapsed_s")
                axes[0, col].plot(series["elapsed_s"], series["throughput_tps"], color=palette[routing],
                                  linestyle=styles[routing], linewidth=1.4, label=routing)
                lat = pd.to_numeric(series[_LATENCY], errors="coerce")
                has_lat = lat.notna()  # a Spark tick without a batch has none: join its neighbours
                axes[1, col].plot(series["elapsed_s"][has_lat], lat[has_lat], color=palette[routing], linestyle=styles[routing],
                                  linewidth=1.4, label=routing)
                if share:
                    old = pd.to_numeric(series["moved_old_owner_share"], errors="coerce")
                    axes[2, col].plot(series["elapsed_s"], old, color=palette[routing], linestyle=styles[routing],
                                      linewidth=1.4, label=routing)
            for _, e in runs.iterrows():
                start, end, request = _span_s(e, m[m["run_id"] == e["run_id"]].sort_values("elapsed_s"))
                for ax in axes[:, col]:
                    ax.axvspan(start, end, color=palette[routing], alpha=0.15, linewidth=0)
                    if request is not None:
                        ax.axvline(request, color="grey", linestyle=":", linewidth=0.8)
        _scale_column(axes[:, col], cell, m[m["run_id"].isin(ev.loc[ev["cell"] == cell, "run_id"])], share)
    axes[0, 0].set_ylabel("throughput (tuples/s)")
    axes[1, 0].set_ylabel("worst latency in the tick (ms)")
    if share:
        axes[2, 0].set_ylabel("moved units: share at old owner")
    axes[0, 0].legend(fontsize=8)
    spark = any(c.endswith(SPARK) for c in cells)
    fig.suptitle(f"{dataset}: rescales (dotted: request; shaded: until the new routing is in force"
                  + (";\nSpark: the pause, from the stop to the end of the switch batch" if spark else "") + ")",
                 fontsize=11)
    return fig


def _scale_column(axes, cell: str, m: pd.DataFrame, share: bool) -> None:
    """Title, axes' limits and x label of one protocol cell's column of `timeline_figure`; `m`: the
    ticks of the cell's runs. The latency axis is logarithmic when it spans more than 20x."""
    axes[0].set_title(cell, fontsize=10)
    tps = pd.to_numeric(m["throughput_tps"], errors="coerce").dropna()
    axes[0].set_ylim(0, 1.1 * float(tps.max()) if not tps.empty and tps.max() > 0 else 1.0)
    lat_all = pd.to_numeric(m[_LATENCY], errors="coerce").dropna()
    if not lat_all.empty and lat_all.min() > 0 and lat_all.max() / lat_all.min() > 20:
        axes[1].set_yscale("log")
    else:
        axes[1].set_ylim(bottom=0, top=max(1.0, float(lat_all.max()) * 1.5) if not lat_all.empty else 1.0)
    axes[-1].set_xlabel("wall clock since the run's start (s)" if cell.endswith(SPARK)
                        else "event time since start (s)")
    if share:
        axes[2].set_ylim(-0.05, 1.05)
    for ax in axes:
        ax.grid(alpha=0.3)


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
                    # a figure an event does not have (a Spark run: no hold, no rescale_ms) is no bar
                    v = pd.to_numeric(sel[column], errors="coerce").max() \
                        if not sel.empty and column in sel.columns else np.nan
                    values.append(v if pd.notna(v) and v > 0 else np.nan)
                positive = positive or bool(np.isfinite(values).any())
                offset = (r * n_events + i) * width - 0.4 + width / 2
                ax.bar(x + offset, values, width, color=palette[routing], hatch="//" if i else None,
                       edgecolor="white" if i else None, label=routing if i == 0 else None)
        ax.set_xticks(x, cells, rotation=30, ha="right", fontsize=8)
        if positive:
            ax.set_yscale("log")
        else:  # a log axis needs a positive value: say "all zero" (or "not recorded") instead
            recorded = column in ev.columns and pd.to_numeric(ev[column], errors="coerce").notna().any()
            ax.text(0.5, 0.5, "0 for every cell" if recorded else "not recorded for these runs",
                    transform=ax.transAxes, ha="center", va="center")
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
    if ev["cell"].str.endswith(SPARK).any():
        lines += ["Rows `(Spark)`: measured on a Spark run (bench run --rescale): the pause on the driver's wall "
                        "clock, from the stop to the end of the switch batch; violations in routed (batch, worker, "
                        "key) pairs, not tuples; no hold, no rescale duration (docs/rescaling.md, \"On Spark\").", ""]
    return "\n".join(lines)
