"""The session's short nemesis: `make nemesis`'s loop and checker (bench/nemesis) on a 45 s input
with three faults of a fixed seed, run beside the other tests on a stack of its own.

A nemesis kills services: on the session's stack its InfluxDB kill would fail whichever test
wrote to InfluxDB at that moment. So `ShortNemesis` starts a second stack (free ports, a temporary
folder), runs the nemesis there in a background thread and stops that stack afterwards. Its run is
a `bench run` child process with a Spark of its own and is paced (45 s of input whatever the
machine does), so it runs beside the other tests rather than after them: in line, it took
`make test` to 1,292 s of its 1,200 s budget (2026-11-29). It starts once the session's killed
drivers have all been killed and its real-time runs have ended (tests/conftest.py
`nemesis_child`): those start Spark JVMs by the half-dozen. Nothing in it is timed.
"""

from __future__ import annotations

import sys
import threading
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from bench.stack import PortInUse, Stack

SEED = 28
"""Its three faults: the Spark JVM SIGKILLed at +26.8 s, InfluxDB SIGKILLed at +33.5 s and started again
5.8 s later, and a SHARED_STATE rescale to 6 workers at input +17 s."""

RATE, SPAN_S, W = 300, 45.0, 4
PORT_ATTEMPTS = 3
"""Sets of free ports tried for its stack: ports picked free a moment before `Stack.up` can be taken
meanwhile, by another test's Kafka client or Spark (CI, 2026-12-06: "PortInUse: port 34909
(influxdb http) is already in use", with ports picked minutes before, at the session's start)."""


@dataclass
class NemesisOutcome:
    """What the short nemesis left: its `run` (bench.nemesis.runner.NemesisRun), `history`, the
    checker's `verdict` and the console `lines` it printed."""

    run: object
    history: object
    verdict: dict
    lines: list[str]


def nemesis_argv(stack, results: Path, plan) -> list[str]:
    """The `bench run` command line of the short nemesis (KEY_GROUP, NYC_FLIGHTS, RATE x SPAN_S records,
    W workers, `plan`'s rescale schedule and protocol) on `stack`, its results under `results`."""
    return [sys.executable, "-m", "bench", "run", "--grouping", "KEY_GROUP", "--dataset", "NYC_FLIGHTS",
            "--limit", str(int(RATE * SPAN_S)), "--rate", str(RATE), "--workers", str(W), "--splitters", "4",
            "--aggregators", "2", "--cost-ms", "0", "--worker-window-s", "5", "--aggregator-window-s", "10",
            "--watermark-delay-s", "2", "--observer-tick-s", "2", "--trigger-s", "0.5", "--master", "local[2]",
            "--no-progress", "--timeout-s", "900", "--results-dir", str(results),
            "--bootstrap-servers", stack.bootstrap_servers, "--influx-url", stack.influx_url,
            "--influx-database", stack.influx_database, "--rescale", plan.schedule(), "--protocol", plan.protocol]


class ShortNemesis:
    """The short nemesis in a background thread, on a stack of its own under `folder`, started after
    `after()` returns; `wait` gives its outcome."""

    def __init__(self, folder: Path, stack_config: Callable[[], object]):
        """`stack_config()`: a `StackConfig` on ports free now (tests/conftest.py
        `temporary_stack_config`), asked for when the stack starts."""
        self.folder = folder
        self.configure = stack_config
        self.stack_config = None
        self.outcome: NemesisOutcome | None = None
        self.error: str | None = None
        self._thread: threading.Thread | None = None

    def start(self, after: Callable[[], None] = lambda: None) -> None:
        self._thread = threading.Thread(target=self._run, args=(after,), name="short-nemesis", daemon=True)
        self._thread.start()

    def _run(self, after: Callable[[], None]) -> None:
        from bench.nemesis.check import check_run
        from bench.nemesis.plan import plan_faults
        from bench.nemesis.runner import NemesisRun, run_nemesis, write_record
        try:
            after()
            self._up()
            plan = plan_faults(SEED, 3, SPAN_S, SPAN_S, W)
            results = self.folder / "results"
            run = NemesisRun("nemesis-short", nemesis_argv(self.stack_config, results, plan), results,
                             self.stack_config, plan)
            lines: list[str] = []
            history = run_nemesis(run, echo=lines.append)
            verdict = check_run(run.folder, self.stack_config.influx_database, plan.schedule())
            write_record(run, history, verdict)
            self.outcome = NemesisOutcome(run, history, verdict, lines)
        except BaseException:  # the test reports it
            self.error = traceback.format_exc()
        finally:
            if self.stack_config is not None:
                Stack(self.stack_config).down(log=lambda _msg: None)

    def _up(self) -> None:
        """Its stack, on ports picked now; again on other ports when one was taken meanwhile
        (PORT_ATTEMPTS)."""
        for attempt in range(PORT_ATTEMPTS):
            self.stack_config = self.configure()
            try:
                Stack(self.stack_config).up(log=lambda _msg: None)
                return
            except PortInUse:
                if attempt == PORT_ATTEMPTS - 1:
                    raise

    def close(self) -> None:
        """At the session's end: a nemesis still running (its test was not reached) is stopped, its
        `bench run` processes killed (their command lines name this folder) and its stack stopped."""
        if self._thread is None or not self._thread.is_alive():
            return
        import psutil

        for proc in psutil.process_iter(["cmdline"]):
            if str(self.folder) in " ".join(proc.info["cmdline"] or ()):
                proc.kill()
        self._thread.join(120)
        if self.stack_config is not None:
            Stack(self.stack_config).down(log=lambda _msg: None)

    def join(self, timeout_s: float) -> None:
        """Until the nemesis has ended (or was never started), at most `timeout_s`; raises nothing."""
        if self._thread is not None:
            self._thread.join(timeout_s)

    def wait(self, timeout_s: float) -> NemesisOutcome:
        """The outcome once the thread has ended; AssertionError if it did not within `timeout_s` or failed."""
        self._thread.join(timeout_s)
        if self._thread.is_alive():
            raise AssertionError(f"the short nemesis did not end within {timeout_s:g} s (see {self.folder})")
        if self.error is not None:
            raise AssertionError(f"the short nemesis failed:\n{self.error}")
        return self.outcome
