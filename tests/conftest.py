"""Shared fixtures: one real stack (Kafka + InfluxDB), one Spark session, and one set of streaming
runs for the whole test session.

The stack runs on free loopback ports in a temporary folder, with the artefacts from the project's
cache (installed by `make install`), so it never collides with a stack a developer has running.
It is stopped at the end of the session, and the test session fails if its ports stay taken.

`stream_runs` runs the topology once per grouping on one small input topic; the topology, dashboard
and simulator cross-check tests all assert on those same runs.

The fixtures that reach a service or a slow tool (`stack`, `spark`, `chromium`, `maven`,
`bench_subprocess`, and every fixture built on them) mark the tests that use them, which keeps those
tests out of `make test-fast` (tests/tiers.py).
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest
from hypothesis import settings

from bench.stack import Stack, StackConfig
from bench.stack.process import port_is_free
from tests.killing import Killed, KilledDrivers
from tests.child_runs import ChildRuns
from tests.short_nemesis import ShortNemesis

pytest_plugins = ["tests.tiers"]

FUZZ_EXAMPLES = 10_000
settings.register_profile("fuzz", max_examples=FUZZ_EXAMPLES, deadline=None, print_blob=True)
"""`make fuzz` (`--hypothesis-profile=fuzz`): the property tests of the input's parsers with
FUZZ_EXAMPLES generated examples each, where `make test` runs Hypothesis's default (100). Tests that
set their own `max_examples` (the groupings' properties) keep it."""

REPO_ROOT = Path(__file__).resolve().parents[1]

SHORT_JVM_OPTIONS = "-XX:TieredStopAtLevel=1"
"""The short-lived JVMs the tests start (a `bench run` in a child process, Maven, the Storm peer)
live for seconds to a minute or two on tiny inputs: the client compiler alone (C1) starts them
faster and leaves both cores to the work instead of C2's compiler threads (here: a cold `bench run`
of 2,000 records 42 -> 37 s, the Storm peer's `mvn test` 14-22 -> 7.5 s). Results are the same bytes;
benchmarks (`make bench`, `make perf`) never read this. The session's long-lived JVMs (the stack's
broker, the Spark session) keep both compilers (`long_lived_jvm`). A value the user set wins."""
os.environ.setdefault("JAVA_TOOL_OPTIONS", SHORT_JVM_OPTIONS)


@contextmanager
def long_lived_jvm() -> Iterator[None]:
    """A JVM started inside this block gets the JIT a user's would (no `SHORT_JVM_OPTIONS`)."""
    ours = os.environ.get("JAVA_TOOL_OPTIONS") == SHORT_JVM_OPTIONS
    if ours:
        del os.environ["JAVA_TOOL_OPTIONS"]
    try:
        yield
    finally:
        if ours:
            os.environ["JAVA_TOOL_OPTIONS"] = SHORT_JVM_OPTIONS


EVERY_PHASE = pytest.mark.skipif(
    os.environ.get("BENCH_CHAOS") != "1",
    reason="a driver killed at one more phase of a rescale: run with make chaos (BENCH_CHAOS=1)")
"""Marks the kill-and-resume cases beyond one per protocol (`make test` keeps one per protocol, and
stays under 30 minutes on 2 cores; `make chaos` runs every phase)."""


def free_ports(count: int) -> list[int]:
    """`count` distinct loopback ports that were free a moment ago (bound to port 0, then released)."""
    socks = []
    try:
        for _ in range(count):
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            sock.bind(("127.0.0.1", 0))
            socks.append(sock)
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def temporary_stack_config(folder: Path) -> StackConfig:
    """A `StackConfig` in `folder`, on free ports, sharing the project's artefact cache."""
    kafka, controller, influx, rpc = free_ports(4)
    return StackConfig(
        stack_dir=folder,
        cache_dir=StackConfig.from_env().cache_dir,
        kafka_port=kafka,
        kafka_controller_port=controller,
        influx_port=influx,
        influx_rpc_port=rpc,
    )


MEMORY_FS = Path("/dev/shm")
"""A tmpfs, where the session broker keeps its partitions and its metadata log (`broker_data_in_memory`)."""


@contextmanager
def broker_data_in_memory(config: StackConfig) -> Iterator[None]:
    """The broker's `log.dirs` (`<stack>/kafka/data`) on MEMORY_FS while the block runs, its config and
    log in the stack's folder; nothing when MEMORY_FS is not there. Its metadata log (KRaft) syncs
    every append to disk, and on the 2-core CI machine the other tests' writes (Spark checkpoints,
    Kafka Streams' state, Maven) made those syncs wait: controller events of 2-20 s
    (`writeNoOpRecord took 20217 ms`), partitions created seconds apart, and then "All brokers are
    currently fenced" for the next topic (CI on 1c4e4da, 2026-12-08). The session's topics take about
    60 MiB; the tests check what a broker serves, not what survives a power cut."""
    if not (MEMORY_FS.is_dir() and os.access(MEMORY_FS, os.W_OK)):
        yield
        return
    data = Path(tempfile.mkdtemp(prefix="bench-test-kafka-", dir=MEMORY_FS))
    link = config.stack_dir / "kafka" / "data"
    link.parent.mkdir(parents=True, exist_ok=True)
    link.symlink_to(data, target_is_directory=True)
    try:
        yield
    finally:
        shutil.rmtree(data, ignore_errors=True)


@pytest.fixture(scope="session")
def stack(tmp_path_factory) -> Iterator[StackConfig]:
    """A running stack for the session (its broker's data in memory: `broker_data_in_memory`); yields
    its `StackConfig` (bootstrap_servers, influx_url, ...)."""
    config = temporary_stack_config(tmp_path_factory.mktemp("stack"))
    stack = Stack(config)
    with broker_data_in_memory(config):
        with long_lived_jvm():
            stack.up(log=lambda _msg: None)
        try:
            yield config
        finally:
            stack.down(log=lambda _msg: None)
    ports = (config.kafka_port, config.kafka_controller_port, config.influx_port, config.influx_rpc_port)
    assert all(port_is_free(p) for p in ports), "the test stack left a port taken"


@pytest.fixture(scope="session")
def spark():
    """One SparkSession for every Spark test (local[2]: this machine kind has 2 cores)."""
    from bench.topology.session import build_session

    with long_lived_jvm():
        session = build_session("local[2]", shuffle_partitions=2)
    yield session
    session.stop()


@pytest.fixture(scope="session")
def chromium() -> str:
    """The headless Chromium that checks the HTML report renders (`bench.compare.render_check`); the
    test fails, not skips, without it (`make test` installs it)."""
    # deferred: bench.compare imports matplotlib and pyspark (5 s here); most test runs never need them
    from bench.compare.render_check import find_chromium

    path = find_chromium()
    if path is None:
        pytest.fail("chromium is not installed: run scripts/install-debian-packages.sh (make test does)")
    return path


@pytest.fixture(scope="session")
def maven() -> str:
    """The `mvn` that builds and tests the peers (bench/peers: Storm, Flink, Kafka Streams). Java 17
    and Maven are prerequisites of the whole project (Kafka's and Spark's jars need them): the test
    skips, and says so, only when they are not on PATH."""
    mvn = shutil.which("mvn")
    if shutil.which("java") is None or mvn is None:
        pytest.skip("java and mvn are needed to build and test the peers (README: Prerequisites)")
    return mvn


class BenchSubprocess:
    """The project's command lines (`python -m bench ...`, `-m producers`, `-m datasets`) in a child
    process of the venv's interpreter, from the repository root."""

    def argv(self, module: str, *args) -> list[str]:
        return [sys.executable, "-m", module, *map(str, args)]

    def run(self, module: str, *args, **kwargs) -> subprocess.CompletedProcess:
        """`subprocess.run` of `python -m module args`; output captured as text unless `kwargs` say
        otherwise (`timeout`, `env`, `check`, ... pass through)."""
        return subprocess.run(self.argv(module, *args), **{"cwd": REPO_ROOT, "capture_output": True,
                                                            "text": True, **kwargs})

    def popen(self, module: str, *args, **kwargs) -> subprocess.Popen:
        """`subprocess.Popen` of `python -m module args` (the caller waits for it or kills it)."""
        return subprocess.Popen(self.argv(module, *args), **{"cwd": REPO_ROOT, **kwargs})


@pytest.fixture(scope="session")
def bench_subprocess() -> BenchSubprocess:
    """Runs the harness's command line in a child process (a second interpreter start, often a JVM):
    the tests that use it are marked `slow` (tests/tiers.py)."""
    return BenchSubprocess()


# -- one input topic and one streaming run per grouping, shared by the end-to-end tests ---------------

E2E_DATASET = "NYC_FLIGHTS"
E2E_LIMIT = 2000
E2E_PARTITIONS = 4
E2E_MALFORMED = [b"not json", b'{"origin":"JFK"}', b'{"dest":7}', b"", b"[1,2]"]
E2E_FAST = dict(workers=4, splitters=E2E_PARTITIONS, aggregators=2, cost_ms=0.0, worker_window_s=5,
                aggregator_window_s=10, watermark_delay_s=2, observer_tick_s=2.0, trigger_s=0.5,
                progress=False, timeout_s=600)
"""Small windows and no simulated cost keep each run short; W=4, S=P=4."""


@dataclass(frozen=True)
class InputTopic:
    name: str
    weights: dict  # key -> weighted count of the valid records
    total: int


@pytest.fixture(scope="session")
def input_topic(stack) -> InputTopic:
    """NYC_FLIGHTS, 2,000 records on 4 partitions, then 5 malformed records."""
    from confluent_kafka import Producer

    from datasets import get_dataset
    from producers import replay

    topic = f"e2e.nyc.{int(time.time())}"
    dataset = get_dataset(E2E_DATASET)
    summary = replay(dataset, topic, stack.bootstrap_servers, partitions=E2E_PARTITIONS, limit=E2E_LIMIT,
                     progress=False)
    assert summary.ok
    producer = Producer({"bootstrap.servers": stack.bootstrap_servers})
    for i, value in enumerate(E2E_MALFORMED):
        producer.produce(topic, value=value, partition=i % E2E_PARTITIONS, timestamp=summary.last_timestamp_ms)
    assert producer.flush(30) == 0
    stats = dataset.key_stats(E2E_LIMIT)
    return InputTopic(topic, dict(stats.weights), stats.weight)


def e2e_options(stack, results_dir, topic, grouping, run_id, **extra):
    from bench.run.options import RunOptions

    # A given topic is consumed as it is (it holds records that are not the dataset's: --no-replay).
    return RunOptions(grouping=grouping, dataset=E2E_DATASET, topic=topic, run_id=run_id,
                      bootstrap_servers=stack.bootstrap_servers, influx_url=stack.influx_url,
                      influx_database=stack.influx_database, results_dir=results_dir,
                      **{**E2E_FAST, "replay": topic is None, **extra})


@pytest.fixture(scope="session")
def stream_runs(stack, spark, input_topic, tmp_path_factory) -> dict[str, dict]:
    """grouping -> summary.json of its streaming run over `input_topic` (results in a temp folder)."""
    from bench.run.stream import run_stream
    from bench.run.preflight import prepare
    from groupings import GROUPINGS

    results = tmp_path_factory.mktemp("runs")
    stamp = int(time.time())
    return {
        grouping: run_stream(prepare(e2e_options(stack, results, input_topic.name, grouping,
                                                 f"e2e-{grouping.lower()}-{stamp}", worker_state=True)),
                             spark=spark, log=lambda *_: None)
        for grouping in GROUPINGS
    }


@pytest.fixture(scope="session")
def live_run(stack, spark, tmp_path_factory) -> dict:
    """summary.json of a run that replays its own topic while consuming it (so it has latency), with
    1 ms of simulated cost per tuple (about 0.5 s of sleep per worker): 4 s of input, enough batches
    for a capacity step's lag trend (tests/dashboards)."""
    from bench.run.stream import run_stream
    from bench.run.preflight import prepare

    options = e2e_options(stack, tmp_path_factory.mktemp("live"), None, "DYNAMIC_KEY",
                          f"e2e-live-{int(time.time())}", limit=2000, rate=500.0, partitions=E2E_PARTITIONS,
                          cost_ms=1.0, latency_warmup_s=0.0)
    return run_stream(prepare(options), spark=spark, log=lambda *_: None)


def data_batches(run: dict) -> list[dict]:
    """A run's micro-batches that carried tuples, from its observer's batch journal
    (`observer/progress.jsonl`: `batch_id`, `start_ms`, `end_ms`, `rows`, ...)."""
    import json

    with (Path(run["results"]) / "observer" / "progress.jsonl").open() as journal:
        return [b for b in map(json.loads, journal) if b["rows"]]


@pytest.fixture(scope="session")
def stw_schedule(stack, input_topic) -> str:
    """4 -> 6 workers half-way through the shared topic's valid tuples on the simulator's clock (the
    topic was replayed as fast as possible: its 2,000 records span a few ms; its malformed records,
    written after them, do not count); with A = 2, N goes from 2 to 6."""
    from bench.simulate.sources import from_topic
    from datasets import get_dataset

    table = from_topic(get_dataset(E2E_DATASET), input_topic.name, stack.bootstrap_servers,
                       E2E_FAST["splitters"])[0]
    return f"{(int(table.ts_ms.max()) - int(table.ts_ms.min())) // 2}ms:6"


def selected_kill_cases(items) -> list[str]:
    """The kill cases ("<protocol>/<phase>", the `killed` parameter) of the tests in `items` that
    will run (a case whose skipif mark holds, `EVERY_PHASE` outside `make chaos`, is left out)."""
    cases = []
    for item in items:
        callspec = getattr(item, "callspec", None)
        if callspec is None or "killed" not in callspec.params:
            continue
        if any(mark.args and mark.args[0] is True for mark in item.iter_markers("skipif")):
            continue
        if callspec.params["killed"] not in cases:
            cases.append(callspec.params["killed"])
    return cases


@pytest.fixture(scope="session")
def killed_drivers(request, stack, input_topic, stw_schedule, tmp_path_factory) -> Iterator[KilledDrivers]:
    """The kill-and-resume tests' drivers (tests/killing.py), for the cases this session selected,
    run side by side and killed at their phases while the session goes on."""
    drivers = KilledDrivers(stack, E2E_FAST, tmp_path_factory.mktemp("killed"), input_topic.name, stw_schedule)
    drivers.start(selected_kill_cases(request.session.items))
    yield drivers
    drivers.close()


@pytest.fixture(autouse=True)
def _start_the_background_early(request) -> None:
    """The first test that uses the stack starts the session's background work that a selected test
    uses: the killed drivers, which then run beside the tests that come before theirs (a minute each,
    nothing timed), and each child of BACKGROUND, which waits for the work before it."""
    if "stack" not in request.fixturenames:
        return
    if selected_kill_cases(request.session.items):
        request.getfixturevalue("killed_drivers")
    for child, selects, _ in BACKGROUND:
        if _uses(request.session.items, selects):
            request.getfixturevalue(child)


def _uses(items, fixture: str) -> bool:
    return any(fixture in getattr(item, "fixturenames", ()) for item in items)


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config, items) -> None:
    """The tests of the cold runs, then the short nemesis's, go last: those run beside the others,
    at the end of the session's background work, and their tests wait for them."""
    def waits(item) -> int:
        names = getattr(item, "fixturenames", ())
        return 2 if "nemesis_child" in names else 1 if "cold_runs" in names else 0
    items.sort(key=waits)


