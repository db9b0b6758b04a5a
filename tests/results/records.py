"""Run records for the results, compare, notebook and report tests, made by the real simulator.

`shared_records` simulates once per test session (4 groupings x 4 seeds of COUNTRY_SKEW_R80, 20,000
records, W=10, experiment `exp-a`) into a temporary folder, so every test reads the same small,
real records. For the tolerance tests, `write_stream_record` writes a stream record with the flat
fields of results/README.md, and `write_observer_record` one shaped like bench/run/summary.py's output
(figures nested in `exact`/`reference`/`latency` blocks, `time_ms`, per-worker lists per tick).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

GROUPINGS = ["SHUFFLE", "KEY", "PARTIAL_KEY", "DYNAMIC_KEY"]
SEEDS = (1, 2, 3, 4)
LENGTH = 20_000
WORKERS = 10
TICK_MS = 2_000
EXPERIMENT = "exp-a"

_cache: dict[str, Path] = {}


def simulate_into(root: Path, seeds=SEEDS, groupings=GROUPINGS, experiment_id: str = EXPERIMENT,
                  dataset: str = "COUNTRY_SKEW_R80", length: int = LENGTH, workers: int = WORKERS) -> list:
    """Run `bench simulate` in-process once per seed, writing records under `root`; returns the points."""
    from bench.simulate.runner import SimulationPlan, run
    from datasets import get_dataset

    points = []
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr("bench.results.record.RESULTS_DIR", root)
        for seed in seeds:
            params = {"length": length, "seed": seed}
            plan = SimulationPlan(
                dataset_name=dataset, dataset=get_dataset(dataset, **params), dataset_params=params,
                groupings=list(groupings), workers=[workers], tick_ms=TICK_MS,
                experiment_id=experiment_id, progress=False,
            )
            points += run(plan, log=lambda _msg: None)
    return points


def shared_records(tmp_path_factory) -> Path:
    """The session's simulated records folder (made on first use). Tests must not write into it."""
    if "sim" not in _cache:
        root = tmp_path_factory.mktemp("records")
        simulate_into(root)
        _cache["sim"] = root
    return _cache["sim"]


def write_stream_record(root: Path, run_id: str, grouping: str, seed: int = 0, workers: int = 4,
                        experiment_id: str = "stream-exp", ticks: int = 6, with_summary: bool = True) -> Path:
    """A record shaped like the streaming run's: throughput, duration and latency fields included."""
    from bench.results.record import RunRecord

    rng = np.random.default_rng(seed)
    loads = rng.integers(900, 1100, size=workers)
    loads[0] += {"KEY": 6000, "PARTIAL_KEY": 3000}.get(grouping, 0)
    total = int(loads.sum())
    record = RunRecord(run_id, root)
    record.write_run("stream", {"grouping": grouping, "workers": workers, "splitters": 2, "tick_ms": 1000,
                                "grouping_params": {}, "master": "local[*]"},
                     {"name": "COUNTRY_SKEW_R80", "params": {"seed": seed}, "records": total, "tuples": total,
                      "distinct_keys": 50, "dead_letters": {"count": 0, "first": []}},
                     extra={"experiment_id": experiment_id})
    rows = []
    for tick in range(ticks):
        share = 100.0 * loads / total
        rows.append({"tick": tick, "clock_ms": 1_700_000_000_000 + 1000 * (tick + 1),
                     "total_count": total * (tick + 1) // ticks,
                     "std_dev": float(np.std(share)), "std_dev_window": float(np.std(share)), "dist_cost": 1.5,
                     "max_mean_imbalance": float(loads.max() / loads.mean()),
                     "throughput_ratio": float("inf") if tick == 0 else 1000.0 + rng.normal(0, 20),
                     "duration_ms": 1000 * (tick + 1), "latency_p50_ms": 40 + rng.normal(0, 2),
                     "latency_p99_ms": 120 + rng.normal(0, 5), "batch_duration_ms": 300.0,
                     **{f"load_share_{w}": share[w] for w in range(workers)},
                     "run_id": run_id, "grouping": grouping, "workers": workers})
    record.write_metrics(rows)
    if with_summary:
        share = (100.0 * loads / total).tolist()
        record.write_summary({"mode": "stream", "grouping": grouping, "dataset": "COUNTRY_SKEW_R80",
                              "workers": workers, "splitters": 2, "records": total, "dead_letters": 0,
                              "total_count": total, "tuples": total, "worker_loads": loads.tolist(),
                              "worker_tuples": loads.tolist(), "std_dev": float(np.std(share)),
                              "dist_cost": 1.5, "max_mean_imbalance": float(loads.max() / loads.mean()),
                              "load_share_percent": share, "throughput_ratio": 1000.0 + rng.normal(0, 20),
                              "duration_ms": 1000 * ticks, "latency_p50_ms": 40 + rng.normal(0, 2),
                              "latency_p99_ms": 120 + rng.normal(0, 5)})
    return record.path


