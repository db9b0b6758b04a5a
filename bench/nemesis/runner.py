"""The nemesis loop: one `python -m bench run` (a child process) under the plan's faults, resumed with
the same RUN_ID each time its driver ends before the run completed, as a user would.

Each fault, each recovery and each rescale step the run journals is one console line and one entry
of the history (`History`), with its instant in seconds after the run's start; the history goes to
`results/<run_id>/nemesis.json` with the plan and the checker's verdict (`bench.nemesis.check`).
"""

from __future__ import annotations

import json
import signal
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from bench.nemesis.plan import Fault, NemesisPlan
from bench.nemesis.processes import Driver, service_pid, signal_pid, start_services
from bench.stack import StackConfig

ROOT = Path(__file__).resolve().parents[2]

STUCK_DRIVER_S = 120.0
"""A driver whose Spark JVM is gone and that has not exited this long after is SIGKILLed (and that is
written in the history): PySpark's driver raises on its next call into the JVM, but a thread may
wait on a socket that no one closes."""

EXTRA_ATTEMPTS = 3
"""Resumes allowed beyond one per fault before the nemesis gives the run up."""


@dataclass
class History:
    """What happened, in order: each entry `{"t_s", "kind" (fault | recovery | rescale | run), ...}`."""

    t0: float = field(default_factory=time.monotonic)
    entries: list[dict] = field(default_factory=list)
    echo: object = print

    def now(self) -> float:
        return round(time.monotonic() - self.t0, 1)

    def add(self, kind: str, text: str, **fields) -> dict:
        entry = {"t_s": self.now(), "kind": kind, "text": text, **fields}
        self.entries.append(entry)
        self.echo(f"nemesis [+{entry['t_s']:7.1f} s] {kind}: {text}")
        return entry


@dataclass
class NemesisRun:
    """The run's command (`argv`, without `--run-id`), its results folder and the stack it uses."""

    run_id: str
    argv: list[str]
    results_dir: Path
    stack: StackConfig
    plan: NemesisPlan

    @property
    def folder(self) -> Path:
        return self.results_dir / self.run_id

    def summary(self) -> dict | None:
        try:
            return json.loads((self.folder / "summary.json").read_text())
        except (OSError, ValueError):
            return None


class _Held:
    """A fault still under way: a paused process to continue, or a killed service to start again, at `until`."""

    def __init__(self, fault: Fault, pid: int, until: float):
        self.fault, self.pid, self.until = fault, pid, until


def run_nemesis(run: NemesisRun, echo=print) -> History:
    """Run `run` under its plan until the run completes (summary.json status "completed") or gives up.

    Process faults fall at their `at_s` (s after the first attempt started): one that needs the
    driver or its JVM waits until the attempt has one, and one falls late while the loop starts a
    service again or waits for a dead attempt's processes (both instants are in the history). A
    killed driver or JVM (or any attempt that ends short of "completed") is resumed at once with the
    same RUN_ID, once its old processes are gone and no service is down. Faults still pending when
    the run has completed are not applied (the history says how many were). On Ctrl-C, paused
    processes are continued, killed services started again and the run interrupted (SIGINT).

    Raises: RuntimeError when the run needs more than one resume per fault plus EXTRA_ATTEMPTS.
    """
    return _Nemesis(run, History(echo=echo)).run()