REALTIME_TIMEOUT_S = 1500.0
"""How long the session's real-time runs may take together (beside the other tests on two cores)."""
LIVE_RESCALE_TIMEOUT_S = 1500.0
"""How long the session's paced rescale runs may take, their wait for the runs before them included."""
NEMESIS_TIMEOUT_S = 1800.0
"""How long the short nemesis may take, its wait for the killed drivers, the real-time runs and the
paced rescale runs included."""
COLD_RUNS_TIMEOUT_S = 2400.0
"""How long the cold runs may take, their wait for the rest of the session's background work included."""
COLD_PLUGIN_PARAM = "first_worker=1"
"""The toy plugin's parameter in its cold run (tests/plugins/test_plugin_spark.py passes the same
to the simulator)."""

BACKGROUND = (("realtime_child", "realtime_runs", REALTIME_TIMEOUT_S),
              ("live_rescale_child", "live_rescale_runs", LIVE_RESCALE_TIMEOUT_S),
              ("nemesis_child", "nemesis_child", NEMESIS_TIMEOUT_S),
              ("cold_child", "cold_runs", COLD_RUNS_TIMEOUT_S))
"""The session's background work after its killed drivers, in the order it runs: (the fixture of a
child, the fixture whose tests select it, how long it may take)."""


def after_the_background(request, before: str) -> Callable[[], None]:
    """What the background child `before` waits for before it starts: the session's killed drivers
    all killed (if it selected any), then the end of each child of BACKGROUND that comes before it and
    that the session selected. Running one at a time keeps the cores to the
    foreground tests and to one child (six Spark JVMs at once on two cores made a Python worker miss
    its connection timeout)."""
    session = request.session.items
    killed = request.getfixturevalue("killed_drivers") if selected_kill_cases(session) else None
    upto = [child for child, _, _ in BACKGROUND].index(before)
    earlier = [(request.getfixturevalue(child), timeout_s) for child, selects, timeout_s in BACKGROUND[:upto]
               if _uses(session, selects)]

    def after() -> None:
        if killed is not None:
            killed.wait_all()
        for child, timeout_s in earlier:
            child.join(timeout_s)
    return after