def write_observer_record(root: Path, run_id: str, grouping: str, seed: int = 0, workers: int = 4,
                          ticks: int = 5, status: str = "completed", input_conditions: dict | None = None) -> Path:
    """A record in the shape bench/run/ and bench/observer write (no experiment_id, nested summary)."""
    from bench.results.record import RunRecord

    rng = np.random.default_rng(seed)
    loads = rng.integers(900, 1100, size=workers)
    loads[0] += {"KEY": 6000, "PARTIAL_KEY": 3000}.get(grouping, 0)
    total = int(loads.sum())
    share = (100.0 * loads / total).tolist()
    std = float(np.std(share))
    record = RunRecord(run_id, root)
    record.write_run("stream", {"kind": "stream", "master": "local[2]", "rate": 2000, "limit": total,
                                "partitions": 2, "observer_tick_s": 2.0, "grouping": grouping,
                                "workers": workers, "splitters": 2, "dataset": "COUNTRY_SKEW_R80"},
                     {"name": "COUNTRY_SKEW_R80", "fingerprint": {"seed": seed}}, {"resumed": False, "status": status})
    rows = []
    for tick in range(ticks):
        seen = tick > 0  # the first tick comes before the first window: no figures yet
        rows.append({"run_id": run_id, "tick": tick, "time_ms": 1_700_000_000_000 + 2000 * tick,
                     "std_dev": std if seen else None, "dist_cost": 1.25 if seen else None,
                     "throughput_ratio": 800.0 + 10 * tick if seen else None,
                     "total_count": total * tick // (ticks - 1) if seen else None,
                     "duration_ms": 2000 * tick if seen else None,
                     "max_mean_imbalance": float(loads.max() / loads.mean()) if seen else None,
                     "window_std_dev": std if seen else None, "window_count": total // (ticks - 1),
                     "keys": 50, "pairs": 60, "worker_loads": (loads * tick // (ticks - 1)).tolist(),
                     "worker_shares": share if seen else [0.0] * workers, "records": total, "malformed": 0,
                     "dropped_by_watermark": 0, "batches": tick, "last_batch_id": tick - 1 if seen else None,
                     "processed_rows_per_s": 1500.0 + rng.normal(0, 50) if seen else None,
                     "batch_duration_ms": 400.0, "state_rows": 100, "state_memory_bytes": 10_000,
                     "aggregated_count": total * tick // (ticks - 1),
                     "latency_p50_ms": 900 + rng.normal(0, 20) if seen else None,
                     "latency_p99_ms": 1800 + rng.normal(0, 50) if seen else None,
                     "latency_max_ms": 2500.0 if seen else None, "hottest_keys": '[["Turkey", 100]]'})
    record.write_metrics(pd.DataFrame(rows))
    reference = {"std_dev": std, "dist_cost": 1.25, "throughput_ratio": 840.0, "total_count": total,
                 "duration_ms": 2000 * (ticks - 1)}
    exact = {"total_count": total, "worker_loads": loads.tolist(), "worker_tuples": loads.tolist(),
             "std_dev": std, "dist_cost": 1.25, "max_mean_imbalance": float(loads.max() / loads.mean()),
             "keys": 50, "pairs": 60}
    record.write_summary({"status": status, "error": None if status == "completed" else "boom", "resumed": False,
                          "grouping": grouping, "dataset": "COUNTRY_SKEW_R80", "workers": workers, "splitters": 2,
                          "topic": f"{run_id}.input", "reference": reference, "exact": exact,
                          "latency": {"latency_p50_ms": 900.0, "latency_p99_ms": 1800.0 + seed,
                                      "latency_max_ms": 2500.0},
                          "hottest_keys": [["Turkey", 100]], "records": total, "malformed": 0, "dead_letters": 0,
                          "split_weight": total, "produced_weight": total,
                          "checks": {"aggregated_equals_split": True, "aggregated_equals_produced": True},
                          "batches": ticks - 1, "ticks": ticks, "influx": None,
                          "distribution_topic": {"sent": 10, "errors": 0}, "output_errors": [],
                          "results": str(root / run_id),
                          **({"input": input_conditions} if input_conditions else {})})
    return record.path
