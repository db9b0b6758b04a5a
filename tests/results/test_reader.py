"""The reader API over real simulator records, stream-shaped records, and broken folders."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pandas as pd
import pytest

from bench.results import (
    ResultsError,
    latest_per_grouping,
    load_metrics,
    load_runs,
    load_share_ticks,
    load_worker_loads,
    repetitions,
)
from bench.results.reader import RUN_COLUMNS, flatten_summary
from tests.results.records import (
    EXPERIMENT,
    GROUPINGS,
    SEEDS,
    TICK_MS,
    WORKERS,
    write_observer_record,
    write_stream_record,
)


def test_load_runs_one_row_per_record(sim_records):
    runs = load_runs(sim_records)
    assert len(runs) == len(GROUPINGS) * len(SEEDS)
    assert list(runs.columns[: len(RUN_COLUMNS)]) == list(RUN_COLUMNS)
    assert set(runs["grouping"]) == set(GROUPINGS)
    assert (runs["mode"] == "simulate").all() and runs["complete"].all()
    assert (runs["experiment_id"] == EXPERIMENT).all() and (runs["workers"] == WORKERS).all()
    assert runs["created_utc"].is_monotonic_increasing
    assert str(runs["created_utc"].dt.tz) == "UTC"
    # figures are the summary's, untouched (the exact block's when the summary nests them)
    row = runs.iloc[0]
    flat = flatten_summary(json.loads((sim_records / row["run_id"] / "summary.json").read_text()))
    for figure in ("std_dev", "dist_cost", "max_mean_imbalance", "total_count", "distinct_pairs"):
        assert row[figure] == flat[figure], figure
    assert runs["latency_p99_ms"].isna().all() if "latency_p99_ms" in runs else True  # stream-only: absent
    assert json.loads(row["dataset_params"])["seed"] in SEEDS
    assert (runs["status"] == "completed").all()


def test_folders_without_run_json_are_skipped(sim_records, tmp_path):
    root = tmp_path / "results"
    shutil.copytree(sim_records, root)
    for other in ("sweeps", "compare/20260101T000000", "reports"):  # what the commands write beside runs
        (root / other).mkdir(parents=True)
        (root / other / "x.csv").write_text("a\n1\n")
    (root / "README.md").write_text("# Run records\n")
    assert len(load_runs(root)) == len(GROUPINGS) * len(SEEDS)


def test_results_dir_env_is_read_at_call_time(sim_records, monkeypatch):
    monkeypatch.setenv("BENCH_RESULTS_DIR", str(sim_records))
    assert len(load_runs()) == len(GROUPINGS) * len(SEEDS)


def test_run_ids_exact_prefix_and_order(sim_records):
    ids = load_runs(sim_records)["run_id"].tolist()
    picked = load_runs(sim_records, run_ids=[ids[3], ids[0][:-2]])
    assert picked["run_id"].tolist() == [ids[3], ids[0]]


def test_unknown_run_id_lists_close_names(sim_records):
    ids = load_runs(sim_records)["run_id"].tolist()
    typo = ids[0][:-1] + ("x" if ids[0][-1] != "x" else "y")
    with pytest.raises(ResultsError, match="unknown run id") as err:
        load_runs(sim_records, run_ids=[typo])
    assert ids[0] in str(err.value)


def test_ambiguous_prefix_is_an_error(sim_records):
    with pytest.raises(ResultsError, match="ambiguous"):
        load_runs(sim_records, run_ids=["2"])


def test_experiment_filter_and_unknown_experiment(sim_records):
    assert len(load_runs(sim_records, experiment_id=EXPERIMENT)) == len(GROUPINGS) * len(SEEDS)
    with pytest.raises(ResultsError, match="close: exp-a"):
        load_runs(sim_records, experiment_id="exp-b")


def test_missing_and_empty_folders(tmp_path):
    with pytest.raises(ResultsError, match="does not exist"):
        load_runs(tmp_path / "nope")
    (tmp_path / "compare").mkdir()
    with pytest.raises(ResultsError, match="no run records"):
        load_runs(tmp_path)


def test_load_metrics_is_tidy(sim_records):
    runs = load_runs(sim_records)
    metrics = load_metrics(runs)
    assert not [c for c in metrics.columns if c.startswith("load_share_")]
    assert set(metrics["run_id"]) == set(runs["run_id"])
    assert not metrics.duplicated(["run_id", "tick"]).any()
    for _, part in metrics.groupby("run_id"):
        assert part["elapsed_s"].iloc[0] == pytest.approx(TICK_MS / 1000)  # first tick ends one tick in
        assert part["elapsed_s"].is_monotonic_increasing
        assert part["total_count"].is_monotonic_increasing
    last = metrics.sort_values("tick").groupby("run_id").tail(1).set_index("run_id")
    # the last tick covers every tuple: it is the summary
    assert np.allclose(last.loc[runs["run_id"], "std_dev"], runs["std_dev"])
    assert {"mode", "dataset", "experiment_id"} <= set(metrics.columns)


def test_load_share_ticks_long_form(sim_records):
    runs = load_runs(sim_records).head(2)
    shares = load_share_ticks(runs)
    assert set(shares["worker"]) == set(range(WORKERS))
    sums = shares.groupby(["run_id", "tick"])["share_percent"].sum()
    assert np.allclose(sums, 100.0)


def test_load_worker_loads(sim_records):
    runs = load_runs(sim_records)
    loads = load_worker_loads(runs)
    assert len(loads) == len(runs) * WORKERS
    per_run = loads.groupby("run_id")
    assert np.allclose(per_run["share_percent"].sum(), 100.0)
    assert (per_run["load"].sum().loc[runs["run_id"]].to_numpy() == runs["total_count"].to_numpy()).all()
    top = loads[loads["rank"] == 0].set_index("run_id")["share_percent"]
    assert (top == per_run["share_percent"].max().loc[top.index]).all()
    key_top = loads[(loads["grouping"] == "KEY") & (loads["rank"] == 0)]["share_percent"]
    assert (key_top > 70).all()  # Turkey's 80 % of COUNTRY_SKEW_R80 sits on one worker under KEY


def test_latest_per_grouping_and_repetitions(sim_records):
    runs = load_runs(sim_records)
    latest = latest_per_grouping(runs)
    assert sorted(latest["grouping"]) == sorted(GROUPINGS)
    for _, row in latest.iterrows():
        same = runs[runs["grouping"] == row["grouping"]]
        assert row["created_utc"] == same["created_utc"].max()
    reps = repetitions(runs, latest)
    assert len(reps) == len(runs)
    with pytest.raises(ResultsError, match="no complete run with dataset=NYC_FLIGHTS"):
        latest_per_grouping(runs, dataset="NYC_FLIGHTS")


def test_stream_fields_are_used_when_present(sim_records, tmp_path):
    root = tmp_path / "results"
    shutil.copytree(sim_records, root)
    write_stream_record(root, "stream-key-1", "KEY", seed=1)
    write_stream_record(root, "stream-running", "DYNAMIC_KEY", seed=2, with_summary=False)
    runs = load_runs(root)
    stream = runs.set_index("run_id").loc["stream-key-1"]
    assert stream["mode"] == "stream" and stream["throughput_ratio"] > 0 and stream["latency_p99_ms"] > 0
    assert stream["duration_ms"] == 6000
    assert runs.loc[runs["mode"] == "simulate", "latency_p99_ms"].isna().all()
    running = runs.set_index("run_id").loc["stream-running"]
    assert not running["complete"] and pd.isna(running["std_dev"])
    # the newest run is incomplete: the default picks the newest *complete* one's dataset/W/mode
    latest = latest_per_grouping(runs)
    assert latest["run_id"].tolist() == ["stream-key-1"]
    metrics = load_metrics(runs[runs["mode"] == "stream"])
    part = metrics[metrics["run_id"] == "stream-key-1"]
    assert part["elapsed_s"].tolist() == [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]  # from duration_ms
    assert pd.isna(part["throughput_ratio"].iloc[0])  # +inf before the first second becomes a gap
    assert "latency_p99_ms" in metrics.columns
    both = load_metrics(runs)
    assert both.loc[both["mode"] == "simulate", "latency_p99_ms"].isna().all()


def test_unreadable_record_is_skipped_with_a_warning(sim_records, tmp_path):
    root = tmp_path / "results"
    shutil.copytree(sim_records, root)
    bad = root / "broken-run"
    bad.mkdir()
    (bad / "run.json").write_text("{not json")
    with pytest.warns(UserWarning, match="broken-run"):
        runs = load_runs(root)
    assert "broken-run" not in set(runs["run_id"])


def test_observer_shaped_records_are_read(tmp_path):
    """The shape bench/run/ writes: figures nested in blocks, time_ms, per-worker lists, a status."""
    root = tmp_path / "results"
    write_observer_record(root, "obs-key", "KEY", seed=1)
    write_observer_record(root, "obs-failed", "DYNAMIC_KEY", seed=2, status="failed")
    runs = load_runs(root).set_index("run_id")
    key = runs.loc["obs-key"]
    summary = json.loads((root / "obs-key" / "summary.json").read_text())
    assert key["std_dev"] == summary["exact"]["std_dev"]  # the exact block first
    assert key["reference_std_dev"] == summary["reference"]["std_dev"]  # every block kept, prefixed
    assert key["throughput_ratio"] == summary["reference"]["throughput_ratio"]
    assert key["latency_p99_ms"] == summary["latency"]["latency_p99_ms"]
    assert key["tick_ms"] == 2000  # from observer_tick_s
    assert key["status"] == "completed" and key["complete"]
    assert pd.isna(key["experiment_id"])
    failed = runs.loc["obs-failed"]
    assert failed["status"] == "failed" and not failed["complete"]
    assert latest_per_grouping(load_runs(root))["run_id"].tolist() == ["obs-key"]
    metrics = load_metrics(load_runs(root, run_ids=["obs-key"]))
    assert "worker_shares" not in metrics.columns and "worker_loads" not in metrics.columns
    assert metrics["elapsed_s"].tolist() == [2.0, 4.0, 6.0, 8.0, 10.0]  # time_ms; duration_ms has gaps
    assert metrics["latency_p99_ms"].dtype.kind == "f" and metrics["latency_p99_ms"].isna().sum() == 1
    shares = load_share_ticks(["obs-key"], root)
    assert len(shares) == 5 * 4 and np.allclose(shares[shares["tick"] > 0].groupby("tick")["share_percent"].sum(), 100)
    loads = load_worker_loads(["obs-key"], root)
    assert loads["load"].tolist() == summary["exact"]["worker_loads"]
