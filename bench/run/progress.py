"""The query's progress as the run's driver reads it (Spark's `StreamingQueryProgress` as a dict):
the first micro-batch, the watermark, the windows still open, the observer catching up with the
checkpoint, and the session's task slots."""

from __future__ import annotations

import time
from datetime import datetime

from bench.run.input import consumed
from bench.run.preflight import RunError
from bench.topology.config import TopologyConfig


def task_slots(spark) -> int:
    """Tasks the session runs at once: Spark's default parallelism (local[N]: N; a cluster: its cores)."""
    return int(spark.sparkContext.defaultParallelism)


def wait_first_batch(topology, listener, timeout_s: float) -> None:
    """Return once the query has run a micro-batch (its start-up done); RunError if it failed or
    ran none within `timeout_s`."""
    deadline = time.monotonic() + timeout_s
    while listener.latest is None:
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
    `end_sent_at`, ms) was read, the watermark passed it, and an empty batch left no window state."""
    return (consumed(progress, config.control_topic, {0: 1})
            and watermark_ms(progress) >= end_sent_at - 1000 * config.watermark_delay_s
            and progress is not None and progress.get("numInputRows", 1) == 0
            and window_state_rows(progress) == 0)


def drain_listener(observer, config: TopologyConfig, timeout_s: float = 15.0) -> None:
    """Wait until the observer has the progress of the last committed batch (events are asynchronous)."""
    commits = config.checkpoint_dir / "main" / "commits"
    ids = [int(p.name) for p in commits.glob("[0-9]*")] if commits.exists() else []
    if not ids:
        return
    last = max(ids)
    deadline = time.monotonic() + timeout_s
    while observer.last_committed_batch() < last and time.monotonic() < deadline:
        time.sleep(0.2)
