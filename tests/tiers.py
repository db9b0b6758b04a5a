"""Test tiers: the markers a test gets from the fixtures it uses, and the fast tier's time limit.

`make test-fast` runs `pytest -m "not (integration or spark or browser or maven or notebook or slow)"`
(`FAST_TIER`): every test that needs no service. A test that needs one is not marked by hand:
`pytest_collection_modifyitems` marks it from the fixtures it uses, directly or through other fixtures (`item.fixturenames` is the
closure: a test that asks for `stream_runs` uses `stack` and `spark` too). So a new test that reaches
Kafka, Spark, Chromium, Maven, a notebook kernel or a subprocess run of the harness leaves the fast
tier by itself, as long as it reaches them through their fixture:

| fixture            | marker        | resource                                                      |
|--------------------|---------------|---------------------------------------------------------------|
| `stack`            | `integration` | Kafka (KRaft) and InfluxDB on free ports (tests/conftest.py)  |
| `spark`            | `spark`       | the session's SparkSession (a JVM, local[2])                  |
| `chromium`         | `browser`     | headless Chromium (the HTML report's render check)            |
| `maven`            | `maven`       | `mvn` (the peers' builds and JUnit tests)                     |
| `notebook_kernel`  | `notebook`    | a Jupyter kernel executing notebooks/compare.ipynb            |
| `bench_subprocess` | `slow`        | the harness's command line in a child Python process          |
| `realtime_child`   | `spark`, `slow` | the session's real-time runs, a child process with its own Spark (tests/realtime_runs.py) |
| `live_rescale_child` | `spark`, `slow` | the session's paced rescale runs, a child process with its own Spark (tests/live_rescale_runs.py) |
| `nemesis_child`    | `integration`, `slow` | the session's short nemesis, on a stack of its own (tests/short_nemesis.py) |
| `cold_child`       | `spark`, `slow` | the session's `bench run`s with a cold Spark, a child process (tests/cold_runs.py) |

A test that reaches a service some other way, or is slow for its own reasons, is caught by its time:
a test with none of these markers that takes longer than `--fast-tier-limit` seconds (setup + call,
default 5) is listed at the end of the run (`make test-fast`, `make test`). It fails the run only with
`--fast-tier-strict`, which no make target passes: speed is a benchmark's to measure, not a test's.
The time is the wall-clock time less the time the test waited for a core (Linux's
/proc/self/schedstat), so that a machine busy with other work does not list a quick test.
A test that needs no service but seconds of CPU (a full pass over a real dataset, a command that
draws and saves every figure) carries `@pytest.mark.slow` by hand, with a comment saying why.

An empty selection (pytest's exit code 5, "no tests ran") is turned into a failure with a message:
a tier that selects nothing is a broken marker expression or path, not a success.
"""

from __future__ import annotations

import pytest

FIXTURE_MARKERS: dict[str, tuple[str, ...]] = {
    "stack": ("integration",),
    "spark": ("spark",),
    "chromium": ("browser",),
    "maven": ("maven",),
    "notebook_kernel": ("notebook",),
    "bench_subprocess": ("slow",),
    "realtime_child": ("spark", "slow"),
    "live_rescale_child": ("spark", "slow"),
    "nemesis_child": ("integration", "slow"),
    "cold_child": ("spark", "slow"),
}
"""fixture name -> the markers of every test that uses it (directly or through another fixture)."""

TIER_MARKERS = ("integration", "spark", "browser", "maven", "notebook", "slow")
"""The markers that take a test out of the fast tier, in the order of `FAST_TIER`."""

FAST_TIER = "not (" + " or ".join(TIER_MARKERS) + ")"
"""The fast tier's marker expression (the Makefile's `test-fast` passes the same one)."""

NO_TESTS_RAN = 5  # pytest.ExitCode.NO_TESTS_COLLECTED

_SETUP_SECONDS = pytest.StashKey[float]()
_WAITED_BEFORE = pytest.StashKey[float]()
_OVER_LIMIT = pytest.StashKey[list]()


def pytest_addoption(parser):
    group = parser.getgroup("tiers", "test tiers (tests/tiers.py)")
    group.addoption("--fast-tier-limit", type=float, default=5.0, metavar="SECONDS",
                    help="a test with no tier marker that takes longer (setup + call) is reported (default 5)")
    group.addoption("--fast-tier-strict", action="store_true",
                    help="such a test fails instead of being reported (make test-fast)")


def pytest_configure(config):
    config.stash[_OVER_LIMIT] = []


def markers_for(fixturenames) -> list[str]:
    """The tier markers that the fixtures `fixturenames` give a test, in `TIER_MARKERS` order."""
    given = {marker for name in fixturenames for marker in FIXTURE_MARKERS.get(name, ())}
    return [marker for marker in TIER_MARKERS if marker in given]


def in_fast_tier(item) -> bool:
    """True when `item` carries none of the tier markers (given by its fixtures or by hand)."""
    return not any(item.get_closest_marker(marker) for marker in TIER_MARKERS)


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    # tryfirst: the markers must be on the items before `-m` deselects (pytest's own hook).
    for item in items:
        for marker in markers_for(getattr(item, "fixturenames", ())):
            item.add_marker(marker)


def waited_for_a_core() -> float:
    """Seconds this process's main thread has spent runnable but waiting for a CPU (the second field
    of /proc/self/schedstat, in ns); 0.0 where the kernel does not say."""
    try:
        with open("/proc/self/schedstat") as stats:
            return int(stats.read().split()[1]) / 1e9
    except (OSError, IndexError, ValueError):
        return 0.0


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_setup(item):
    item.stash[_WAITED_BEFORE] = waited_for_a_core()
    yield


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if report.when == "setup":
        item.stash[_SETUP_SECONDS] = report.duration
        return
    if report.when != "call" or not report.passed or not in_fast_tier(item):
        return
    limit = item.config.getoption("fast_tier_limit")
    waited = waited_for_a_core() - item.stash.get(_WAITED_BEFORE, 0.0)
    took = item.stash.get(_SETUP_SECONDS, 0.0) + report.duration - waited
    if took <= limit:
        return
    message = (f"{item.nodeid} took {took:.1f} s (setup + call, {waited:.1f} s of waiting for a core left out) "
               f"and carries no tier marker (limit {limit:g} s): reach the service through its fixture "
               f"({', '.join(FIXTURE_MARKERS)}; tests/tiers.py), make the test faster, or mark it slow")
    if item.config.getoption("fast_tier_strict"):
        report.outcome = "failed"
        report.longrepr = message
    else:
        item.config.stash[_OVER_LIMIT].append(message)


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    slow = config.stash.get(_OVER_LIMIT, [])
    if slow:
        terminalreporter.section("fast-tier tests over the limit")
        for message in slow:
            terminalreporter.write_line(message)


def pytest_sessionfinish(session, exitstatus):
    if exitstatus == NO_TESTS_RAN:
        session.config.get_terminal_writer().line(
            "error: no test was selected: the marker expression or the paths select nothing "
            f"(fast tier: -m \"{FAST_TIER}\")", red=True)
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
