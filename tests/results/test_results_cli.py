"""`python -m bench results list`."""

from __future__ import annotations

import subprocess
import sys

from bench.__main__ import main
from tests.results.records import GROUPINGS, SEEDS


def test_list_shows_runs_with_headline_figures(sim_records, capsys):
    assert main(["results", "list", "--root", str(sim_records)]) == 0
    out = capsys.readouterr().out
    header = out.splitlines()[0]
    for column in ("grouping", "dataset", "W", "created (UTC)", "STD_DEV", "DIST_COST", "experiment"):
        assert column in header
    for grouping in GROUPINGS:
        assert grouping in out
    assert f"{len(GROUPINGS) * len(SEEDS)} run(s)" in out


def test_list_csv(sim_records, capsys):
    assert main(["results", "list", "--root", str(sim_records), "--csv"]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert lines[0].startswith("run_id,mode,created_utc") and len(lines) == 1 + len(GROUPINGS) * len(SEEDS)


def test_list_errors_are_one_line_exit_2(tmp_path, capsys):
    assert main(["results", "list", "--root", str(tmp_path / "none")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: ") and "\n" not in err


def test_module_entry_point(sim_records):
    out = subprocess.run([sys.executable, "-m", "bench", "results", "list", "--root", str(sim_records),
                          "--experiment", "exp-a"], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "DYNAMIC_KEY" in out.stdout
