"""The processes a nemesis hits, found by pid: the run's driver and its Spark JVM (children of the
nemesis), and the stack's Kafka broker and InfluxDB (their pid files, `bench.stack`).

Only processes the project started are signalled: the driver is the nemesis's own child, started in
a process group of its own; the JVM is found among that child's descendants; the services' pids
are the ones `bench.stack` checks against their command lines.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import psutil

from bench.stack import Stack, StackConfig

SPARK_MAIN = "org.apache.spark.deploy.SparkSubmit"
"""The main class on the command line of PySpark's JVM (pyspark's launcher runs spark-submit)."""

GONE_WAIT_S = 60.0
"""How long the old attempt's processes may take to end after its driver died before they are
SIGKILLed (PySpark's JVM ends when its driver's pipe closes)."""


class Driver:
    """One attempt of the run: `python -m bench run` in its own process group, its output in `log`."""

    def __init__(self, argv: list[str], cwd: Path, log: Path):
        self.log = log
        log.parent.mkdir(parents=True, exist_ok=True)
        with log.open("ab") as out:
            self.proc = subprocess.Popen(argv, cwd=cwd, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)

    @property
    def pid(self) -> int:
        return self.proc.pid

    def exit_code(self) -> int | None:
        return self.proc.poll()

    def spark_pid(self) -> int | None:
        """The Spark JVM's pid, None before it started or after it ended."""
        try:
            for child in psutil.Process(self.pid).children(recursive=True):
                try:
                    if SPARK_MAIN in " ".join(child.cmdline()):
                        return child.pid
                except psutil.Error:
                    continue
        except psutil.Error:
            return None
        return None

    def group(self) -> list[psutil.Process]:
        """Every process left in the attempt's process group (the driver's children outlive it)."""
        out = []
        for proc in psutil.process_iter(["pid"]):
            try:
                if os.getpgid(proc.pid) == self.pid:
                    out.append(proc)
            except (ProcessLookupError, PermissionError, psutil.Error):
                continue
        return out

    def reap(self) -> list[int]:
        """After the driver exited: wait up to GONE_WAIT_S for its process group to end, then SIGKILL
        what is left, so that no JVM of this attempt runs beside the next one on the same checkpoint.
        Returns the pids it had to kill."""
        self.proc.wait()
        deadline = time.monotonic() + GONE_WAIT_S
        while self.group() and time.monotonic() < deadline:
            time.sleep(0.2)
        left = self.group()
        for proc in left:
            try:
                proc.send_signal(signal.SIGCONT)  # a stopped process dies on SIGKILL too, but say so
                proc.kill()
            except psutil.Error:
                continue
        psutil.wait_procs(left, timeout=30)
        return [p.pid for p in left]

    def interrupt(self, timeout_s: float = 120.0) -> None:
        """SIGINT to the attempt's process group, as a terminal's Ctrl-C (the run stops and says how to
        resume it); SIGKILL if it has not ended within `timeout_s`."""
        try:
            os.killpg(self.pid, signal.SIGINT)
            self.proc.wait(timeout_s)
        except ProcessLookupError:
            pass
        except subprocess.TimeoutExpired:
            self.kill_all()

    def kill_all(self) -> None:
        """SIGKILL the attempt's whole process group (a driver stuck after its JVM died)."""
        try:
            os.killpg(self.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def service_pid(stack: StackConfig, target: str) -> int | None:
    """The running pid of the stack's `kafka` or `influxdb`, or None while it is down."""
    for service in Stack(stack).services:
        if service.name == target:
            return service.process.running_pid()
    raise ValueError(f"no stack service {target!r}")


def start_services(stack: StackConfig) -> None:
    """Start what of the stack is down and wait until it answers (`Stack.up`)."""
    Stack(stack).up(log=lambda _message: None)


def signal_pid(pid: int, sig: signal.Signals) -> bool:
    """Send `sig` to `pid`; False if it is gone."""
    try:
        os.kill(pid, sig)
        return True
    except ProcessLookupError:
        return False
