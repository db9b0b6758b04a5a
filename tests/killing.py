"""Drivers killed in the middle of a rescale, for the kill-and-resume tests.

A killed driver is a `bench run` child process (VNODE, the e2e options, a rescale schedule) that
sleeps once the journal `results/<run_id>/rescale.json` has its event at a phase
(BENCH_FAULT_RESCALE_HANG_AFTER=<phase>@<index>); it is SIGKILLed there, and its Spark JVM ends
with it. The test then resumes the same run id in the session's Spark and checks what it finished.

Each child starts a cold Spark JVM and runs its query up to the rescale: about a minute here, two
thirds of a kill-and-resume test, and nothing in it is timed. So `KilledDrivers` runs the children
of every kill case a session selected side by side (at most `MAX_RUNNING` at once), from the
moment the first test that uses the stack sets up (tests/conftest.py `killed_drivers`); a test takes
its case, killed, when its turn comes. `kill_driver_in_a_rescale` kills one child in the
foreground (the cases on a module's own topic).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from bench.rescale.driver import HANG_AFTER
from tests.child_runs import bench_run_argv

HANDOFF_BATCH = 8
"""HANDOFF's units per round in the rescale tests: 4 -> 6 moves 85 vnodes, a few dozen of them with
state; one unit per round would take a round (two batches or more) per unit."""

MAX_RUNNING = 4
"""Children at once: make test's four cases together; `make chaos` queues the rest."""

PHASE_TIMEOUT_S = 600.0
"""How long a child may take to reach its phase (cold JVMs side by side on two cores)."""


@dataclass(frozen=True)
class Killed:
    """A driver of `protocol`'s rescale (VNODE, the shared topic, `stw_schedule`) killed after
    `phase` (the test parameter "<protocol>/<phase>"): `run_id` under `results_dir` (its journal
    `<run_id>/rescale.json`, its checkpoint)."""

    protocol: str
    phase: str
    run_id: str
    results_dir: Path


def bench_run_command(stack, e2e: dict, results_dir: Path, topic: str, schedule: str, run_id: str, protocol: str,
                      extra: tuple[str, ...] = ()) -> list[str]:
    """The `bench run` command line of a killed driver: VNODE over `topic` (no replay), the e2e
    options (`e2e`: tests/conftest.py `E2E_FAST`), `schedule` and `protocol`, 300 records per trigger."""
    addresses = {"bootstrap": stack.bootstrap_servers, "influx_url": stack.influx_url,
                 "influx_database": stack.influx_database}
    return bench_run_argv(addresses, {**e2e, "timeout_s": 600}, results_dir, grouping="VNODE", dataset="NYC_FLIGHTS",
                          topic=topic, run_id=run_id,
                          extra=("--max-offsets-per-trigger", "300", "--rescale", schedule, "--protocol", protocol,
                                 *extra))


class _Child:
    """One `bench run` child until it is killed at event `index`'s `phase` (or has failed)."""

    def __init__(self, command: list[str], results_dir: Path, run_id: str, phase: str, index: int = 0):
        self.command, self.journal = command, results_dir / run_id / "rescale.json"
        self.phase, self.index = phase, index
        self.log = results_dir / f"{run_id}.log"
        self.proc: subprocess.Popen | None = None
        self.deadline = 0.0
        self.error: str | None = None
        self.done = threading.Event()

    def start(self) -> None:
        self.log.parent.mkdir(parents=True, exist_ok=True)
        with self.log.open("wb") as out:
            self.proc = subprocess.Popen(self.command, stdout=out, stderr=subprocess.STDOUT,
                                         env={**os.environ, HANG_AFTER: f"{self.phase}@{self.index}"})
        self.deadline = time.monotonic() + PHASE_TIMEOUT_S

    def at_phase(self) -> bool:
        try:
            events = json.loads(self.journal.read_text())["events"]
        except (OSError, ValueError, KeyError):
            return False  # not written yet (or being replaced)
        return len(events) > self.index and events[self.index]["phase"] == self.phase

    def poll(self) -> None:
        """Kill the child if it is at its phase; record an error if it ended or took too long."""
        if self.at_phase():
            self.kill()
        elif self.proc.poll() is not None:
            self.fail(f"the driver ended (exit {self.proc.returncode}) before event {self.index}'s {self.phase}")
        elif time.monotonic() > self.deadline:
            self.fail(f"no event {self.index} at {self.phase} within {PHASE_TIMEOUT_S:g} s")

    def kill(self) -> None:
        jvms = _children(self.proc.pid)
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(30)
        _wait_gone(jvms, 60)  # Spark's JVM ends when its driver's pipe closes
        self.done.set()

    def fail(self, error: str) -> None:
        if self.proc.poll() is None:
            self.kill()
        tail = self.log.read_text(errors="replace")[-3000:] if self.log.exists() else ""
        self.error = f"{error}; the end of {self.log}:\n{tail}"
        self.done.set()


