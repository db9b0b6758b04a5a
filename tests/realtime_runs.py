"""The real-time runs of a test session, in a child process with a Spark of its own.

Real-Time Mode holds a task slot for every task of its query for the whole real-time batch (18 with
the e2e options, `TopologyConfig.realtime_task_slots`), where the session's shared Spark has two
(tests/conftest.py `spark`). So one child process (`python -m tests.realtime_runs SPEC`) starts a
`local[18]` session and runs, one after the other:

- every grouping in real-time mode over the session's shared input topic (its recorded 2,000
  records and 5 malformed ones), `realtime-<grouping>`;
- a live run that replays its own topic (2,000 records at 500 records/s, 1 ms of cost), `realtime-live`;
- a paced run with 5 s real-time batches in a `bench run` grandchild (its own Spark), SIGKILLed once
  its real-time query has committed two batches (so the resumed one restores the grouping instances
  from their state) and its aggregator has written two, then resumed here with the same run id,
  `realtime-killed`.

`RealtimeChild` starts it when the first test that uses the stack sets up (tests/conftest.py
`realtime_child`), once the session's killed drivers have all been killed (six Spark JVMs at once
on two cores made a Python worker miss its connection timeout), and it runs beside the other tests;
nothing in it is timed. SPEC is a JSON file: `bootstrap`, `influx_url`, `influx_database`,
`results_dir`, `topic`, `e2e` (`E2E_FAST`); the child writes `<results_dir>/index.json`, name ->
summary.json's path, once every run has ended, and `error` there if one could not run.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
import traceback
from collections.abc import Callable
from pathlib import Path

KILL_AFTER_BATCHES = 2
"""The killed run's driver is SIGKILLed once its real-time query has committed this many batches and
its aggregator has written as many."""
KILLED_BATCH_S = 5
"""The killed run's real-time batches, s (Spark's minimum)."""
LIVE = dict(limit=2000, rate=500.0, cost_ms=1.0, latency_warmup_s=0.0)


class RealtimeChild:
    """The child process of the session's real-time runs, started in a background thread after
    `after()` returns (the killed drivers' end), and its index once it has ended."""

    def __init__(self, spec: dict, results_dir: Path):
        self.results_dir = results_dir
        (results_dir / "spec.json").write_text(json.dumps(spec))
        self.proc: subprocess.Popen | None = None
        self._closed = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self, after: Callable[[], None] = lambda: None) -> None:
        def launch() -> None:
            after()
            if not self._closed.is_set():
                with (self.results_dir / "child.log").open("wb") as log:
                    self.proc = subprocess.Popen(
                        [sys.executable, "-m", "tests.realtime_runs", str(self.results_dir / "spec.json")],
                        cwd=Path(__file__).resolve().parents[1], stdout=log, stderr=subprocess.STDOUT)

        self._thread = threading.Thread(target=launch, name="realtime-child", daemon=True)
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
            raise AssertionError(f"the real-time runs did not end within {timeout_s:g} s; "
                                 f"see {self.results_dir / 'child.log'}") from None
        index_file = self.results_dir / "index.json"
        index = json.loads(index_file.read_text()) if index_file.exists() else {}
        if not index or "error" in index:
            log = (self.results_dir / "child.log").read_text(errors="replace")[-4000:]
            raise AssertionError(f"the real-time runs failed: {index.get('error')}\n{log}")
        return index

    def close(self) -> None:
        self._closed.set()
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(60)


def options(spec: dict, grouping: str, run_id: str, **extra):
    from bench.run.options import RunOptions

    return RunOptions(grouping=grouping, dataset="NYC_FLIGHTS", mode="realtime", run_id=run_id,
                      bootstrap_servers=spec["bootstrap"], influx_url=spec["influx_url"],
                      influx_database=spec["influx_database"], results_dir=Path(spec["results_dir"]),
                      **{**spec["e2e"], **extra})


