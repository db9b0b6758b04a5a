"""The real-time runs of a test session, in a child process with a Spark of its own.

Real-Time Mode holds a task slot for every task of its query for the whole real-time batch (20 with
the e2e options and the worker state, 35 for the rescale run's six workers in six state partitions:
`TopologyConfig.realtime_task_slots`), where the session's shared Spark has two (tests/conftest.py
`spark`). So one child process (`python -m tests.realtime_runs SPEC`) starts a local session with as
many slots as its largest run needs and runs, one after the other:

- every grouping in real-time mode over the session's shared input topic (its recorded 2,000
  records and 5 malformed ones), keeping the workers' state (`--worker-state`, committed at the end
  of each real-time batch of SHORT_BATCH_S), `realtime-<grouping>`;
- a live run that replays its own topic (2,000 records at 500 records/s, 1 ms of cost), `realtime-live`;
- a paced run with 5 s real-time batches in a `bench run` grandchild (its own Spark), SIGKILLed once
  its real-time query has committed two batches (so the resumed one restores the grouping instances
  from their state) and its aggregator has written two, then resumed here with the same run id,
  `realtime-killed`;
- a live KEY_GROUP run that rescales twice by STOP_THE_WORLD (RESCALE), `realtime-rescale`, and the
  same in a `bench run` grandchild SIGKILLed in its first event (KILLED_PHASES), resumed here,
  `realtime-rescale-killed`; the same two by SHARED_STATE, `realtime-shared-state` and
  `realtime-shared-state-killed` (SIGKILLed while the routers wait at the first event's barrier;
  `make chaos` only: KILLED); the same by LEARNER (`make chaos` only), `realtime-learner`; and by
  HANDOFF (REALTIME_HANDOFF_BATCH units a round), `realtime-handoff`, and `realtime-handoff-killed`
  (SIGKILLed after its first step; `make chaos` only).

The first test that uses the stack starts it (tests/conftest.py `realtime_child`, a
`tests.child_runs.ChildRuns`), once the session's killed drivers have all been killed (six Spark
JVMs at once on two cores made a Python worker miss its connection timeout), and it runs beside the
other tests; nothing in it is timed. SPEC is a JSON file: `bootstrap`, `influx_url`,
`influx_database`, `results_dir`, `topic`, `e2e` (`E2E_FAST`); the child writes
`<results_dir>/index.json`, name -> run folder, once every run has ended, and `error` there if one
could not run.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import traceback
from pathlib import Path

KILL_AFTER_BATCHES = 2
"""The killed run's driver is SIGKILLed once its real-time query has committed this many batches and
its aggregator has written as many."""
SHORT_BATCH_S = 5
"""The real-time batches of the killed run and of the runs that keep the worker state, s (Spark's
minimum): such a run ends once a batch has committed the state of every tuple."""
LIVE = dict(limit=2000, rate=500.0, cost_ms=1.0, latency_warmup_s=0.0)
RESCALE = dict(limit=2400, rate=100.0, rescale="8000ms:+4,+5,16000ms:-1", realtime_batch_s=SHORT_BATCH_S,
               latency_warmup_s=0.0)
"""24 s of input; W = 4 -> 6 -> 5 (ids 0, 2-5 at the end), each event a few real-time batches after the
one before; each run with its protocol (PROTOCOLS)."""
KILLED_PHASES = {"STOP_THE_WORLD": "savepoint", "SHARED_STATE": "savepoint", "HANDOFF": "handing_over"}
"""Where the killed rescale runs' drivers are SIGKILLed, by protocol (bench/rescale/stop_the_world_realtime.py:
the real-time query stopped and every worker's state read; shared_state_realtime.py: the state read
and moved to `<run>.state`, the routers waiting for the epoch; handoff_realtime.py: the first step
published, the routers holding the first round)."""
CHAOS = os.environ.get("BENCH_CHAOS") == "1"
PROTOCOLS = {"rescale": "STOP_THE_WORLD", "shared-state": "SHARED_STATE", **({"learner": "LEARNER"} if CHAOS else {}),
             "handoff": "HANDOFF"}
"""The rescale runs' names (`realtime-<name>`, and `realtime-<name>-killed` for KILLED) and protocols."""
KILLED = ("rescale", "shared-state", "handoff") if CHAOS else ("rescale",)
"""The rescale runs also killed and resumed: SHARED_STATE's and HANDOFF's with `make chaos` only, which keeps
`make test` within its budget (LEARNER's switch is SHARED_STATE's, resumed alike). LEARNER's run
too is `make chaos`'s only (PROTOCOLS)."""


REALTIME_HANDOFF_BATCH = 32
"""HANDOFF's units per round in the real-time run: a round takes a real-time batch (SHORT_BATCH_S), so
4 -> 6 -> 5 hands its 95 and 46 moved key groups over in 4 and 3 steps, where the micro-batch tests'
8 (tests/killing.py HANDOFF_BATCH) took 8 and 5."""


def handoff_batch(protocol: str) -> dict:
    return {"handoff_batch": REALTIME_HANDOFF_BATCH} if protocol == "HANDOFF" else {}


def options(spec: dict, grouping: str, run_id: str, **extra):
    from bench.run.options import RunOptions

    return RunOptions(grouping=grouping, dataset="NYC_FLIGHTS", mode="realtime", run_id=run_id,
                      bootstrap_servers=spec["bootstrap"], influx_url=spec["influx_url"],
                      influx_database=spec["influx_database"], results_dir=Path(spec["results_dir"]),
                      **{**spec["e2e"], **extra})


