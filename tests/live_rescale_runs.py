"""The paced rescale runs of a test session, in a child process with a Spark of its own.

A rescale on a live input is asserted on runs that replay their own topic (VNODE, 4 -> 6 workers at
4 s, RESCALE_SCHEDULE): SHARED_STATE, LEARNER and HANDOFF inside the running query, 40 s of input
(tests/topology/test_rescale_in_the_running_query.py), and STOP_THE_WORLD, 80 s of input
(tests/topology/test_rescale_live.py). Most of their time is the replay's pace, so one child process (`python -m
tests.live_rescale_runs SPEC`) runs them one after the other, with a `local[2]` session built as the
session's shared one (tests/conftest.py `spark`), while the other tests use the cores; in the
session they took 54, 50, 50 and 89 s of its wall time (2026-12-02).

The first test that uses the stack starts it (tests/conftest.py `live_rescale_child`, a
`tests.child_runs.ChildRuns`) once the session's real-time runs have ended, so that it does not
share the cores with their `local[18]` Spark. SPEC is a JSON file: `bootstrap`, `influx_url`,
`influx_database`, `results_dir`, `e2e` (`E2E_FAST`); the child writes `<results_dir>/index.json`,
run name (`live-<protocol>`) -> run folder, once every run has ended, and `error` there if one
could not run.
"""

from __future__ import annotations

import json
import sys
import time
import traceback
from pathlib import Path

RESCALE_SCHEDULE = "4s:6"
IN_QUERY_INPUT = dict(limit=5_000, rate=125.0)
"""40 s of input for the protocols inside the running query. With 20 s, LEARNER's pause came after
the input had ended in 3 of 4 runs on 2026-11-28 (warm-up 6.0-7.5 s, barrier wait 2.1-2.6 s, batches
with data a median 3.2-3.7 s on both grouping stages), so the test checked the machine's speed, not
the protocol."""
STOP_THE_WORLD_INPUT = dict(limit=3_200, rate=40.0)
"""80 s of input for STOP_THE_WORLD. Measured alone on 2 cores: the stop came 15 s into the input
(each batch of this three-stage query takes 3-11 s here) and the query resumed 30 s after it
(finishing the barrier batch 11 s, the restart and the switch batch). 80 s of input leave records to
arrive after the resume with about twice that pause to spare; with 20 s the switch batch read the
whole rest and the window after the event was empty."""
PROTOCOLS = ("SHARED_STATE", "LEARNER", "HANDOFF", "STOP_THE_WORLD")


def run_input(protocol: str) -> dict:
    """The `limit` and `rate` of `protocol`'s run."""
    return STOP_THE_WORLD_INPUT if protocol == "STOP_THE_WORLD" else IN_QUERY_INPUT


def options(spec: dict, protocol: str, run_id: str):
    from bench.run.options import RunOptions
    from tests.killing import HANDOFF_BATCH

    extra = {} if protocol == "STOP_THE_WORLD" else {
        "own_topic": True, "handoff_batch": HANDOFF_BATCH if protocol == "HANDOFF" else 1}
    return RunOptions(grouping="VNODE", dataset="NYC_FLIGHTS", run_id=run_id, bootstrap_servers=spec["bootstrap"],
                      influx_url=spec["influx_url"], influx_database=spec["influx_database"],
                      results_dir=Path(spec["results_dir"]),
                      **{**spec["e2e"], "replay": True, **run_input(protocol), "rescale": RESCALE_SCHEDULE,
                         "protocol": protocol, "latency_warmup_s": 0.0, **extra})


def main(spec_path: str) -> int:
    from bench.run.preflight import prepare
    from bench.run.stream import run_stream
    from bench.topology.session import build_session
    from tests.conftest import long_lived_jvm

    spec = json.loads(Path(spec_path).read_text())
    results = Path(spec["results_dir"])
    index: dict = {}
    stamp = int(time.time())
    try:
        with long_lived_jvm():
            spark = build_session("local[2]", shuffle_partitions=2)
        for protocol in PROTOCOLS:
            run = prepare(options(spec, protocol, f"e2e-{protocol.lower()}-live-{stamp}"))
            index[f"live-{protocol}"] = run_stream(run, spark=spark, log=lambda *_: None)["results"]
    except Exception:  # reported to the tests through the index
        index["error"] = traceback.format_exc()
    (results / "index.json").write_text(json.dumps(index, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
