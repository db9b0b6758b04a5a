"""The HTML report opens in headless Chromium with every figure rendered; a broken figure fails the check.

The `chromium` fixture (tests/conftest.py) marks the tests that drive the browser `browser`."""

from __future__ import annotations

import json
import re

import pytest

from bench.__main__ import main
from bench.compare import build_comparison, select_runs
from bench.compare.render_check import check_report_rendered, parse_dom
from bench.compare.report import render_html, write_report
from bench.results import load_runs
from tests.results.records import write_stream_record


@pytest.fixture(scope="module")
def comparison_report(sim_records, tmp_path_factory):
    runs, how = select_runs(sim_records)
    return write_report(build_comparison(runs, description=how), tmp_path_factory.mktemp("report") / "report.html")


def test_comparison_report_renders_its_figures(comparison_report, chromium):
    result = check_report_rendered(comparison_report, chromium)
    assert result.ok, result.describe()
    assert result.figures == result.rendered == result.expected == 4


def test_report_is_self_contained(comparison_report):
    html = comparison_report.read_text()
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:|//)""", html, re.I)
    assert "<link" not in html and not re.search(r"<script[^>]+src", html)
    assert html.count('src="data:image/png;base64,') == 4
    for expected in ("Comparison table", "Pairwise Mann-Whitney U", "Runs and their configuration",
                     "DYNAMIC_KEY", "COUNTRY_SKEW_R80", "&quot;grouping_params&quot;"):
        assert expected in html


def test_broken_figure_fails_the_check(comparison_report, chromium, tmp_path):
    html = comparison_report.read_text()
    start = html.index("data:image/png;base64,") + len("data:image/png;base64,")
    broken = tmp_path / "broken.html"
    broken.write_text(html[:start] + "AAAAbroken" + html[start + 400:])  # first figure no longer decodes
    result = check_report_rendered(broken, chromium)
    assert not result.ok
    assert (result.figures, result.rendered) == (4, 3)


def test_report_whose_check_never_ran_fails(comparison_report, chromium, tmp_path):
    html = comparison_report.read_text()
    silent = tmp_path / "noscript.html"
    silent.write_text(re.sub(r"<script>.*?</script>", "", html, flags=re.S))
    result = check_report_rendered(silent, chromium)
    assert not result.ok and "did not run" in result.describe()


def test_parse_dom_needs_every_declared_figure():
    dom = '<meta name="bench-figures" content="4"><p id="render-status" data-figures="3" data-rendered="3">'
    assert not parse_dom(dom).ok  # a figure missing from the page is a failure too
    assert parse_dom(dom.replace('content="4"', 'content="3"')).ok


def test_single_run_report_via_cli(sim_records, chromium, tmp_path, capsys):
    run_id = load_runs(sim_records)["run_id"].iloc[0]
    out = tmp_path / "one.html"
    assert main(["report", run_id, "--root", str(sim_records), "--out", str(out), "--check"]) == 0
    printed = capsys.readouterr().out
    assert "4 of 4 figures rendered" in printed
    html = out.read_text()
    assert f"<title>Run {run_id}</title>" in html and "<details open>" in html
    assert "not tested: n &lt; 3" not in html  # one run: no pair to test
    assert "Too few repetitions to test" in html


def test_stream_report_includes_latency(tmp_path, chromium):
    root = tmp_path / "results"
    for g in ("KEY", "DYNAMIC_KEY"):
        write_stream_record(root, f"s-{g.lower()}", g)
    runs, how = select_runs(root)
    out = write_report(build_comparison(runs, description=how), tmp_path / "stream.html")
    result = check_report_rendered(out, chromium)
    assert result.ok and result.figures == 6, result.describe()
    html = out.read_text()
    assert "latency over time" in html and "memory, checkpoint, state store and batch time over time" in html


def test_report_cli_errors(sim_records, capsys):
    assert main(["report", "nope", "--root", str(sim_records)]) == 2
    assert capsys.readouterr().err.startswith("error: unknown run id 'nope'")


def test_single_run_html_declares_its_figures(sim_records):
    runs, _ = select_runs(sim_records)
    html = render_html(build_comparison(runs.head(1)))
    assert 'id="render-status"' in html and '<meta name="bench-figures" content="4">' in html


def test_a_nemesis_runs_report_lists_its_faults_and_verdict(tmp_path):
    root = tmp_path / "results"
    folder = write_stream_record(root, "nemesis-9", "KEY_GROUP")
    history = [{"t_s": 31.5, "kind": "fault", "text": "2/19 SIGKILL driver (pid 25738; planned at +27.8 s)"},
               {"t_s": 33.6, "kind": "recovery", "text": "the driver ended (signal SIGKILL); resumed: attempt 2"}]
    check = {"completed": True, "exactly_once": True, "influx_equals_metrics": False, "lost": 0, "duplicated": 0,
             "ok": False}
    (folder / "nemesis.json").write_text(json.dumps({"plan": {"seed": 9, "faults": [{}, {}], "schedule": "491s:12",
                                                               "protocol": "STOP_THE_WORLD"},
                                                      "history": history, "check": check}))
    runs, _ = select_runs(root)
    html = render_html(build_comparison(runs))
    assert "<h2>Faults (make nemesis)</h2>" in html
    assert "nemesis-9: seed 9, 2 faults planned (rescales: 491s:12, STOP_THE_WORLD), FAILED" in html
    assert "+31.5 s" in html and "SIGKILL driver" in html and "influx_equals_metrics</td><td>NO" in html


def test_a_report_without_a_nemesis_has_no_faults_section(sim_records):
    runs, _ = select_runs(sim_records)
    assert "Faults (make nemesis)" not in render_html(build_comparison(runs.head(1)))
