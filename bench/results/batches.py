"""A stream run's per-batch files read back: the observer's batch journal
(`<run>/observer/progress.jsonl`) and a sink's batch files (`aggregates/`, `dlq/`:
`batch-<id>.parquet`), with their timestamp columns as epoch milliseconds.

The topology writes them (`bench.topology.sink`; the observer journals its batches); the observer,
the run's summary and compare read them here, without importing the engine that wrote them.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd


def journal_batches(run_dir) -> dict[int, dict]:
    """The observer's batch journal of a run record (`<run_dir>/observer/progress.jsonl`): one
    figures dict per batch id, the last line of a batch id winning (a resumed run may journal a
    batch again); empty when the run has no journal."""
    journal = Path(run_dir) / "observer" / "progress.jsonl"
    if not journal.is_file():
        return {}
    batches = {}
    for line in journal.read_text().splitlines():
        if line.strip():
            fig = json.loads(line)
            batches[fig["batch_id"]] = fig
    return batches


def read_batches(folder: Path) -> pd.DataFrame:
    """All batch files of a sink folder, one frame (empty if none)."""
    files = sorted(Path(folder).glob("batch-*.parquet"))
    frames = [pd.read_parquet(f) for f in files]
    frames = [f for f in frames if len(f)]
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


def timestamps_ms(series: pd.Series) -> np.ndarray:
    """Epoch milliseconds (int64) of a pandas timestamp column, naive (UTC) or tz-aware."""
    if getattr(series.dt, "tz", None) is not None:
        series = series.dt.tz_convert("UTC").dt.tz_localize(None)
    return series.to_numpy(dtype="datetime64[ms]").astype(np.int64)
