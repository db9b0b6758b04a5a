"""Run records under results/: writing (record.py), the environment they carry, and reading them back
(reader.py; one run's metrics.parquet: ticks.py)."""

from bench.results.reader import (
    HEADLINE,
    REPETITION_KEYS,
    ResultsError,
    flatten_summary,
    latency_columns,
    latest_per_grouping,
    load_metrics,
    load_runs,
    load_share_ticks,
    load_worker_loads,
    repetitions,
    resolve_run_id,
    results_root,
    run_folders,
)

__all__ = [
    "HEADLINE",
    "REPETITION_KEYS",
    "ResultsError",
    "flatten_summary",
    "latency_columns",
    "latest_per_grouping",
    "load_metrics",
    "load_runs",
    "load_share_ticks",
    "load_worker_loads",
    "repetitions",
    "resolve_run_id",
    "results_root",
    "run_folders",
]