class _Nemesis:
    def __init__(self, run: NemesisRun, history: History):
        self.run_, self.history = run, history
        self.pending = list(run.plan.process_faults)
        self.held: list[_Held] = []
        self.attempts = 0
        self.jvm_killed_at: float | None = None
        self.journal_seen: dict[int, str] = {}
        self.driver = self._start()

    def run(self) -> History:
        r, history = self.run_, self.history
        history.add("run", f"{r.run_id}: attempt 1, pid {self.driver.pid} ({' '.join(r.argv[3:])})",
                    pid=self.driver.pid)
        try:
            while not self._step():
                time.sleep(0.1)
        except BaseException:  # Ctrl-C, or the run given up: leave no process stopped and no service down
            self._end_holds(everything=True)
            if self.driver.exit_code() is None:
                self.driver.interrupt()
            raise
        self._end_holds(everything=True)
        if self.pending:
            history.add("run", f"{len(self.pending)} fault(s) not applied: the run completed before their instants",
                        not_applied=[f.index for f in self.pending])
        return history

    def _start(self) -> Driver:
        self.attempts += 1
        faults = len(self.run_.plan.faults)
        if self.attempts > faults + EXTRA_ATTEMPTS:
            raise RuntimeError(f"the run needed {self.attempts - 1} attempts for {faults} faults: given up")
        return Driver([*self.run_.argv, "--run-id", self.run_.run_id], ROOT,
                      self.run_.folder / "nemesis" / f"attempt-{self.attempts}.log")

    def _step(self) -> bool:
        """One turn of the loop; True once the run has completed."""
        now = self.history.now()
        self._end_holds()
        _journal_lines(self.run_, self.journal_seen, self.history)
        code = self.driver.exit_code()
        if code is not None:
            summary = self.run_.summary()
            if code == 0 and summary is not None and summary.get("status") == "completed":
                self.history.add("run", f"completed after {self.attempts} attempt(s) (exit 0)", attempts=self.attempts)
                return True
            self._resume(code, summary)
            return False
        if self.jvm_killed_at is not None and now - self.jvm_killed_at > STUCK_DRIVER_S \
                and self.driver.spark_pid() is None:
            self.driver.kill_all()
            self.history.add("recovery", f"the driver had not ended {STUCK_DRIVER_S:g} s after its JVM died: SIGKILL")
            self.jvm_killed_at = None
        if self.pending and self.pending[0].at_s <= now:
            pid = _target_pid(self.pending[0], self.driver, self.run_.stack)
            if pid is not None:
                fault = self.pending.pop(0)
                hold = _apply(fault, pid, self.history, len(self.run_.plan.process_faults))
                if hold is not None:
                    self.held.append(hold)
                if fault.target == "spark" and fault.action == "kill":
                    self.jvm_killed_at = now
        return False

    def _resume(self, code: int, summary: dict | None) -> None:
        """The attempt ended short of "completed": clean it up, wait for the services, start the next."""
        killed = self.driver.reap()
        while any(h.fault.target in ("kafka", "influxdb") for h in self.held):  # as a user waits for the service
            time.sleep(max(0.0, min(h.until for h in self.held) - self.history.now()))
            self._end_holds()
        status = (summary or {}).get("status", "no summary")
        reason = f"signal {signal.Signals(-code).name}" if code < 0 else f"exit {code}"
        self.driver = self._start()
        self.jvm_killed_at = None
        self.history.add("recovery", f"the driver ended ({reason}, status {status}"
                         f"{f', {len(killed)} leftover process(es) killed' if killed else ''}); resumed with the "
                         f"same RUN_ID: attempt {self.attempts}, pid {self.driver.pid}",
                         attempt=self.attempts, pid=self.driver.pid)

    def _end_holds(self, everything: bool = False) -> None:
        """End the holds that are due (all of them with `everything`)."""
        for h in [h for h in self.held if everything or h.until <= self.history.now()]:
            self.held.remove(h)
            _end_hold(h, self.run_.stack, self.history)


def _target_pid(fault: Fault, driver: Driver, stack: StackConfig) -> int | None:
    if fault.target == "driver":
        return driver.pid if driver.exit_code() is None else None
    if fault.target == "spark":
        return driver.spark_pid()
    return service_pid(stack, fault.target)


def _apply(fault: Fault, pid: int, history: History, total: int) -> _Held | None:
    """Signal `pid` for `fault`; the hold to end later (a pause, a service to start again), or None."""
    sig = signal.SIGKILL if fault.action == "kill" else signal.SIGSTOP
    signal_pid(pid, sig)
    planned = f"planned at +{fault.at_s:.1f} s"
    history.add("fault", f"{fault.index + 1}/{total} {sig.name} {fault.target} (pid {pid}; {planned}"
                f"{f', for {fault.hold_s:.1f} s' if fault.action == 'pause' or fault.target in ('kafka', 'influxdb') else ''})",
                fault=fault.index, target=fault.target, action=fault.action, pid=pid, planned_s=fault.at_s)
    if fault.action == "pause" or fault.target in ("kafka", "influxdb"):
        return _Held(fault, pid, history.now() + fault.hold_s)
    return None


def _end_hold(h: _Held, stack: StackConfig, history: History) -> None:
    if h.fault.action == "pause":
        alive = signal_pid(h.pid, signal.SIGCONT)
        history.add("recovery", f"SIGCONT {h.fault.target} (pid {h.pid}) after {h.fault.hold_s:.1f} s"
                    f"{'' if alive else ': it had ended'}", fault=h.fault.index)
        return
    start_services(stack)
    history.add("recovery", f"{h.fault.target} started again (pid {service_pid(stack, h.fault.target)}) after "
                f"{h.fault.hold_s:.1f} s down", fault=h.fault.index)


def _journal_lines(run: NemesisRun, seen: dict[int, str], history: History) -> None:
    """A line per new phase of each rescale event in the run's journal (results/<run_id>/rescale.json)."""
    if not run.plan.rescales:
        return
    try:
        events = json.loads((run.folder / "rescale.json").read_text())["events"]
    except (OSError, ValueError, KeyError):
        return
    for event in events:
        index, phase = event["index"], event.get("phase")
        if seen.get(index) != phase:
            seen[index] = phase
            history.add("rescale", f"event {index + 1}/{len(run.plan.rescales)} ({event.get('event', '')}, "
                        f"{run.plan.protocol}): {phase}", event=index, phase=phase)


def write_record(run: NemesisRun, history: History, verdict: dict) -> Path:
    """`results/<run_id>/nemesis.json`: the plan, the history and the checker's verdict."""
    path = run.folder / "nemesis.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    payload = {"run_id": run.run_id, "command": [sys.executable, *run.argv[1:]], "plan": run.plan.as_dict(),
               "history": history.entries, "check": verdict}
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(payload, indent=2) + "\n")
    tmp.replace(path)
    return path