class KilledDrivers:
    """The kill cases of a session, their children run side by side in a background thread.

    `start(cases)` queues them; `take(case)` waits until that case's driver is killed at its phase
    and returns it as a `Killed` (AssertionError, with the end of the child's log, when it ended or
    timed out first); `close()` kills whatever still runs."""

    def __init__(self, stack, e2e: dict, results_dir: Path, topic: str, schedule: str):
        self.stack, self.e2e, self.results_dir, self.topic, self.schedule = stack, e2e, results_dir, topic, schedule
        self.children: dict[str, _Child] = {}
        self.killed: dict[str, Killed] = {}
        self._queue: list[_Child] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="killed-drivers", daemon=True)

    def start(self, cases: list[str]) -> None:
        """Queue the children of `cases` ("<protocol>/<phase>") and start running them."""
        stamp = int(time.time())
        for case in cases:
            protocol, phase = case.split("/")
            run_id = f"e2e-{protocol.lower().replace('_', '-')}-kill-{phase}-{stamp}"
            extra = ("--handoff-batch", str(HANDOFF_BATCH)) if protocol == "HANDOFF" else ()
            command = bench_run_command(self.stack, self.e2e, self.results_dir, self.topic, self.schedule, run_id,
                                        protocol, extra)
            self.children[case] = _Child(command, self.results_dir, run_id, phase)
            self.killed[case] = Killed(protocol, phase, run_id, self.results_dir)
            self._queue.append(self.children[case])
        self._thread.start()

    def _run(self) -> None:
        running: list[_Child] = []
        try:
            while (self._queue or running) and not self._stop.is_set():
                while self._queue and len(running) < MAX_RUNNING:
                    child = self._queue.pop(0)
                    child.start()
                    running.append(child)
                for child in running:
                    child.poll()
                running = [c for c in running if not c.done.is_set()]
                time.sleep(0.2)
        except Exception as e:  # noqa: BLE001 - each waiting test fails with it, none waits forever
            for child in self.children.values():
                if not child.done.is_set():
                    child.error = f"the thread running the children failed: {type(e).__name__}: {e}"
                    child.done.set()

    def wait_all(self, timeout_s: float = PHASE_TIMEOUT_S * 2) -> None:
        """Until every child is killed at its phase or has failed (or `timeout_s` has passed)."""
        deadline = time.monotonic() + timeout_s
        for child in self.children.values():
            child.done.wait(max(0.0, deadline - time.monotonic()))

    def take(self, case: str) -> Killed:
        assert case in self.children, f"{case} was not started: is it one of this session's selected tests?"
        child = self.children[case]
        assert child.done.wait(PHASE_TIMEOUT_S * 2), f"{case}: the child did not reach its phase"
        assert child.error is None, f"{case}: {child.error}"
        return self.killed[case]

    def close(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(5)
        for child in self.children.values():
            if child.proc is not None and child.proc.poll() is None:
                child.kill()


def kill_driver_in_a_rescale(stack, e2e: dict, results_dir: Path, topic: str, schedule: str, run_id: str,
                             phase: str, index: int = 0, protocol: str = "STOP_THE_WORLD") -> None:
    """Run one killed driver in the foreground: `bench run` over `topic` with `schedule` until event
    `index` of its journal is at `phase`, then SIGKILL it (and wait for its Spark JVM to end)."""
    child = _Child(bench_run_command(stack, e2e, results_dir, topic, schedule, run_id, protocol), results_dir,
                   run_id, phase, index)
    child.start()
    try:
        while not child.done.is_set():
            child.poll()
            time.sleep(0.2)
    finally:
        if child.proc.poll() is None:
            child.kill()
    assert child.error is None, child.error


def _children(pid: int) -> list[int]:
    out = []
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            out += [int(c) for c in (task / "children").read_text().split()]
        except OSError:
            pass
    return out


def _wait_gone(pids: list[int], timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while any(Path(f"/proc/{p}").exists() for p in pids) and time.monotonic() < deadline:
        time.sleep(0.2)