def stack_spec(stack, **more) -> dict:
    """The spec of a child of the session's runs (tests/child_runs.py): the stack's addresses, the
    e2e options and `more`."""
    return {"bootstrap": stack.bootstrap_servers, "influx_url": stack.influx_url,
            "influx_database": stack.influx_database, "e2e": E2E_FAST, **more}


@pytest.fixture(scope="session")
def realtime_child(request, stack, input_topic, tmp_path_factory) -> Iterator[ChildRuns]:
    """The child process of the session's real-time runs (tests/realtime_runs.py), started once the
    session's killed drivers (if it selected any) have all been killed; killed at the end of the
    session if it is still running."""
    child = ChildRuns("tests.realtime_runs", "real-time runs", stack_spec(stack, topic=input_topic.name),
                      tmp_path_factory.mktemp("realtime"))
    child.start(after=after_the_background(request, "realtime_child"))
    yield child
    child.close()


@pytest.fixture(scope="session")
def live_rescale_child(request, stack, tmp_path_factory) -> Iterator[ChildRuns]:
    """The child process of the session's paced rescale runs (tests/live_rescale_runs.py), started
    once the session's killed drivers have all been killed and its real-time runs have ended
    (whichever of them it selected); killed at the end of the session if it is still running."""
    child = ChildRuns("tests.live_rescale_runs", "paced rescale runs", stack_spec(stack),
                      tmp_path_factory.mktemp("live-rescale"))
    child.start(after=after_the_background(request, "live_rescale_child"))
    yield child
    child.close()


