"""Reading run records back: one or many `results/<run_id>/` folders as tidy pandas frames.

    load_runs()            one row per run: identity, config and headline figures
    load_metrics(runs)     one row per (run, observer tick)
    load_share_ticks(runs) one row per (run, tick, worker): the load share timeline, long form
    load_worker_loads(runs) one row per (run, worker): final load and share
    latest_per_grouping(runs) the newest complete run of each grouping on one dataset
    repetitions(runs, selected) the runs sharing experiment_id, grouping, dataset, workers with `selected`

Both modes (`simulate`, `stream`) write the same three files; the stream run adds fields
(latency, Spark batch figures, checks). Readers take every scalar a summary has, its nested blocks
flattened (`flatten_summary`), and never require a stream-only one: a figure absent from a run is
NaN in its row. Columns are documented in `results/README.md`.
"""

from __future__ import annotations

import difflib
import json
import os
import warnings
from collections.abc import Iterable
from pathlib import Path

import numpy as np
import pandas as pd

from bench.results import environment
from bench.results.ticks import SHARE_LIST_COLUMNS, is_list_column, read_ticks

# Columns every `load_runs` frame has, in this order (NaN/None where a run lacks them); any other
# scalar field of summary.json follows them.
RUN_COLUMNS = (
    "run_id", "mode", "created_utc", "experiment_id", "grouping", "dataset", "workers", "splitters",
    "records", "total_count", "std_dev", "dist_cost", "max_mean_imbalance", "throughput_ratio",
    "duration_ms", "distinct_keys", "distinct_pairs", "dead_letters", "status", "complete",
    "git_commit", "git_dirty", "tick_ms", "dataset_params", "path",
)
# Headline figures: the ones `results list`, the comparison table and the significance tests use,
# each only where a run carries it. Latency columns (`latency_*`) are found by prefix.
HEADLINE = ("std_dev", "dist_cost", "max_mean_imbalance", "throughput_ratio")
# Figures a summary may nest in blocks (the stream run: `exact` recomputed from the final
# aggregates, `reference` the observer's last tick, `latency`); a figure missing at the top level
# is taken from the first block that has it, in this order. Every nested scalar is also kept as
# `<block>_<name>` (e.g. `reference_std_dev`).
_PROMOTED = ("std_dev", "dist_cost", "max_mean_imbalance", "throughput_ratio", "duration_ms", "total_count",
             "distinct_keys", "distinct_pairs")
_BLOCK_ORDER = ("exact", "reference")
_ALIASES = {"keys": "distinct_keys", "pairs": "distinct_pairs"}  # names inside the blocks
# Maps keyed by data (DYNAMIC_KEY's pool size per key) are not figures: they stay out of the row.
_NOT_FLATTENED = ("pool_sizes",)
# A run that ended like this is not a result to compare.
_NOT_COMPLETE = ("failed", "interrupted", "incomplete")


class ResultsError(ValueError):
    """A results folder or run id that cannot be read; the message says what to do."""


def results_root(root: str | Path | None = None) -> Path:
    """The results folder: `root`, else `BENCH_RESULTS_DIR` (read now, not at import), else `<repo>/results`."""
    if root is not None:
        return Path(root)
    return Path(os.environ.get("BENCH_RESULTS_DIR") or environment.REPO_ROOT / "results")


def _read_json(path: Path) -> dict | None:
    try:
        return json.loads(path.read_text())
    except FileNotFoundError:
        return None


def run_folders(root: str | Path | None = None) -> list[Path]:
    """Every `<root>/<run_id>/` holding a `run.json` (other folders, e.g. `compare/`, are skipped).

    Raises: ResultsError: the folder does not exist or holds no run record.
    """
    base = results_root(root)
    if not base.is_dir():
        raise ResultsError(f"results folder {base} does not exist: make a run first (e.g. `python -m bench "
                           "simulate --dataset COUNTRY_SKEW_R80`) or point --root/BENCH_RESULTS_DIR at one")
    folders = sorted(p for p in base.iterdir() if p.is_dir() and (p / "run.json").is_file())
    if not folders:
        raise ResultsError(f"no run records in {base} (no <run_id>/run.json): make a run first "
                           "(e.g. `python -m bench simulate --dataset COUNTRY_SKEW_R80`)")
    return folders


def _is_scalar(value) -> bool:
    return value is None or isinstance(value, str | int | float | bool)


