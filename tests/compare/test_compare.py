"""`bench compare` on real simulator records: figures (PNG + SVG), tables, notes; stream-shaped records too."""

from __future__ import annotations

import shutil

import pandas as pd
import pytest

from bench.__main__ import main
from bench.compare import FIGURES, build_comparison, select_runs
from bench.results import ResultsError, load_runs
from tests.results.records import EXPERIMENT, GROUPINGS, SEEDS, write_observer_record, write_stream_record

PNG = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def comparison(sim_records):
    runs, how = select_runs(sim_records)
    return build_comparison(runs, description=how)


def test_default_selection_is_newest_per_grouping_with_repetitions(sim_records):
    runs, how = select_runs(sim_records)
    assert len(runs) == len(GROUPINGS) * len(SEEDS)
    assert "COUNTRY_SKEW_R80, W=10, simulate" in how


def test_explicit_runs_and_experiment(sim_records):
    ids = load_runs(sim_records)["run_id"].tolist()[:2]
    runs, _ = select_runs(sim_records, run_ids=ids)
    assert runs["run_id"].tolist() == ids
    runs, how = select_runs(sim_records, experiment_id=EXPERIMENT, workers=10)
    assert len(runs) == len(GROUPINGS) * len(SEEDS) and EXPERIMENT in how
    with pytest.raises(ResultsError, match="no complete run"):
        select_runs(sim_records, experiment_id=EXPERIMENT, workers=99)


def test_table_medians_iqr_and_tests(comparison):
    summary = comparison.summary.set_index("label")
    assert sorted(summary.index) == sorted(GROUPINGS)
    assert (summary["n"] == len(SEEDS)).all()
    assert comparison.metric_columns == ["std_dev", "dist_cost", "max_mean_imbalance"]
    std = comparison.runs.groupby("grouping")["std_dev"].median()
    assert summary.loc["KEY", "std_dev_median"] == pytest.approx(std["KEY"])
    assert summary.loc["KEY", "dist_cost_median"] == 1.0
    # KEY keeps Turkey's 80 % on one worker; the others split it; SHUFFLE balances all
    assert summary.loc["KEY", "std_dev_median"] > max(summary.loc[g, "std_dev_median"] for g in
                                                      ("PARTIAL_KEY", "DYNAMIC_KEY", "SHUFFLE"))
    assert summary.loc["SHUFFLE", "std_dev_median"] < 0.5
    # 4 repetitions each: KEY and DYNAMIC_KEY are far apart on every seed, so the test can say so
    by = comparison.tests.set_index(["metric", "a", "b"])
    assert by.loc[("std_dev", "DYNAMIC_KEY", "KEY"), "significant"] == True  # noqa: E712
    assert by.loc[("std_dev", "DYNAMIC_KEY", "KEY"), "p_value"] == pytest.approx(2 / 70)


def test_write_figures_and_tables(comparison, tmp_path):
    written = comparison.write(tmp_path / "out")
    drawn = ["std_dev_over_time", "load_share", "dist_cost", "throughput_over_time"]
    assert [k for k in written if k != "tables"] == drawn
    for name in drawn:
        png, svg = written[name]
        assert png.read_bytes().startswith(PNG) and png.stat().st_size > 10_000
        assert "<svg" in svg.read_text()[:2000]
    md, csv, sig = written["tables"]
    text = md.read_text()
    for grouping in GROUPINGS:
        assert f"| {grouping} | {len(SEEDS)} |" in text
    assert "Pairwise Mann-Whitney U" in text
    assert "latency over time: not drawn" in text  # simulate records carry no latency: a note, no crash
    table = pd.read_csv(csv)
    assert {"label", "n", "std_dev_median", "std_dev_q1", "std_dev_q3", "std_dev_iqr", "run_ids"} <= set(table.columns)
    tests = pd.read_csv(sig)
    assert {"metric", "a", "b", "p_value", "significant", "verdict"} <= set(tests.columns)
    assert len(tests) == 6 * 3  # 6 pairs of groupings x 3 figures


def test_stream_records_add_throughput_and_latency(tmp_path):
    root = tmp_path / "results"
    for g in ("KEY", "DYNAMIC_KEY"):
        for seed in range(3):
            write_stream_record(root, f"stream-{g.lower()}-{seed}", g, seed=seed)
    runs, _ = select_runs(root)
    c = build_comparison(runs)
    assert c.metric_columns == ["std_dev", "dist_cost", "max_mean_imbalance", "throughput_ratio",
                                "latency_p50_ms", "latency_p99_ms"]
    figs = c.figures()
    assert set(figs) == set(FIGURES)
    assert not [n for n in c.notes if "not drawn" in n]
    md = c.markdown()
    assert "throughput (rec/s)" in md and "latency p99 (ms)" in md
    assert "virtual clock" not in md  # that note is for simulate runs


