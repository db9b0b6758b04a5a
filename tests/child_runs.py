"""Runs of a test session in a child process with a Spark of its own, beside the other tests.

A child module (`python -m tests.<module> SPEC`, e.g. tests/realtime_runs.py) reads SPEC, a JSON
file with the stack's addresses, `results_dir` and what its runs need, runs them one after the
other, and writes `<results_dir>/index.json`, name -> run folder, once every run has ended, and
`error` there if one could not run. `ChildRuns` starts it from a background thread once `after()`
returns, and `wait` gives that index to the tests.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path


def bench_run_argv(addresses: dict, e2e: dict, results_dir: Path | str, *, grouping: str, dataset: str, topic: str,
                   run_id: str, master: str = "local[2]", extra: tuple[str, ...] = ()) -> list[str]:
    """The command line of a `python -m bench run` of `grouping` over `topic` as it is (no replay),
    with the e2e options (`e2e`: tests/conftest.py `E2E_FAST`) on `master`, its results under
    `results_dir`, then `extra`. `addresses`: `bootstrap`, `influx_url`, `influx_database` (the keys
    of tests/conftest.py `stack_spec`)."""
    return [sys.executable, "-m", "bench", "run", "--grouping", grouping, "--dataset", dataset,
            "--topic", topic, "--no-replay", "--run-id", run_id, "--master", master,
            "--bootstrap-servers", addresses["bootstrap"], "--influx-url", addresses["influx_url"],
            "--influx-database", addresses["influx_database"], "--results-dir", str(results_dir), "--no-progress",
            "--workers", str(e2e["workers"]), "--splitters", str(e2e["splitters"]),
            "--aggregators", str(e2e["aggregators"]), "--cost-ms", str(e2e["cost_ms"]),
            "--worker-window-s", str(e2e["worker_window_s"]), "--aggregator-window-s", str(e2e["aggregator_window_s"]),
            "--watermark-delay-s", str(e2e["watermark_delay_s"]), "--observer-tick-s", str(e2e["observer_tick_s"]),
            "--trigger-s", str(e2e["trigger_s"]), "--timeout-s", str(e2e["timeout_s"]), *extra]


class ChildRuns:
    """The child process `python -m <module> <results_dir>/spec.json`, started in a background
    thread after `after()` returns, and its index once it has ended. `what` names its runs in the
    errors."""

    def __init__(self, module: str, what: str, spec: dict, results_dir: Path):
        self.module = module
        self.what = what
        self.results_dir = results_dir
        (results_dir / "spec.json").write_text(json.dumps({**spec, "results_dir": str(results_dir)}))
        self.proc: subprocess.Popen | None = None
        self._closed = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self, after: Callable[[], None] = lambda: None) -> None:
        def launch() -> None:
            after()
            if not self._closed.is_set():
                with (self.results_dir / "child.log").open("wb") as log:
                    self.proc = subprocess.Popen([sys.executable, "-m", self.module, str(self.results_dir / "spec.json")],
                                                 cwd=Path(__file__).resolve().parents[1], stdout=log,
                                                 stderr=subprocess.STDOUT)

        self._thread = threading.Thread(target=launch, name=self.module, daemon=True)
        self._thread.start()

    def join(self, timeout_s: float) -> None:
        """Until the child has ended (or was never launched), at most `timeout_s`; raises nothing."""
        deadline = time.monotonic() + timeout_s
        self._thread.join(timeout_s)
        if self.proc is not None:
            try:
                self.proc.wait(max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                pass

    def wait(self, timeout_s: float) -> dict:
        """The index the child wrote (name -> run folder, or `error`); AssertionError with the end of
        its log if it did not end within `timeout_s` or wrote none."""
        deadline = time.monotonic() + timeout_s
        self._thread.join(timeout_s)
        try:
            self.proc.wait(max(1.0, deadline - time.monotonic()))
        except (AttributeError, subprocess.TimeoutExpired):
            raise AssertionError(f"the {self.what} did not end within {timeout_s:g} s; "
                                 f"see {self.results_dir / 'child.log'}") from None
        index_file = self.results_dir / "index.json"
        index = json.loads(index_file.read_text()) if index_file.exists() else {}
        if not index or "error" in index:
            log = (self.results_dir / "child.log").read_text(errors="replace")[-4000:]
            raise AssertionError(f"the {self.what} failed: {index.get('error')}\n{log}")
        return index

    def summaries(self, timeout_s: float) -> dict[str, dict]:
        """name -> summary.json of each run in the index (`wait`)."""
        return {name: json.loads((Path(folder) / "summary.json").read_text())
                for name, folder in self.wait(timeout_s).items()}

    def close(self) -> None:
        self._closed.set()
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(60)
