"""The test tiers (tests/tiers.py): markers follow the fixtures a test uses, even through other
fixtures; the fast tier fails a test of its own that is too slow; an empty selection fails."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.tiers import FAST_TIER, FIXTURE_MARKERS, TIER_MARKERS, markers_for

pytest_plugins = ["pytester"]

REPO_ROOT = Path(__file__).resolve().parents[1]

SUITE = '''
import time
import pytest

@pytest.fixture(scope="session")
def stack():
    return "kafka"

@pytest.fixture(scope="session")
def spark():
    return "spark"

@pytest.fixture
def topic(stack):  # reaches the stack only through another fixture
    return stack + "/topic"

@pytest.fixture
def runs(topic, spark):
    return [topic, spark]

def test_unit():
    assert True

def test_direct(stack):
    assert stack

def test_indirect(runs):
    assert runs

def test_slow_unit():
    time.sleep(0.3)
'''


def test_markers_follow_the_fixture_closure():
    assert markers_for(["tmp_path", "monkeypatch"]) == []
    assert markers_for(["stream_runs", "stack", "spark", "input_topic"]) == ["integration", "spark"]
    assert markers_for(["bench_subprocess", "chromium"]) == ["browser", "slow"]
    assert set(m for ms in FIXTURE_MARKERS.values() for m in ms) == set(TIER_MARKERS)


def test_every_tier_marker_is_registered_and_the_makefile_selects_the_same_tier(pytestconfig):
    registered = {line.split(":")[0] for line in pytestconfig.getini("markers")}
    assert set(TIER_MARKERS) <= registered
    makefile = (REPO_ROOT / "Makefile").read_text()
    assert re.search(r"^FAST_TIER\s*:=\s*(.+)$", makefile, re.M).group(1).strip() == FAST_TIER


@pytest.fixture
def run_suite(pytester, monkeypatch):
    """Runs pytest in-process on `SUITE` with the tiers plugin and the given options."""
    pytester.makepyfile(test_suite=SUITE)
    # No plugins from entry points: loading hypothesis's again would take longer than the runs.
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    return lambda *args: pytester.runpytest_inprocess("-p", "tests.tiers", "-p", "no:cacheprovider", *args)


def test_the_fast_tier_leaves_out_tests_that_reach_a_service_through_any_fixture(run_suite):
    result = run_suite("-m", FAST_TIER, "-v")
    result.assert_outcomes(passed=2, deselected=2)
    result.stdout.fnmatch_lines(["*test_unit PASSED*", "*test_slow_unit PASSED*"])
    run_suite("-m", "integration and spark").assert_outcomes(passed=1, deselected=3)  # test_indirect


def test_a_slow_test_in_the_fast_tier_fails_when_strict_and_is_listed_otherwise(run_suite):
    strict = run_suite("-m", FAST_TIER, "--fast-tier-limit=0.2", "--fast-tier-strict")
    strict.assert_outcomes(passed=1, failed=1, deselected=2)
    strict.stdout.fnmatch_lines(["*test_slow_unit took * s (setup + call, * left out) and carries no tier marker*"])
    listed = run_suite("--fast-tier-limit=0.2")
    listed.assert_outcomes(passed=4)
    listed.stdout.fnmatch_lines(["*fast-tier tests over the limit*", "*test_slow_unit took*"])


def test_an_empty_selection_fails_instead_of_exit_code_5(run_suite):
    result = run_suite("-m", "maven")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["*no test was selected*"])
