"""`make test`'s two xdist workers (tests/workers.py): one stack and one input topic made once for
both (the stack stopped by the controller), every Spark test on one worker (the shared runs made
there once), the fast-tier listing still printed."""

from __future__ import annotations

import pytest

from tests.conftest import REPO_ROOT
from tests.workers import in_spark_group

SUITE = '''
import os
import time
from pathlib import Path

import pytest

from bench.stack import StackConfig
from tests.conftest import free_ports
from tests.workers import STACK, made_once

LOG = Path(os.environ["SUITE_LOG"])


def note(line):
    with LOG.open("a") as log:
        log.write(line + "\\n")


def start(folder):
    note("started")
    kafka, controller, influx, rpc = free_ports(4)
    return StackConfig(stack_dir=folder, cache_dir=folder, kafka_port=kafka, kafka_controller_port=controller,
                       influx_port=influx, influx_rpc_port=rpc).to_env()


def replay(_folder):
    note("replayed")
    return {"name": "topic"}


@pytest.fixture(scope="session")
def stack(request):
    return StackConfig.from_env(made_once(request.config, STACK, start))


@pytest.fixture(scope="session")
def spark():
    return os.environ["PYTEST_XDIST_WORKER"]


@pytest.fixture(scope="session")
def stream_runs(spark):
    note(f"made the runs on {spark}")
    return spark


@pytest.fixture(scope="session")
def input_topic(request):
    return made_once(request.config, "input_topic", replay)["name"]


@pytest.mark.parametrize("n", range(6))
def test_spark(spark, stack, n):
    note(f"spark {spark} {stack.kafka_port}")


@pytest.mark.parametrize("n", range(8))
def test_runs(stream_runs, n):
    note(f"runs {stream_runs}")


@pytest.mark.parametrize("n", range(4))
def test_topic(input_topic, n):
    note(f"topic {os.environ['PYTEST_XDIST_WORKER']} {input_topic}")


@pytest.mark.parametrize("n", range(6))
def test_stack_only(stack, n):
    time.sleep(0.1)
    note(f"stack {os.environ['PYTEST_XDIST_WORKER']} {stack.kafka_port}")


def test_slow_unit():
    time.sleep(0.3)
'''


def test_two_workers_share_one_stack_and_one_runs_every_spark_test(pytester, monkeypatch, tmp_path):
    pytester.makepyfile(test_suite=SUITE)
    log = tmp_path / "log"
    monkeypatch.setenv("SUITE_LOG", str(log))
    monkeypatch.setenv("PYTHONPATH", str(REPO_ROOT))
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")  # no hypothesis: only what the suite needs
    result = pytester.runpytest_subprocess("-p", "xdist.plugin", "-p", "tests.tiers", "-p", "tests.workers",
                                           "-p", "no:cacheprovider", "-n", "2", "--dist", "loadgroup",
                                           "--fast-tier-limit=0.2")
    result.assert_outcomes(passed=25)
    result.stdout.fnmatch_lines(["*fast-tier tests over the limit*", "*test_slow_unit took*"])
    lines = log.read_text().splitlines()
    assert (lines.count("started"), lines.count("replayed")) == (1, 1), lines  # made once for both workers
    grouped = {line.split()[1] for line in lines if line.startswith(("spark", "runs "))}
    assert len(grouped) == 1, lines  # every Spark test on one worker
    assert sum(line.startswith("made the runs") for line in lines) == 1, lines  # the shared runs made once
    assert len({line.split()[2] for line in lines if line.startswith(("spark", "stack"))}) == 1, lines  # one stack
    assert sum(line.startswith("stack") for line in lines) == 6 and sum(line.startswith("topic") for line in lines) == 4


@pytest.mark.parametrize("fixtures, grouped", [(("stream_runs", "stack", "spark"), True),
                                              (("killed", "killed_drivers", "stack"), True),
                                              (("input_topic", "stack"), False),
                                              (("stack", "maven"), False)])
def test_a_test_is_in_the_spark_group_by_its_fixture_closure(fixtures, grouped):
    class Item:
        fixturenames = fixtures

    assert in_spark_group(Item()) is grouped
