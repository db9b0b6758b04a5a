"""The query's progress as the run's driver reads it (Spark's `StreamingQueryProgress` as a dict):
the first micro-batch, the watermark, the windows still open, the observer catching up with the
checkpoint, and the session's task slots."""

from __future__ import annotations

import time
from datetime import datetime
from pathlib import Path

from bench.rescale.kafka_clock import topic_timestamps_ms
from bench.run.input import consumed, send_end_of_input
from bench.run.preflight import RunError
from bench.topology.checkpoint_log import batch_ids, committed_offsets
from bench.topology.config import TopologyConfig


def task_slots(spark) -> int:
    """Tasks the session runs at once: Spark's default parallelism (local[N]: N; a cluster: its cores)."""
    return int(spark.sparkContext.defaultParallelism)


WAITING_FOR_DATA = "Waiting for data to arrive"
"""Spark's `StreamingQuery.status` message of a query with no micro-batch to run until new input."""


def wait_first_batch(topology, listener, timeout_s: float, resumed: bool = False) -> None:
    """Return once the query has run a micro-batch (its start-up done), or, when it `resumed` from a
    checkpoint with a committed batch, once it waits for data (`WAITING_FOR_DATA`): Spark runs such a
    query's next micro-batch only for new input, so a replay that waited for one would never start
    (`make nemesis` seed 2, 2026-12-02: a driver that died after the query's first, empty batch and
    before its replay had written a record left an empty topic, and every later attempt waited for
    ever). RunError if the query failed or did neither within `timeout_s`."""
    deadline = time.monotonic() + timeout_s
    while listener.latest is None:
        if resumed and (topology.main.status or {}).get("message") == WAITING_FOR_DATA:
            return
        if topology.exception() is not None:
            raise RunError(f"the query failed: {topology.exception()}")
        if time.monotonic() > deadline:
            raise RunError(f"the query ran no micro-batch within --timeout-s {timeout_s:g}")
        time.sleep(0.2)


def watermark_ms(progress: dict | None) -> int:
    """The query's event-time watermark after the batch of `progress`, epoch ms (0: none yet)."""
    wm = ((progress or {}).get("eventTime") or {}).get("watermark")
    return int(datetime.fromisoformat(wm.replace("Z", "+00:00")).timestamp() * 1000) if wm else 0


def window_state_rows(progress: dict) -> int:
    """Rows the windowed operators (worker, aggregator) still hold; the grouping stage's
    transformWithState keeps its state for good and does not count."""
    return sum(int(op.get("numRowsTotal") or 0) for op in progress.get("stateOperators") or []
               if "transformWithState" not in str(op.get("operatorName")))


def windows_closed(progress: dict | None, config: TopologyConfig, end_sent_at: int) -> bool:
    """Whether the last windows are closed and written: the end-of-input record (timestamp
    `end_sent_at`, ms) was read, a batch ran under a watermark past it (the batch's own: Spark's
    progress gives the watermark a batch evicted with), and that batch left no window state. That
    batch is the empty one after the end-of-input's, or the batch of an end-of-input sent again
    (`end_of_input_again`)."""
    return (consumed(progress, config.control_topic, {0: 1})
            and watermark_ms(progress) >= end_sent_at - 1000 * config.watermark_delay_s
            and progress is not None and window_state_rows(progress) == 0)


def end_of_input_again(config: TopologyConfig, ends: dict[int, int], sent_ms: int | None, log=print) -> int | None:
    """For an attempt resuming a checkpoint that has consumed the whole input (`ends`, the input
    topic's end offsets): the end-of-input record sent now, and its timestamp; None otherwise.

    Spark runs a micro-batch only for new input, so such a query would run none, and the driver
    would wait for ever for the batch that shows the input consumed, then for the one that closes
    the last windows (make nemesis, 2026-11-29: a driver SIGKILLed after the input was consumed).
    The record carries the earlier end-of-input's timestamp `sent_ms` when an attempt sent one (the
    watermark stays where it was), else the input topic's newest Kafka timestamp plus the close
    horizon: read from the topic, not from the batches the observer has seen, which may lag the
    checkpoint at this point (`make chaos`'s Ctrl-C case: 9.3 s behind, so the windows after it
    never closed)."""
    committed = committed_offsets(config.query_checkpoint, config.topic)
    if not all(committed.get(p, 0) >= end for p, end in ends.items() if end > 0):
        return None
    if sent_ms is None:
        timestamps = topic_timestamps_ms(config.bootstrap_servers, config.topic)
        if timestamps is None:
            return None
        end_at = timestamps[1] + config.close_horizon_ms
    else:
        end_at = sent_ms
    log(f"the checkpoint has consumed the whole input ({sum(ends.values())} records); "
        f"{'the end-of-input record again' if sent_ms is not None else 'closing the last windows'} ...")
    send_end_of_input(config.bootstrap_servers, config.control_topic, end_at)
    return end_at


def drain_listener(observer, config: TopologyConfig, timeout_s: float = 15.0) -> None:
    """Wait until the observer has the progress of the last committed batch (events are asynchronous)."""
    ids = batch_ids(config.checkpoint_dir / "main" / "commits")
    if not ids:
        return
    last = ids[-1]
    deadline = time.monotonic() + timeout_s
    while observer.last_committed_batch() < last and time.monotonic() < deadline:
        time.sleep(0.2)