def flatten_summary(summary: dict) -> dict:
    """summary.json as one flat dict of scalars (lists such as worker_loads left out).

    Top-level scalars as they are; each nested block's scalars as `<block>_<name>` (a name that
    already starts with the block's, like `latency_p99_ms` in `latency`, is kept as is); a headline
    figure or `latency*` missing at the top level is taken from the blocks, `exact` first (`keys`,
    `pairs` there become `distinct_keys`, `distinct_pairs`). Maps keyed by data (pool sizes) are left out.
    """
    flat = {k: v for k, v in summary.items() if _is_scalar(v)}
    blocks = [(k, v) for k, v in summary.items()
              if isinstance(v, dict) and not any(word in k for word in _NOT_FLATTENED)]
    blocks.sort(key=lambda kv: _BLOCK_ORDER.index(kv[0]) if kv[0] in _BLOCK_ORDER else len(_BLOCK_ORDER))
    for parent, block in blocks:
        for key, value in block.items():
            if not _is_scalar(value):
                continue
            flat.setdefault(key if key.startswith(parent) else f"{parent}_{key}", value)
            name = _ALIASES.get(key, key)
            if (name in _PROMOTED or name.startswith("latency")) and flat.get(name) is None:
                flat[name] = value
    return flat


def summary_worker_loads(summary: dict) -> list | None:
    """`worker_loads` of a summary: at the top level, or in a block (`exact` first)."""
    if summary.get("worker_loads"):
        return summary["worker_loads"]
    for name in (*_BLOCK_ORDER, *summary):
        block = summary.get(name)
        if isinstance(block, dict) and block.get("worker_loads"):
            return block["worker_loads"]
    return None


def _tick_ms(config: dict):
    if config.get("tick_ms") is not None:
        return config["tick_ms"]
    for key in ("observer_tick_s", "tick_s"):
        if isinstance(config.get(key), int | float):
            return int(config[key] * 1000)
    return None


def _run_row(folder: Path) -> dict | None:
    try:
        run = _read_json(folder / "run.json") or {}
        summary = _read_json(folder / "summary.json")
    except (OSError, json.JSONDecodeError) as exc:
        warnings.warn(f"skipping unreadable run record {folder}: {exc}", stacklevel=3)
        return None
    config = run.get("config") or {}
    dataset = run.get("dataset") or {}
    git = run.get("git") or {}
    dead = dataset.get("dead_letters")
    row: dict = {
        "run_id": run.get("run_id", folder.name),
        "mode": run.get("mode"),
        "created_utc": run.get("created_utc"),
        "experiment_id": run.get("experiment_id"),
        "grouping": config.get("grouping"),
        "dataset": dataset.get("name"),
        "workers": config.get("workers"),
        "splitters": config.get("splitters"),
        "records": dataset.get("records"),
        "distinct_keys": dataset.get("distinct_keys"),
        "dead_letters": dead.get("count") if isinstance(dead, dict) else dead,
        "git_commit": git.get("commit"),
        "git_dirty": git.get("dirty"),
        "tick_ms": _tick_ms(config),
        "dataset_params": json.dumps(dataset.get("params") or {}, sort_keys=True),
        "path": str(folder),
    }
    for key, value in flatten_summary(summary or {}).items():
        if key == "run_id" or (value is None and row.get(key) is not None):
            continue  # the summary has nothing to say; keep run.json's value
        row[key] = value
    if summary is None:
        row["status"] = "incomplete"
    elif not isinstance(row.get("status"), str):
        row["status"] = run.get("status") if isinstance(run.get("status"), str) else "completed"
    row["complete"] = row["status"] not in _NOT_COMPLETE
    return row


def load_runs(
    root: str | Path | None = None,
    run_ids: Iterable[str] | None = None,
    experiment_id: str | None = None,
) -> pd.DataFrame:
    """One row per run record, sorted by creation time (see `RUN_COLUMNS`).

    Args: root: results folder (default `results_root()`); run_ids: only these runs, in this order
        (exact names, or an unambiguous prefix); experiment_id: only the runs of this experiment.
    Returns: DataFrame; `created_utc` is a UTC timestamp; `status` the summary's (`completed` when
        it has none, `incomplete` without summary.json: running or crashed); `complete` False for an
        incomplete, failed or interrupted run; figures NaN where a run lacks them.
    Raises: ResultsError: empty/missing folder, unknown run id (close names listed), unknown experiment.
    """
    folders = run_folders(root)
    by_name = {f.name: f for f in folders}
    if run_ids is not None:
        folders = [by_name[resolve_run_id(r, by_name)] for r in run_ids]
    rows = [r for r in (_run_row(f) for f in folders) if r is not None]
    frame = pd.DataFrame(rows)
    for col in RUN_COLUMNS:
        if col not in frame.columns:
            frame[col] = np.nan
    frame = frame[list(RUN_COLUMNS) + [c for c in frame.columns if c not in RUN_COLUMNS]]
    frame["created_utc"] = pd.to_datetime(frame["created_utc"], utc=True, errors="coerce")
    for col in ("workers", "splitters", "records", "total_count", "distinct_keys", "dead_letters", "tick_ms"):
        frame[col] = pd.to_numeric(frame[col], errors="coerce").astype("Int64")
    for col in HEADLINE + ("duration_ms",):
        frame[col] = pd.to_numeric(frame[col].replace({"inf": np.inf, "-inf": -np.inf}), errors="coerce")
    if experiment_id is not None:
        known = sorted(frame["experiment_id"].dropna().unique())
        frame = frame[frame["experiment_id"] == experiment_id]
        if frame.empty:
            close = difflib.get_close_matches(experiment_id, known, n=5, cutoff=0.5)
            raise ResultsError(f"no run of experiment {experiment_id!r} in {results_root(root)}"
                               + (f"; close: {', '.join(close)}" if close else f"; known: {', '.join(known[:10])}"))
    if run_ids is None:
        frame = frame.sort_values(["created_utc", "run_id"], kind="stable")
    return frame.reset_index(drop=True)