@pytest.fixture(scope="session")
def live_rescale_runs(live_rescale_child) -> dict[str, dict]:
    """`live-<protocol>` -> summary.json of the session's paced rescale runs
    (tests/live_rescale_runs.py), once they have all ended."""
    return live_rescale_child.summaries(LIVE_RESCALE_TIMEOUT_S)


@pytest.fixture(scope="session")
def nemesis_child(request, tmp_path_factory) -> Iterator[ShortNemesis]:
    """The session's short nemesis (tests/short_nemesis.py) on a stack of its own, started once the
    session's killed drivers have all been killed and its real-time and paced rescale runs have
    ended (whichever of them it selected)."""
    folder = tmp_path_factory.mktemp("nemesis")
    nemesis = ShortNemesis(folder, lambda: temporary_stack_config(folder / "stack"))
    nemesis.start(after=after_the_background(request, "nemesis_child"))
    yield nemesis
    nemesis.close()


@pytest.fixture(scope="session")
def cold_child(request, stack, input_topic, tmp_path_factory) -> Iterator[ChildRuns]:
    """The child process of the session's cold `bench run`s (tests/cold_runs.py), started once the
    session's other background work has ended (whichever of it the session selected): the killed
    drivers, the real-time runs, the paced rescale runs and the short nemesis; killed at the end of
    the session if it is still running."""
    from tests.plugins.conftest import TOY_SITE

    spec = stack_spec(stack, topic=input_topic.name, dataset=E2E_DATASET,
                      plugin_site=str(TOY_SITE), plugin_param=COLD_PLUGIN_PARAM)
    child = ChildRuns("tests.cold_runs", "cold runs", spec, tmp_path_factory.mktemp("cold"))
    child.start(after=after_the_background(request, "cold_child"))
    yield child
    child.close()


