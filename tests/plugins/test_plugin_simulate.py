"""`bench simulate` runs a plugin grouping like a built-in one, named by its entry point or its
`module:Class` spec: exact totals, and the golden stream's per-worker counts of its golden test."""

from __future__ import annotations

import json

from bench.__main__ import main as bench_main
from tests.plugins.conftest import TOY_NAME, TOY_SPEC
from tests.plugins.test_plugin_golden import GOLDEN


def summaries(folder) -> dict[tuple[str, int], dict]:
    out = {}
    for path in folder.glob("*/summary.json"):
        summary = json.loads(path.read_text())
        out[(summary["grouping"], summary["workers"])] = summary
    return out


def test_simulate_runs_the_plugin_by_its_entry_point_name(toy_plugin, tmp_path, monkeypatch, capsys):
    monkeypatch.setattr("bench.results.record.RESULTS_DIR", tmp_path)
    assert bench_main(["simulate", "--dataset", "GOLDEN_SKEW", "--grouping", "round_robin_key,KEY",
                       "--workers", "10", "--splitters", "10", "--experiment-id", "toy", "--no-progress"]) == 0
    assert TOY_NAME in capsys.readouterr().out
    runs = summaries(tmp_path)
    assert set(runs) == {(TOY_NAME, 10), ("KEY", 10)}
    exact = runs[(TOY_NAME, 10)]["exact"]
    counts, pairs, _, _ = GOLDEN[(10, 10)]
    assert exact["total_count"] == sum(exact["worker_loads"]) == 60_000 == runs[("KEY", 10)]["exact"]["total_count"]
    assert exact["worker_loads"] == exact["worker_tuples"] == counts
    assert (exact["pairs"], exact["keys"]) == (pairs, 201)


def test_simulate_runs_the_plugin_by_its_module_class_spec(toy_plugin, tmp_path, monkeypatch):
    monkeypatch.setattr("bench.results.record.RESULTS_DIR", tmp_path)
    assert bench_main(["simulate", "--dataset", "GOLDEN_SKEW", "--grouping", TOY_SPEC, "--workers", "5",
                       "--splitters", "1", "--param", "first_worker=0", "--no-progress"]) == 0
    [(grouping, workers)] = runs = summaries(tmp_path)
    assert (grouping, workers) == (TOY_SPEC, 5)
    assert runs[(grouping, workers)]["exact"]["worker_loads"] == GOLDEN[(5, 1)][0]
    [record] = [p for p in tmp_path.iterdir() if p.name != "sweeps"]
    assert "-toy_groupings-roundrobinkeygrouping-sim-golden_skew-" in record.name  # ':' has no place in a run id


def test_simulate_names_an_unknown_grouping_and_the_installed_plugins(toy_plugin, capsys):
    assert bench_main(["simulate", "--dataset", "GOLDEN_SKEW", "--grouping", "FIELDS", "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: unknown grouping 'FIELDS'") and "ROUND_ROBIN_KEY" in err
