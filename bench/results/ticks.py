"""One run's metrics.parquet (its observer ticks) read back as a frame; `reader` assembles the runs'.

Both modes write one row per tick: `bench simulate` with its virtual clock (`clock_ms`), the
stream observer with epoch time (`time_ms`); the per-worker load shares are either
`load_share_<w>` columns or one list cell per tick (SHARE_LIST_COLUMNS).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

CLOCK_COLUMNS = ("clock_ms", "time_ms")  # simulate writes clock_ms; the stream observer time_ms (epoch)
SHARE_LIST_COLUMNS = ("load_share_percent", "worker_shares")  # per-tick shares as one list cell

SOAK_COLUMNS = ("driver_rss_mib", "spark_rss_mib", "spark_heap_committed_mib", "spark_heap_used_mib",
                "spark_heap_live_mib", "checkpoint_mib", "state_memory_bytes", "state_sst_bytes",
                "batch_duration_ms", "batch_us_per_row")
"""The tick columns a soak is judged by (`bench.observer.resources.growth`): the resources, the
state stores' memory and the size of their data (Spark's progress, micro-batch mode: the operators'
`memoryUsedBytes`, RocksDB's memtables, block cache and table readers; their `rocksdbSstFileSize`,
the live SST files), the batch time and the batches' time per row they read
(`bench.observer.observer.batch_us_per_row`). With both of each pair, a state store memory that
grows over data that does not is a cache filling, not state, and a batch time that grows while the
time per row does not is batches holding more rows, not costing more."""


def clock_column(frame: pd.DataFrame) -> str | None:
    """The clock column a metrics frame has values in (CLOCK_COLUMNS, in that order), or None."""
    return next((c for c in CLOCK_COLUMNS if c in frame.columns and frame[c].notna().any()), None)


def elapsed_s(frame: pd.DataFrame, tick_ms) -> pd.Series:
    """Seconds since the run's clock started, per row: `duration_ms / 1000` when every row has it,
    else from the clock column with the first tick ending one tick (`tick_ms`, ms) after the start,
    else the row number (1, 2, ...)."""
    if "duration_ms" in frame.columns:
        duration = pd.to_numeric(frame["duration_ms"], errors="coerce")
        if duration.notna().all():
            return duration / 1000.0
    clock = clock_column(frame)
    if clock is None:
        return pd.Series(np.arange(1, len(frame) + 1, dtype=float), index=frame.index)
    values = pd.to_numeric(frame[clock], errors="coerce").astype(float)
    first = values.first_valid_index()
    origin = values[first]
    if pd.notna(tick_ms) and "tick" in frame.columns:
        # a tick's clock is the end of the tick: the first row ends (tick + 1) ticks after the start
        origin -= (int(frame.loc[first, "tick"]) + 1) * float(tick_ms)
    return (values - origin) / 1000.0


def is_list_column(col: pd.Series) -> bool:
    """Whether an object column holds one list (or array) per cell, e.g. a tick's per-worker shares."""
    if col.dtype != object:
        return False
    first = col.dropna()
    return len(first) > 0 and isinstance(first.iloc[0], list | tuple | np.ndarray)


def read_ticks(row) -> pd.DataFrame | None:
    """One run's metrics.parquet, one row per observer tick, in tick order, with `elapsed_s`.

    Args: row: the run's row of `load_runs`: its `path` and `tick_ms`; `mode`, `dataset` and
        `experiment_id` become columns, and `run_id`, `grouping`, `workers` when the file lacks them.
    Returns: None without metrics.parquet; figures written as None become numbers (NaN), and
        +-inf (throughput before the first whole second) NaN.
    """
    path = Path(row["path"]) / "metrics.parquet"
    if not path.is_file():
        return None
    frame = pd.read_parquet(path)
    if frame.empty:
        return frame
    order = "tick" if "tick" in frame.columns else clock_column(frame)
    if order is not None:
        frame = frame.sort_values(order, kind="stable").reset_index(drop=True)
    if "tick" not in frame.columns:
        frame["tick"] = np.arange(len(frame))
    frame["elapsed_s"] = elapsed_s(frame, row.get("tick_ms"))
    for col in frame.columns:
        if frame[col].dtype == object and not is_list_column(frame[col]) and col not in ("run_id", "grouping"):
            numeric = pd.to_numeric(frame[col], errors="coerce")
            if numeric.notna().sum() == frame[col].notna().sum() and frame[col].notna().any():
                frame[col] = numeric  # None-padded figures (e.g. latency before the first output)
        if frame[col].dtype.kind == "f":  # +inf throughput before the first whole second (Q21): a gap
            frame[col] = frame[col].replace([np.inf, -np.inf], np.nan)
    for col, value in (("run_id", row["run_id"]), ("grouping", row["grouping"]), ("workers", row["workers"])):
        if col not in frame.columns:
            frame[col] = value
    frame["mode"] = row["mode"]
    frame["dataset"] = row["dataset"]
    frame["experiment_id"] = row["experiment_id"]
    return frame