def resolve_run_id(name: str, known: Iterable[str]) -> str:
    """`name` if it is a known run id, else the one run id it is a prefix of.

    Raises: ResultsError: unknown (up to 5 close names listed) or ambiguous prefix.
    """
    known = list(known)
    if name in known:
        return name
    starts = [k for k in known if k.startswith(name)]
    if len(starts) == 1:
        return starts[0]
    if len(starts) > 1:
        raise ResultsError(f"run id {name!r} is ambiguous: {len(starts)} runs start with it "
                           f"({', '.join(starts[:5])}{', ...' if len(starts) > 5 else ''})")
    close = difflib.get_close_matches(name, known, n=5, cutoff=0.4)
    close = close or [k for k in known if name.lower() in k.lower()][:5]
    hint = f"; close: {', '.join(close)}" if close else "; `python -m bench results list` shows the runs"
    raise ResultsError(f"unknown run id {name!r}{hint}")


def _frame_of(runs, root) -> pd.DataFrame:
    """Accept a `load_runs` frame, a list of run ids, or None (every run under `root`)."""
    if isinstance(runs, pd.DataFrame):
        return runs
    if runs is None:
        return load_runs(root)
    if isinstance(runs, str):
        runs = [runs]
    return load_runs(root, run_ids=list(runs))


def load_metrics(runs=None, root: str | Path | None = None) -> pd.DataFrame:
    """One row per (run, observer tick); per-worker columns left out (see `load_share_ticks`).

    Args: runs: a `load_runs` frame, run ids, or None for every run under `root`.
    Returns: the metrics.parquet columns (every one the runs have; stream-only ones NaN for
        simulate runs) except per-worker ones (`load_share_<w>` and list cells), plus `elapsed_s`:
        seconds since the run's clock started, `duration_ms / 1000` when every row has it, else
        from `clock_ms` (or `time_ms`) with the first tick ending one tick after the start; and
        `mode`, `dataset`, `experiment_id`. Infinite values (throughput before the first whole
        second) become NaN. Runs without metrics.parquet contribute no rows.
    """
    frames = [m for m in (read_ticks(r) for _, r in _frame_of(runs, root).iterrows()) if m is not None]
    frames = [f.drop(columns=[c for c in f.columns if c.startswith("load_share_") or is_list_column(f[c])])
              for f in frames if not f.empty]
    if not frames:
        return pd.DataFrame(columns=["run_id", "tick", "clock_ms", "elapsed_s", "grouping", "workers"])
    return pd.concat(frames, ignore_index=True)


def load_share_ticks(runs=None, root: str | Path | None = None) -> pd.DataFrame:
    """Long form of the load share timeline: run_id, grouping, workers, tick, elapsed_s, worker, share_percent.

    From `load_share_<w>` columns, or from a list cell per tick (`worker_shares`) when the record has those.
    """
    columns = ["run_id", "grouping", "workers", "tick", "elapsed_s", "worker", "share_percent"]
    parts = []
    for _, row in _frame_of(runs, root).iterrows():
        frame = read_ticks(row)
        if frame is None or frame.empty:
            continue
        share_cols = [c for c in frame.columns if c.startswith("load_share_") and not is_list_column(frame[c])]
        list_col = next((c for c in SHARE_LIST_COLUMNS if c in frame.columns and is_list_column(frame[c])), None)
        if share_cols:
            long = frame.melt(id_vars=columns[:5], value_vars=share_cols, var_name="worker", value_name="share_percent")
            long["worker"] = long["worker"].str.removeprefix("load_share_").astype(int)
        elif list_col:
            long = frame[columns[:5] + [list_col]].rename(columns={list_col: "share_percent"})
            long = long.dropna(subset=["share_percent"])
            long["worker"] = long["share_percent"].map(lambda v: list(range(len(v))))
            long = long.explode(["share_percent", "worker"])
            long["share_percent"] = long["share_percent"].astype(float)
            long["worker"] = long["worker"].astype(int)
        else:
            continue
        parts.append(long[columns])
    if not parts:
        return pd.DataFrame(columns=columns)
    return pd.concat(parts, ignore_index=True).sort_values(["run_id", "tick", "worker"], ignore_index=True)


