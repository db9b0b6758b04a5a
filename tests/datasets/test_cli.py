"""``python -m datasets``: list, show, sql, errors."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _run(*args, env=None):
    return subprocess.run([sys.executable, "-m", "datasets", *args], cwd=ROOT, capture_output=True, text=True, timeout=600, env=env)


def test_list_named(tmp_path):
    import os

    env = {**os.environ, "BENCH_CACHE_DIR": str(tmp_path)}
    p = _run("list", "GOLDEN_SKEW", "COUNTRY_SKEW_R80", "-p", "length=20000", env=env)
    assert p.returncode == 0, p.stderr
    lines = {line.split()[0]: line.split() for line in p.stdout.splitlines()[2:]}
    assert lines["GOLDEN_SKEW"][1:4] == ["20,000", "20,000", "201"]  # -p applies to every named dataset
    assert lines["COUNTRY_SKEW_R80"][1:4] == ["20,000", "20,000", "204"]
    assert abs(float(lines["COUNTRY_SKEW_R80"][4].rstrip("%")) - 80.1) < 1.0
    assert list((tmp_path / "datasets" / "stats").glob("*.json"))  # cached
    again = _run("list", "GOLDEN_SKEW", "COUNTRY_SKEW_R80", "-p", "length=20000", env=env)
    assert again.stdout.splitlines()[2].split()[:6] == p.stdout.splitlines()[2].split()[:6]


def test_list_user_dataset_without_file():
    p = _run("list", "WIKIPEDIA_CLICKSTREAM")
    assert p.returncode == 0 and "pass -p path=" in p.stdout


def test_show_and_sql(tmp_path):
    f = tmp_path / "c.tsv"
    f.write_text("a\tb\tlink\t3\nbroken\n")
    p = _run("show", "WIKIPEDIA_CLICKSTREAM", "-p", f"path={f}")
    assert p.returncode == 0, p.stderr
    assert "[('b', 3)]" in p.stdout and '"line": 2' in p.stdout
    p = _run("sql", "COUNTRY_SKEW_R80")
    assert p.returncode == 0 and "try_parse_json(value)" in p.stdout


def test_errors():
    p = _run("show", "NO_SUCH")
    assert p.returncode == 2 and "COUNTRY_SKEW_R80" in p.stderr
    p = _run("show", "ZIPF", "-p", "bogus=1")
    assert p.returncode == 2 and "bogus" in p.stderr
