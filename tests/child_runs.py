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
