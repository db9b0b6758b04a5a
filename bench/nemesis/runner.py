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
    driver or its JVM waits until the attempt has one. A killed driver or JVM (or any attempt that
    ends short of "completed") is resumed at once with the same RUN_ID, once its old processes are
    gone and no service is down or paused by the nemesis. Faults still pending when the run has
    completed are not applied (the history says how many were).

    Raises: RuntimeError when the run needs more than one resume per fault plus EXTRA_ATTEMPTS.
    """
    history = History(echo=echo)
    pending = list(run.plan.process_faults)
    held: list[_Held] = []
    attempts = 0
    driver: Driver | None = None
    jvm_gone_at: float | None = None
    journal_seen: dict[int, str] = {}

    def start() -> Driver:
        nonlocal attempts
        attempts += 1
        if attempts > len(run.plan.faults) + EXTRA_ATTEMPTS:
            raise RuntimeError(f"the run needed {attempts - 1} attempts for {len(run.plan.faults)} faults: given up")
        return Driver([*run.argv, "--run-id", run.run_id], ROOT,
                      run.folder / "nemesis" / f"attempt-{attempts}.log")

    driver = start()
    history.add("run", f"{run.run_id}: attempt 1, pid {driver.pid} ({' '.join(run.argv[3:])})", pid=driver.pid)
    while True:
        now = history.now()
        for h in [h for h in held if h.until <= now]:
            held.remove(h)
            _end_hold(h, run.stack, history)
        _journal_lines(run, journal_seen, history)
        code = driver.exit_code()
        if code is not None:
            summary = run.summary()
            if code == 0 and summary is not None and summary.get("status") == "completed":
                history.add("run", f"completed after {attempts} attempt(s) (exit 0)", attempts=attempts)
                break
            killed = driver.reap()
            while any(h.fault.target in ("kafka", "influxdb") for h in held):  # a user waits for the service
                h = min(held, key=lambda h: h.until)
                time.sleep(max(0.0, h.until - history.now()))
                held.remove(h)
                _end_hold(h, run.stack, history)
            status = (summary or {}).get("status", "no summary")
            reason = f"signal {signal.Signals(-code).name}" if code < 0 else f"exit {code}"
            driver = start()
            jvm_gone_at = None
            history.add("recovery", f"the driver ended ({reason}, status {status}"
                        f"{f', {len(killed)} leftover process(es) killed' if killed else ''}); resumed with the same "
                        f"RUN_ID: attempt {attempts}, pid {driver.pid}", attempt=attempts, pid=driver.pid)
            continue
        if driver.spark_pid() is None and jvm_gone_at is not None and now - jvm_gone_at > STUCK_DRIVER_S:
            driver.kill_all()
            history.add("recovery", f"the driver had not ended {STUCK_DRIVER_S:g} s after its JVM died: SIGKILL")
            jvm_gone_at = None
        if pending and pending[0].at_s <= now:
            pid = _target_pid(pending[0], driver, run.stack)
            if pid is not None:
                fault = pending.pop(0)
                hold = _apply(fault, pid, history, len(run.plan.process_faults))
                if hold is not None:
                    held.append(hold)
                if fault.target == "spark" and fault.action == "kill":
                    jvm_gone_at = now
        time.sleep(0.1)
    for h in held:
        _end_hold(h, run.stack, history)
    if pending:
        history.add("run", f"{len(pending)} fault(s) not applied: the run completed before their instants",
                    not_applied=[f.index for f in pending])
    return history


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