def test_simulated_throughput_is_not_tabulated(comparison):
    assert comparison.runs["throughput_ratio"].notna().all()  # the records carry the replay rate ...
    assert "throughput_ratio" not in comparison.metric_columns  # ... which is no measurement
    assert "virtual clock's replay rate" in comparison.markdown()


def test_observer_shaped_records_compare(tmp_path):
    root = tmp_path / "results"
    for g in ("KEY", "DYNAMIC_KEY"):
        for seed in range(2):
            write_observer_record(root, f"obs-{g.lower()}-{seed}", g, seed=seed)
    runs, _ = select_runs(root, run_ids=["obs-key-0", "obs-key-1", "obs-dynamic_key-0"])
    c = build_comparison(runs)
    # no experiment_id: each run is its own group, never a repetition of another
    assert sorted(c.summary["label"]) == ["DYNAMIC_KEY", "KEY (run obs-key-0)", "KEY (run obs-key-1)"]
    assert "latency_p99_ms" in c.metric_columns and "throughput_ratio" in c.metric_columns
    assert set(c.figures()) == set(FIGURES)


LIVE = {"mode": "live", "rate": 500.0, "paced": True, "topic": "t"}
RECORDED = {"mode": "recorded", "rate": None, "paced": False, "topic": "t"}


@pytest.mark.slow  # two `bench compare` CLI runs that draw and save every figure: 6 s of CPU (tests/tiers.py)
def test_paced_and_unpaced_runs_are_refused_unless_allowed_and_then_marked(tmp_path, capsys):
    root = tmp_path / "results"
    write_observer_record(root, "obs-key-live", "KEY", input_conditions=LIVE)
    write_observer_record(root, "obs-dkg-live", "DYNAMIC_KEY", input_conditions=LIVE)
    write_observer_record(root, "obs-dkg-rec", "DYNAMIC_KEY", seed=1, input_conditions=RECORDED)
    runs, _ = select_runs(root, run_ids=["obs-key-live", "obs-dkg-live", "obs-dkg-rec"])
    with pytest.raises(ResultsError, match=r"different input conditions \(live 500 rec/s, recorded\)"):
        build_comparison(runs)
    c = build_comparison(runs, allow_mixed=True)
    assert sorted(c.summary["label"]) == ["DYNAMIC_KEY (run obs-dkg-live) [live 500 rec/s]",
                                          "DYNAMIC_KEY (run obs-dkg-rec) [recorded]", "KEY [live 500 rec/s]"]
    assert "MIXED input conditions" in c.markdown()
    assert main(["compare", "obs-key-live", "obs-dkg-rec", "--root", str(root), "--out", str(tmp_path / "o1")]) == 2
    assert "different input conditions" in capsys.readouterr().err
    assert main(["compare", "obs-key-live", "obs-dkg-rec", "--root", str(root), "--out", str(tmp_path / "o2"),
                 "--allow-mixed"]) == 0

    same, _ = select_runs(root, run_ids=["obs-key-live", "obs-dkg-live"])
    c = build_comparison(same)
    assert "Input conditions of the stream runs: live 500 rec/s (all the same)." in c.markdown()
    assert sorted(c.summary["label"]) == ["DYNAMIC_KEY", "KEY"]


@pytest.mark.slow  # `bench compare` draws and saves every figure as PNG and SVG: 4 s of CPU (tests/tiers.py)
def test_cli_compare_writes_everything(sim_records, tmp_path, capsys):
    out = tmp_path / "cmp"
    assert main(["compare", "--root", str(sim_records), "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "### COUNTRY_SKEW_R80, W=10, simulate" in printed
    assert sorted(p.name for p in out.iterdir()) == sorted(
        [f"{n}.{e}" for n in ("std_dev_over_time", "load_share", "dist_cost", "throughput_over_time")
         for e in ("png", "svg")] + ["comparison.md", "comparison.csv", "significance.csv"])


@pytest.mark.slow  # `bench compare` draws and saves every figure as PNG and SVG: 4 s of CPU (tests/tiers.py)
def test_cli_default_out_is_under_results_compare(sim_records, tmp_path, capsys):
    root = tmp_path / "results"
    shutil.copytree(sim_records, root)
    assert main(["compare", "--root", str(root), "--experiment", EXPERIMENT]) == 0
    (folder,) = (root / "compare").iterdir()
    assert (folder / "comparison.md").is_file()
    assert len(load_runs(root)) == len(GROUPINGS) * len(SEEDS)  # the output is not mistaken for a run


@pytest.mark.parametrize("argv, message", [
    (["compare", "no-such-run"], "unknown run id"),
    (["compare", "--dataset", "NYC_FLIGHTS"], "no complete run with dataset=NYC_FLIGHTS"),
    (["compare", "--experiment", "nope"], "no run of experiment 'nope'"),
    (["compare", "x", "--dataset", "D"], "not both"),
])
def test_cli_bad_input_is_one_line_exit_2(sim_records, capsys, argv, message):
    assert main([*argv, "--root", str(sim_records)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: ") and message in err and "\n" not in err