@pytest.fixture(scope="session")
def cold_runs(cold_child) -> dict[str, dict]:
    """name -> summary.json of the session's cold `bench run`s (tests/cold_runs.py: `plugin`,
    `local-cluster`), once both have ended."""
    return cold_child.summaries(COLD_RUNS_TIMEOUT_S)


@pytest.fixture(scope="session")
def realtime_runs(realtime_child) -> dict[str, dict]:
    """name -> summary.json of the session's real-time runs (tests/realtime_runs.py: `realtime-<grouping>`,
    `realtime-live`, `realtime-killed`), once they have all ended."""
    return realtime_child.summaries(REALTIME_TIMEOUT_S)


@pytest.fixture
def killed(request, killed_drivers) -> Killed:
    """The driver of this test's kill case (parametrize `killed` with "<protocol>/<phase>",
    indirect=True), killed at its phase."""
    return killed_drivers.take(request.param)


@pytest.fixture(scope="session")
def stw_run(stack, spark, input_topic, stw_schedule, tmp_path_factory) -> dict:
    """summary.json of the session's one STOP_THE_WORLD rescale run (VNODE over the shared topic,
    `stw_schedule`); the rescale and dashboard tests assert on it."""
    from bench.run.stream import run_stream
    from bench.run.preflight import prepare

    options = e2e_options(stack, tmp_path_factory.mktemp("stw"), input_topic.name, "VNODE",
                          f"e2e-stw-{int(time.time())}", rescale=stw_schedule, protocol="STOP_THE_WORLD",
                          max_offsets_per_trigger=300)
    return run_stream(prepare(options), spark=spark, log=lambda *_: None)
