"""A warm Spark session before the measured runs (`warm_up`), and which single run needs one
(`measures_latency`)."""

from __future__ import annotations

import secrets
import tempfile
from dataclasses import replace
from pathlib import Path

from bench.run.input import record_input
from bench.run.stream import run_stream
from bench.run.preflight import Prepared, prepare
from bench.topology.config import MIN_REALTIME_BATCH_S

WARM_UP_RECORDS = 50_000
REALTIME_WARM_UP_S = 30.0
"""A real-time run's warm-up before a live replay: this many seconds of input at the run's own rate
and cost, replayed live as the run's will be."""


def warm_up(spark, first: Prepared, log=print) -> dict:
    """Run the first grouping once, unmeasured, in a temporary results folder and without InfluxDB:
    at cost 0 on the first WARM_UP_RECORDS records of the dataset (recorded into `<topic>.warmup`);
    a real-time run that replays live, on REALTIME_WARM_UP_S of its input replayed live at its own
    rate and cost instead.

    The first query of a session pays the start-up of the JVM's code paths and of a Python worker
    per task slot and stage: on two busy cores, 150 s more for whichever grouping a run-all ran
    first (NYC_FLIGHTS, 200,000 records, cost 1 ms: SHUFFLE 171 s first and KEY 55 s second, KEY
    258 s first and SHUFFLE 60 s second, 2026-11-25). A warm-up of 5,000 records removed most of
    that but not all: the first measured run's stages before the workers (read, split, grouping)
    still took 12.1-14.9 s for a 200,000-record batch against 5.7-6.1 s in the run after it (the
    JIT compiles the per-record paths only once they have run often). With WARM_UP_RECORDS read
    at cost 0 (the cost is a sleep, nothing to warm), every measured run starts with the same warm
    session.

    Real-time mode runs each tuple through the query on its own, and a new query's first seconds of
    a paced input ran slower than the rest after an unpaced warm-up: `make bench GROUPING=DYNAMIC_KEY
    MODE=realtime` (500 records/s, cost 1 ms) had LAT p99 505-516 ms in its first 20 s and 107-186 ms
    after them, with the Spark JVM at 1.5 cores, then 0.8-1.0 (2026-11-29). So its warm-up replays
    the run's own pace. Returns the warm-up's summary (not reported)."""
    live = first.config.realtime and bool(first.options.rate)
    with tempfile.TemporaryDirectory(prefix="bench-warmup-") as folder:
        options = warm_up_options(first, Path(folder))
        prepared = prepare(options, ensure_stack=False, log=log)
        if not live:
            record_input([prepared], log=lambda *_: None)
        log(f"warming up the Spark session ({first.config.grouping}, {options.limit} records"
            f"{f' live at {options.rate:g} records/s' if live else ''}, not measured) ...")
        return run_stream(prepared, spark=spark, log=lambda *_: None)


def warm_up_options(first: Prepared, folder: Path):
    """The warm-up run's `RunOptions` (`warm_up`), its results under `folder`.

    A run id of its own for each warm-up: its checkpoint is temporary, so the warm-up of a resumed
    run (its driver killed after the last warm-up sent its end of input) starts afresh, which that
    warm-up's control topic would refuse (preflight's fresh-run-id check). No rescale: the warm-up's
    unpaced input spans under a second of event time, before any event of a schedule, and a resumed
    warm-up finds that input and would refuse the schedule as beyond it (both found by make nemesis,
    2026-11-29). The worker state of a rescale run is kept, so that it is warmed up too. No cap on
    the records per trigger: the run's `--max-offsets-per-trigger 200` made the warm-up 250
    micro-batches, 5 minutes on two cores before the run's first batch (make chaos, 2026-12-02); the
    per-record code paths it warms are the same in a few large batches. A real-time warm-up that
    keeps the worker state has Spark's shortest real-time batches: the run waits for a batch to
    commit the state at its end (`bench.run.realtime`)."""
    batch_s = MIN_REALTIME_BATCH_S if first.options.worker_state else first.options.realtime_batch_s
    if first.config.realtime and first.options.rate:
        limit, rate, cost_ms = int(REALTIME_WARM_UP_S * first.options.rate), first.options.rate, first.options.cost_ms
    else:
        limit, rate, cost_ms = WARM_UP_RECORDS, None, 0.0
    return replace(first.options, run_id=f"warmup-{secrets.token_hex(3)}-{first.run_id}"[:100],
                   topic=f"{first.config.topic}.warmup"[:249], own_topic=False, limit=limit, rate=rate,
                   cost_ms=cost_ms, max_offsets_per_trigger=None, no_influx=True, results_dir=folder, checkpoint_root=None, experiment_id=None,
                   progress=False, rescale=None, worker_state=first.options.worker_state or bool(first.options.rescale),
                   realtime_batch_s=batch_s)


def measures_latency(prepared: Prepared) -> bool:
    """Whether the run will report a processing latency: a first attempt (no checkpoint yet) that
    replays its input live at a rate. Such a run starts after `warm_up` when run alone: on two
    cores the session's first batches with data took 5-13 s each (Python workers and JIT starting,
    2026-11-25), and the backlog they left raised the run's LAT p99 from about 5 s (steady
    batches) to 16-21 s; after a warm-up, 12.6 s (one slow batch of 11 s under load)."""
    return bool(prepared.options.rate) and not prepared.topic_exists \
        and not prepared.config.query_checkpoint.exists()
