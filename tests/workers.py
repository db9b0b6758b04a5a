"""`make test` on two pytest-xdist workers (`-n 2 --dist loadgroup`) that share one stack and one
input topic, with every test of the session's one Spark session on one of them.

Most of the suite's time is spent waiting: for a paced replay, a Kafka Streams probing interval, a
micro-batch, a Maven or Storm JVM starting. On one process the two cores were 64-73 % busy. Two
workers overlap that waiting, and still keep the promises of tests/conftest.py:

- **One stack, one input topic.** The controller makes a folder and passes it to each worker
  (`pytest_configure_node`). The first worker that needs the stack (or the shared input topic)
  makes it there, under a file lock, and records it (`made_once`); the other worker reads the
  record. The controller stops the stack after both workers are done, and fails the session if its
  ports stay taken. Without xdist each fixture makes and stops its own, as before.
- **One Spark session.** Every test that uses `spark` (or the killed drivers, children started
  beside the Spark tests and resumed in the session) gets `xdist_group("spark")`, so `--dist
  loadgroup` sends them all to one worker, in the order collected: the session's shared runs
  (`stream_runs`, `live_run`, `stw_run`) are made once, and the killed drivers started once, by
  that worker. The tests that use no Spark (the peers, `bench run` children, the replay, the unit
  tests) run on the other worker, and on this one once its group is done.

  Two Spark groups, one per worker (the shared runs and the killed drivers on one, the tests that
  make their own runs on the other), cut the tests from 1,100 s to 992 s, but the live rescale
  runs then slowed so much that their events fell after their input had ended (docs/testing.md).
"""

from __future__ import annotations

import json
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path

import pytest

from bench.stack import Stack, StackConfig
from bench.stack.process import exclusive_lock, port_is_free

SPARK_GROUP = "spark"
"""The xdist group of the tests that share the session's Spark session and what is built on it."""

SPARK_GROUP_FIXTURES = ("spark", "killed_drivers")
"""A test that uses one of these (directly or through another fixture) is in `SPARK_GROUP`."""

_SHARED_DIR = "bench_shared_dir"
"""The key of `workerinput` naming the folder of what the workers share (`made_once`)."""

_SHARED = pytest.StashKey[Path]()
"""The controller's stash: that folder."""

STACK = "stack"
"""The name the shared stack is `made_once` under: its record is `StackConfig.to_env()`."""


def in_spark_group(item) -> bool:
    """Whether `item` uses the session's Spark session or its killed drivers."""
    return any(name in SPARK_GROUP_FIXTURES for name in getattr(item, "fixturenames", ()))


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    for item in items:
        if in_spark_group(item):
            item.add_marker(pytest.mark.xdist_group(SPARK_GROUP))


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node):
    """The controller, for each worker it starts: the folder of what they share."""
    config = node.config
    if _SHARED not in config.stash:
        config.stash[_SHARED] = Path(tempfile.mkdtemp(prefix="bench-test-stack-"))
    node.workerinput[_SHARED_DIR] = str(config.stash[_SHARED])


def made_once(config, name: str, make: Callable[[Path], dict]) -> dict | None:
    """On an xdist worker: the session's one `name` (a JSON object), made by `make(folder)` in the
    shared folder by the first worker that asks, read back by the other. None outside xdist (the
    caller makes its own)."""
    folder = getattr(config, "workerinput", {}).get(_SHARED_DIR)
    if folder is None:
        return None
    folder = Path(folder)
    record = folder / f"{name}.json"
    with exclusive_lock(folder / f"{name}.lock"):
        if not record.is_file():
            made = make(folder / name)
            record.write_text(json.dumps(made))
            return made
    return json.loads(record.read_text())


def stack_ports(config: StackConfig) -> tuple[int, ...]:
    return (config.kafka_port, config.kafka_controller_port, config.influx_port, config.influx_rpc_port)


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session, exitstatus):
    """The controller, after its workers: stop the stack they shared, and fail if a port stays taken."""
    folder = session.config.stash.get(_SHARED, None)
    if folder is None:
        return
    record = folder / f"{STACK}.json"
    if record.is_file():
        config = StackConfig.from_env(json.loads(record.read_text()))
        Stack(config).down(log=lambda _msg: None)
        if not all(port_is_free(p) for p in stack_ports(config)):
            session.config.get_terminal_writer().line(
                f"error: the test stack left a port taken ({folder})", red=True)
            session.exitstatus = pytest.ExitCode.TESTS_FAILED
            return
    shutil.rmtree(folder, ignore_errors=True)