def _command(spec: dict, grouping: str, run_id: str, limit: int, rate: float, *extra: str) -> list[str]:
    """A paced `bench run` of `grouping` in real-time mode over its own topic, with the e2e options and
    real-time batches of SHORT_BATCH_S."""
    e2e, results = spec["e2e"], Path(spec["results_dir"])
    return [sys.executable, "-m", "bench", "run", "--grouping", grouping, "--dataset", "NYC_FLIGHTS",
            "--mode", "realtime", "--run-id", run_id, "--limit", str(limit), "--rate", str(rate),
            "--realtime-batch-s", str(SHORT_BATCH_S),
            "--bootstrap-servers", spec["bootstrap"], "--no-influx", "--results-dir", str(results),
            "--no-progress", "--timeout-s", "600",
            *[arg for name in ("workers", "splitters", "aggregators", "cost_ms", "worker_window_s",
                               "aggregator_window_s", "watermark_delay_s", "observer_tick_s")
              for arg in (f"--{name.replace('_', '-')}", str(e2e[name]))], *extra]


def _kill_when(command: list[str], log_path: Path, ready, what: str, env: dict | None = None) -> None:
    """Run `command` as a child (its own session) until `ready()`, then SIGKILL it and its Spark JVM,
    as a machine failure would. RuntimeError if it ended or took 600 s first."""
    with log_path.open("wb") as log:
        child = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
                                 env={**os.environ, **(env or {})})
    deadline = time.monotonic() + 600
    while not ready():
        if child.poll() is not None or time.monotonic() > deadline:
            if child.poll() is None:
                os.killpg(child.pid, signal.SIGKILL)
            raise RuntimeError(f"the run to kill ended or stalled before {what} (exit {child.returncode}); "
                               f"see {log_path}")
        time.sleep(0.2)
    os.killpg(child.pid, signal.SIGKILL)
    child.wait(30)


def killed_then_resumed(spec: dict, spark, run_id: str) -> dict:
    """A paced DYNAMIC_KEY run (3,000 records at 200 records/s, real-time batches of SHORT_BATCH_S)
    in a `bench run` child, SIGKILLed after KILL_AFTER_BATCHES real-time and aggregator batches,
    then resumed in `spark` with the same run id."""
    from bench.run.preflight import prepare
    from bench.run.stream import run_stream

    results = Path(spec["results_dir"])
    partials = results / run_id / "partials"
    commits = results / run_id / "checkpoint" / "realtime" / "commits"

    def done() -> tuple[int, int]:
        return len(list(partials.glob("batch-*.parquet"))), len([c for c in commits.glob("[0-9]*")])
    _kill_when(_command(spec, "DYNAMIC_KEY", run_id, 3000, 200), results / f"{run_id}.log",
               lambda: min(done()) >= KILL_AFTER_BATCHES,
               f"{KILL_AFTER_BATCHES} real-time and aggregator batches")
    batches, commits_at_kill = done()
    killed = {"killed_after_batches": batches, "realtime_commits": commits_at_kill}
    summary = run_stream(prepare(options(spec, "DYNAMIC_KEY", run_id, limit=3000, rate=200.0, own_topic=True,
                                         no_influx=True, realtime_batch_s=SHORT_BATCH_S)),
                         spark=spark, log=lambda *_: None)
    return {**summary, **killed}


def rescale_killed_then_resumed(spec: dict, spark, run_id: str, protocol: str) -> dict:
    """The RESCALE run by `protocol` in a `bench run` child, SIGKILLed once its journal has the first
    event at its KILLED_PHASES phase, then resumed in `spark` with the same run id."""
    from bench.rescale.driver import HANG_AFTER
    from bench.run.preflight import prepare
    from bench.run.stream import run_stream

    results = Path(spec["results_dir"])
    journal = results / run_id / "rescale.json"

    phase = KILLED_PHASES[protocol]

    def at_phase() -> bool:
        try:
            return json.loads(journal.read_text())["events"][0]["phase"] == phase
        except (OSError, ValueError, KeyError, IndexError):
            return False
    units = [arg for value in handoff_batch(protocol).values() for arg in ("--handoff-batch", str(value))]
    _kill_when(_command(spec, "KEY_GROUP", run_id, RESCALE["limit"], RESCALE["rate"], "--rescale", RESCALE["rescale"],
                        "--protocol", protocol, "--latency-warmup-s", "0", *units),
               results / f"{run_id}.log", at_phase, f"the first event's {phase}", {HANG_AFTER: f"{phase}@0"})
    return run_stream(prepare(options(spec, "KEY_GROUP", run_id, own_topic=True, no_influx=True,
                                      **{**RESCALE, "protocol": protocol}, **handoff_batch(protocol))),
                      spark=spark, log=lambda *_: None)


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
        recorded = [prepare(options(spec, g, f"rt-{g.lower()}-{stamp}", topic=spec["topic"], replay=False,
                                    worker_state=True, realtime_batch_s=SHORT_BATCH_S))
                    for g in GROUPINGS]
        rescaled = {name: prepare(options(spec, "KEY_GROUP", f"rt-{name}-{stamp}", own_topic=True,
                                          **{**RESCALE, "protocol": protocol}, **handoff_batch(protocol)))
                    for name, protocol in PROTOCOLS.items()}
        slots = max(p.config.realtime_task_slots for p in (*recorded, *rescaled.values()))
        spark = build_session(f"local[{slots}]", spec["e2e"]["aggregators"])
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
        for name, protocol in PROTOCOLS.items():
            index[f"realtime-{name}"] = run_stream(rescaled[name], spark=spark, log=lambda *_: None)["results"]
            if name in KILLED:
                killed_rescale = rescale_killed_then_resumed(spec, spark, f"rt-{name}-killed-{stamp}", protocol)
                index[f"realtime-{name}-killed"] = killed_rescale["results"]
    except Exception:  # reported to the tests through the index
        index["error"] = traceback.format_exc()
    (results / "index.json").write_text(json.dumps(index, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