def load_worker_loads(runs=None, root: str | Path | None = None) -> pd.DataFrame:
    """One row per (run, worker) from summary.json: run_id, grouping, workers, worker, load, share_percent, rank.

    `load` is the weighted count (reference Q19), `share_percent` its share of the total; `rank`
    is 0 for the most loaded worker of the run (worker ids are arbitrary across repetitions, ranks
    are comparable). Runs without a summary contribute no rows.
    """
    rows = []
    for _, run in _frame_of(runs, root).iterrows():
        summary = _read_json(Path(run["path"]) / "summary.json")
        worker_loads = summary_worker_loads(summary or {})
        if not worker_loads:
            continue
        loads = np.asarray(worker_loads, dtype=float)
        shares = summary.get("load_share_percent")
        total = loads.sum()
        shares = np.asarray(shares, dtype=float) if shares else (100.0 * loads / total if total else loads * 0.0)
        order = np.argsort(-shares, kind="stable")
        rank = np.empty(len(order), dtype=int)
        rank[order] = np.arange(len(order))
        for worker, (load, share) in enumerate(zip(loads, shares, strict=True)):
            rows.append({"run_id": run["run_id"], "grouping": run["grouping"], "workers": run["workers"],
                         "worker": worker, "load": load, "share_percent": share, "rank": int(rank[worker])})
    return pd.DataFrame(rows, columns=["run_id", "grouping", "workers", "worker", "load", "share_percent", "rank"])


def latest_per_grouping(
    runs: pd.DataFrame, dataset: str | None = None, workers: int | None = None, mode: str | None = None
) -> pd.DataFrame:
    """The newest complete run of each grouping, all on one dataset, worker count and mode.

    Unset filters come from the newest complete run matching the set ones, so that the
    default comparison never puts W=10 beside W=100, or a simulation beside a Spark run.
    Raises: ResultsError: no complete run matches.
    """
    done = runs[runs["complete"].astype(bool)]
    for col, value in (("dataset", dataset), ("workers", workers), ("mode", mode)):
        if value is not None:
            if col == "dataset":
                done = done[done["dataset"].astype(str).str.upper() == str(value).upper()]
            else:
                done = done[done[col] == value]
    if done.empty:
        wanted = ", ".join(f"{k}={v}" for k, v in (("dataset", dataset), ("workers", workers), ("mode", mode)) if v)
        known = ", ".join(sorted(runs["dataset"].dropna().astype(str).unique()))
        raise ResultsError(f"no complete run{' with ' + wanted if wanted else ''} (datasets: {known or 'none'})")
    newest = done.sort_values(["created_utc", "run_id"]).iloc[-1]
    same = done[(done["dataset"] == newest["dataset"]) & (done["workers"] == newest["workers"])
                & (done["mode"] == newest["mode"])]
    picked = same.sort_values(["created_utc", "run_id"]).groupby("grouping", sort=False).tail(1)
    return picked.sort_values("grouping").reset_index(drop=True)


REPETITION_KEYS = ("experiment_id", "grouping", "dataset", "workers")


def repetitions(runs: pd.DataFrame, selected: pd.DataFrame) -> pd.DataFrame:
    """`selected` and every complete run of `runs` that repeats one of them: same experiment_id, grouping,
    dataset, workers. A run without experiment_id repeats nothing (nothing says its config matched)."""
    done = runs[runs["complete"].astype(bool)]
    keys = selected.loc[selected["experiment_id"].notna(), list(REPETITION_KEYS)].drop_duplicates()
    merged = done.merge(keys, on=list(REPETITION_KEYS), how="inner")
    alone = done[done["run_id"].isin(selected.loc[selected["experiment_id"].isna(), "run_id"])]
    out = pd.concat([merged, alone], ignore_index=True).drop_duplicates("run_id")
    return out.sort_values(["grouping", "created_utc", "run_id"]).reset_index(drop=True)


def latency_columns(frame: pd.DataFrame) -> list[str]:
    """Latency figures present in a frame (`latency_*` columns with at least one value)."""
    return [c for c in frame.columns
            if c.startswith("latency") and c.endswith("_ms") and pd.to_numeric(frame[c], errors="coerce").notna().any()]