def killed_then_resumed(spec: dict, spark, run_id: str) -> dict:
    """A paced DYNAMIC_KEY run (3,000 records at 200 records/s, real-time batches of KILLED_BATCH_S)
    in a `bench run` child, SIGKILLed after KILL_AFTER_BATCHES real-time and aggregator batches,
    then resumed in `spark` with the same run id."""
    from bench.run.preflight import prepare
    from bench.run.stream import run_stream

    e2e, results = spec["e2e"], Path(spec["results_dir"])
    command = [sys.executable, "-m", "bench", "run", "--grouping", "DYNAMIC_KEY", "--dataset", "NYC_FLIGHTS",
               "--mode", "realtime", "--run-id", run_id, "--limit", "3000", "--rate", "200",
               "--realtime-batch-s", str(KILLED_BATCH_S),
               "--bootstrap-servers", spec["bootstrap"], "--no-influx", "--results-dir", str(results),
               "--no-progress", "--timeout-s", "600",
               *[arg for name in ("workers", "splitters", "aggregators", "cost_ms", "worker_window_s",
                                  "aggregator_window_s", "watermark_delay_s", "observer_tick_s")
                 for arg in (f"--{name.replace('_', '-')}", str(e2e[name]))]]
    partials = results / run_id / "partials"
    commits = results / run_id / "checkpoint" / "realtime" / "commits"

    def done() -> tuple[int, int]:
        return len(list(partials.glob("batch-*.parquet"))), len([c for c in commits.glob("[0-9]*")])
    with (results / f"{run_id}.log").open("wb") as log:
        child = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    deadline = time.monotonic() + 600
    while min(done()) < KILL_AFTER_BATCHES:
        if child.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError(f"the run to kill ended or stalled before {KILL_AFTER_BATCHES} real-time and "
                               f"aggregator batches {done()} "
                               f"(exit {child.returncode}); see {results / f'{run_id}.log'}")
        time.sleep(0.2)
    os.killpg(child.pid, signal.SIGKILL)  # the driver and its Spark JVM, as a machine failure would
    child.wait(30)
    batches, commits_at_kill = done()
    killed = {"killed_after_batches": batches, "realtime_commits": commits_at_kill}
    summary = run_stream(prepare(options(spec, "DYNAMIC_KEY", run_id, limit=3000, rate=200.0, own_topic=True,
                                         no_influx=True, realtime_batch_s=KILLED_BATCH_S)),
                         spark=spark, log=lambda *_: None)
    return {**summary, **killed}


def main(spec_path: str) -> int:
    from bench.run.preflight import prepare
    from bench.run.stream import run_stream
    from bench.topology.session import build_session
    from groupings import GROUPINGS

    spec = json.loads(Path(spec_path).read_text())
    results = Path(spec["results_dir"])
    index: dict = {}
    stamp = int(time.time())
    try:
        recorded = [prepare(options(spec, g, f"rt-{g.lower()}-{stamp}", topic=spec["topic"], replay=False))
                    for g in GROUPINGS]
        spark = build_session(recorded[0].options.master, spec["e2e"]["aggregators"])
        for prepared in recorded:
            summary = run_stream(prepared, spark=spark, log=lambda *_: None)
            index[f"realtime-{prepared.config.grouping}"] = summary["results"]
        live = run_stream(prepare(options(spec, "DYNAMIC_KEY", f"rt-live-{stamp}", own_topic=True, **LIVE)),
                          spark=spark, log=lambda *_: None)
        index["realtime-live"] = live["results"]
        killed = killed_then_resumed(spec, spark, f"rt-killed-{stamp}")
        (Path(killed["results"]) / "killed.json").write_text(json.dumps(
            {k: killed[k] for k in ("killed_after_batches", "realtime_commits")}))
        index["realtime-killed"] = killed["results"]
    except Exception:  # reported to the tests through the index
        index["error"] = traceback.format_exc()
    (results / "index.json").write_text(json.dumps(index, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
