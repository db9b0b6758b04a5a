"""`bench simulate` reproduces the published reference scenarios and writes run records."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from bench.__main__ import main as bench_main
from bench.simulate.engine import figures, route_table
from bench.simulate.sources import VirtualClock, from_dataset
from datasets import get_dataset

# dkg-reference.md §15.1: (grouping, n, S) -> per-task tuple counts, STD_DEV, (pairs, keys)
PUBLISHED = {
    ("SHUFFLE", 5, 1): ([12000] * 5, 0.0, (1005, 201)),
    ("KEY", 5, 1): ([50437, 1812, 2725, 2758, 2268], 32.0360, (201, 201)),
    ("PARTIAL_KEY", 5, 1): ([25113, 25114, 3257, 3258, 3258], 17.8452, (272, 201)),
    ("DYNAMIC_KEY", 5, 1): ([14269, 13801, 13800, 13799, 4331], 6.3980, (369, 201)),
    ("SHUFFLE", 10, 10): ([6000] * 10, 0.0, (2006, 201)),
    ("KEY", 10, 10): ([1208, 840, 1171, 1705, 1298, 49229, 972, 1554, 1053, 970], 24.0199, (201, 201)),
    ("PARTIAL_KEY", 10, 10): ([1405, 1386, 1398, 1408, 1401, 24404, 24403, 1405, 1401, 1389], 15.3363, (329, 201)),
    ("DYNAMIC_KEY", 10, 10): ([8993, 1339, 1237, 1632, 1383, 9404, 9012, 9000, 9000, 9000], 6.2677, (411, 201)),
}


@pytest.fixture(scope="module")
def golden_tables():
    dataset = get_dataset("GOLDEN_SKEW")
    return {s: from_dataset(dataset, s, VirtualClock())[0] for s in (1, 10)}


@pytest.mark.parametrize("scenario", sorted(PUBLISHED), ids=lambda s: f"{s[0]}-n{s[1]}-s{s[2]}")
def test_golden_skew_reproduces_the_published_scenario(golden_tables, scenario):
    grouping, n, s = scenario
    counts, std_dev, (pairs, keys) = PUBLISHED[scenario]
    table = golden_tables[s]
    workers, _ = route_table(table, grouping, n, s)
    got = figures(table, workers, n)
    assert got.worker_tuples == counts
    assert got.worker_loads == counts  # every count is 1 on the golden stream
    assert round(got.std_dev, 4) == pytest.approx(std_dev, abs=5e-5)
    assert (got.distinct_pairs, got.distinct_keys) == (pairs, keys)
    assert got.dist_cost == pairs / keys


def test_dynamic_key_final_pool_map_at_instance_0(golden_tables):
    """§15.2: final pool maps of instance 0."""
    _, instances = route_table(golden_tables[1], "DYNAMIC_KEY", 5, 1)
    assert instances[0].pool_sizes() == {"Turkey": 4}
    _, instances = route_table(golden_tables[10], "DYNAMIC_KEY", 10, 10)
    assert instances[0].pool_sizes() == {"K000": 5, "K009": 3, "K060": 3, "K076": 3, "K125": 3, "Turkey": 6}


def test_the_cli_writes_one_run_record_per_point_and_a_sweep_figure(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr("bench.results.record.RESULTS_DIR", tmp_path)
    code = bench_main([
        "simulate", "--dataset", "GOLDEN_SKEW", "--grouping", "KEY,DYNAMIC_KEY", "--workers", "5,10",
        "--splitters", "1", "--experiment-id", "golden-sweep", "--plot", "--no-progress",
    ])
    assert code == 0
    out = capsys.readouterr().out
    runs = sorted(p for p in tmp_path.iterdir() if p.is_dir() and p.name != "sweeps")
    assert len(runs) == 4
    for run in runs:
        info = json.loads((run / "run.json").read_text())
        summary = json.loads((run / "summary.json").read_text())
        ticks = pd.read_parquet(run / "metrics.parquet")
        assert info["mode"] == "simulate" and info["experiment_id"] == "golden-sweep"
        assert info["dataset"]["records"] == 60_000 and info["git"]["commit"]
        exact = summary["exact"]
        assert exact["total_count"] == 60_000 and sum(exact["worker_loads"]) == 60_000
        # 300 virtual seconds at a 10 s tick: 30 ticks, the last one cumulative over everything
        assert len(ticks) == 30
        assert ticks["total_count"].iloc[-1] == 60_000
        assert ticks["window_count"].sum() == 60_000
        assert ticks["std_dev"].iloc[-1] == pytest.approx(exact["std_dev"])
        assert ticks["dist_cost"].iloc[-1] == pytest.approx(exact["dist_cost"])
        assert summary["reference"]["std_dev"] == pytest.approx(exact["std_dev"])
        assert list(ticks["worker_loads"].iloc[-1]) == exact["worker_loads"]
    summaries = [json.loads((r / "summary.json").read_text()) for r in runs]
    key5 = next(s for s in summaries if s["grouping"] == "KEY" and s["workers"] == 5)
    assert round(key5["exact"]["std_dev"], 4) == 32.036
    assert (tmp_path / "sweeps" / "golden-sweep.csv").is_file()
    assert (tmp_path / "sweeps" / "golden-sweep-golden_skew.png").stat().st_size > 10_000
    assert "DYNAMIC_KEY" in out and "6.3980" in out


@pytest.mark.parametrize("argv, message", [
    (["--dataset", "NO_SUCH_SET"], "NO_SUCH_SET"),
    (["--dataset", "GOLDEN_SKEW", "--grouping", "RANDOM"], "RANDOM"),
    (["--dataset", "GOLDEN_SKEW", "--param", "no_such_param=1", "--grouping", "KEY"], "no_such_param"),
])
def test_bad_names_are_clear_errors(argv, message, capsys):
    assert bench_main(["simulate", "--no-progress", *argv]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error:") and message in err
