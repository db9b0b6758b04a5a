"""After the nemesis: the run's results against what its input says they must be.

Each check is computed from a source the run did not write: the dataset file read again for the
per-key weights (`Dataset.key_stats`), the recorded input topic for its record count, `bench
simulate` on that topic for the per-worker loads, InfluxDB's own count of the run's points. Like
Jepsen's checkers, the verdict reads only what is durable after the run (the aggregates topic, the
run record), never the run's console.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

import pandas as pd

from bench.observer.influx import observer_points
from bench.topology.sink import read_aggregates
from datasets import get_dataset
from producers import inspect_topic

ROOT = Path(__file__).resolve().parents[2]

RECORD_FILES = ("run.json", "summary.json", "metrics.parquet")


def count_differences(expected: Counter, counted: Counter) -> tuple[int, int]:
    """(lost, duplicated): the weight missing from `counted` and the weight it has too much, per key.

    Args: expected, counted: key -> weighted count.
    Returns: two sums over keys, each >= 0; (0, 0) exactly when the two are equal. A key counted
        twice and another lost do not cancel out, as they would in a total.
    """
    lost = sum(max(0, w - counted.get(k, 0)) for k, w in expected.items())
    duplicated = sum(max(0, w - expected.get(k, 0)) for k, w in counted.items())
    return lost, duplicated


def aggregated_weights(bootstrap_servers: str, run_id: str) -> Counter:
    """key -> weighted count over every window of `<run_id>.aggregates` (its last value per window and key)."""
    out: Counter = Counter()
    for window_key, value in read_aggregates(bootstrap_servers, f"{run_id}.aggregates").items():
        out[window_key.split("|", 1)[1]] += int(value["count"])
    return out


def influx_points(influx_url: str, database: str, run_id: str) -> int:
    """InfluxDB 1.8's count of the run's `observer` points (`bench.observer.influx.observer_points`).
    Raises RuntimeError when InfluxDB does not answer."""
    points = observer_points(influx_url, database, run_id, timeout_s=30.0)
    if points is None:
        raise RuntimeError(f"InfluxDB at {influx_url} did not answer the count of {run_id}'s points")
    return points


def simulated(config: dict, schedule: str | None) -> tuple[list[int], pd.DataFrame | None]:
    """`bench simulate --from-topic` on the run's recorded topic with its grouping, W, S and parameters
    (and its rescale schedule, as STOP_THE_WORLD: every protocol ends in the same state): its
    per-worker loads and, with a schedule, its final per-key worker state. Raises RuntimeError when
    the simulator fails."""
    argv = [sys.executable, "-m", "bench", "simulate", "--from-topic", config["topic"],
            "--bootstrap-servers", config["bootstrap_servers"], "--dataset", config["dataset"],
            "--grouping", config["grouping"], "--workers", str(config["workers"]),
            "--splitters", str(config["splitters"]), "--run-id", "nemesis-simulated", "--no-progress"]
    for name, value in (config.get("dataset_params") or {}).items():
        argv += ["--dataset-param", f"{name}={value}"]
    for name, value in (config.get("grouping_params") or {}).items():
        argv += ["--param", f"{name}={value}"]
    if schedule:
        argv += ["--rescale", schedule, "--protocol", "STOP_THE_WORLD"]
    with tempfile.TemporaryDirectory(prefix="nemesis-simulate-") as folder:
        done = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True,
                              env={**os.environ, "BENCH_RESULTS_DIR": folder})
        if done.returncode != 0:
            raise RuntimeError(f"bench simulate failed (exit {done.returncode}): {done.stderr[-2000:]}")
        point = Path(folder) / "nemesis-simulated"
        loads = json.loads((point / "summary.json").read_text())["exact"]["worker_loads"]
        state = pd.read_parquet(point / "state.parquet") if schedule else None
    return loads, state


def check_run(folder: Path, influx_database: str, schedule: str | None) -> dict:
    """The verdict on the run whose record is `folder` (results/<run_id>):

    - `completed`: summary.json says "completed";
    - `record_complete`: run.json, summary.json and metrics.parquet are there and none of the run's
      own checks (summary.json `checks`) is false;
    - `input_complete`: the recorded input topic holds exactly the run's `limit` records;
    - `lost`, `duplicated`: weighted tuples, per key, of the aggregates against the dataset file's
      first `limit` records read again (both 0: `exactly_once`);
    - `loads_equal_simulated` (no rescale): the per-worker loads equal the simulator's on the same
      topic; with a rescale, `state_equal_simulated`: the final per-key worker state does (a live
      switch falls on a batch the simulator does not know, so the loads before it may differ);
    - `influx_points`, `metrics_rows` (`influx_equals_metrics`).

    `ok` is true when every check holds. Never raises for a failed check: a check that cannot be
    computed (an unreachable service) is false with its `errors` entry.
    """
    verdict: dict = {"errors": {}}
    summary = _json(folder / "summary.json")
    run = _json(folder / "run.json")
    verdict["completed"] = (summary or {}).get("status") == "completed"
    verdict["record_complete"] = (all((folder / name).exists() for name in RECORD_FILES)
                                  and all(v is not False for v in ((summary or {}).get("checks") or {}).values()))
    if run is None:
        verdict["errors"]["run.json"] = "missing"
        verdict["ok"] = False
        return verdict
    config = run["config"]
    limit = int(config["limit"])

    def attempt(name: str, compute) -> None:
        try:
            compute()
        except Exception as e:  # the verdict says which check could not be made, and why
            verdict[name] = False
            verdict["errors"][name] = f"{type(e).__name__}: {e}"

    def input_check():
        state = inspect_topic(config["bootstrap_servers"], config["topic"], limit, int(config["partitions"]))
        verdict["input_records"] = state.present
        verdict["input_complete"] = state.present == limit

    def exactness():
        expected = get_dataset(config["dataset"], **(config.get("dataset_params") or {})).key_stats(limit).weights
        counted = aggregated_weights(config["bootstrap_servers"], run["run_id"])
        verdict["expected_weight"], verdict["counted_weight"] = sum(expected.values()), sum(counted.values())
        verdict["lost"], verdict["duplicated"] = count_differences(expected, counted)
        verdict["exactly_once"] = verdict["lost"] == verdict["duplicated"] == 0

    def loads():
        simulated_loads, simulated_state = simulated(config, schedule)
        verdict["simulated_loads"] = simulated_loads
        verdict["loads"] = (summary or {}).get("exact", {}).get("worker_loads")
        if schedule is None:
            verdict["loads_equal_simulated"] = verdict["loads"] == simulated_loads
        else:
            state = pd.read_parquet(folder / "state.parquet")
            verdict["state_equal_simulated"] = _frames_equal(state, simulated_state)

    def influx():
        verdict["metrics_rows"] = len(pd.read_parquet(folder / "metrics.parquet"))
        verdict["influx_points"] = influx_points(config["influx_url"], influx_database, run["run_id"])
        verdict["influx_equals_metrics"] = verdict["influx_points"] == verdict["metrics_rows"]

    for name, compute in (("input_complete", input_check), ("exactly_once", exactness),
                          ("loads_equal_simulated" if schedule is None else "state_equal_simulated", loads),
                          ("influx_equals_metrics", influx)):
        attempt(name, compute)
    keys = ("completed", "record_complete", "input_complete", "exactly_once",
            "loads_equal_simulated" if schedule is None else "state_equal_simulated", "influx_equals_metrics")
    verdict["ok"] = all(verdict.get(k) is True for k in keys)
    return verdict


def describe(verdict: dict) -> list[str]:
    """The verdict as console lines."""
    def mark(key):
        return "yes" if verdict.get(key) is True else "NO"
    lines = [
        f"completed: {mark('completed')}; run record complete: {mark('record_complete')}",
        f"input: {verdict.get('input_records')} records in the topic ({mark('input_complete')})",
        f"exactly once: {mark('exactly_once')} (counted {verdict.get('counted_weight')} of "
        f"{verdict.get('expected_weight')}; lost {verdict.get('lost')}, counted twice {verdict.get('duplicated')})",
    ]
    if "state_equal_simulated" in verdict:
        lines.append(f"final worker state equal to bench simulate's: {mark('state_equal_simulated')}")
    else:
        lines.append(f"per-worker loads equal to bench simulate's: {mark('loads_equal_simulated')} "
                     f"({verdict.get('loads')} vs {verdict.get('simulated_loads')})")
    lines.append(f"InfluxDB points {verdict.get('influx_points')} = metrics.parquet rows "
                 f"{verdict.get('metrics_rows')}: {mark('influx_equals_metrics')}")
    lines += [f"could not check {k}: {v}" for k, v in verdict["errors"].items()]
    return lines


def _json(path: Path) -> dict | None:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def _frames_equal(a: pd.DataFrame, b: pd.DataFrame) -> bool:
    try:
        pd.testing.assert_frame_equal(a, b, check_dtype=False)
        return True
    except AssertionError:
        return False
