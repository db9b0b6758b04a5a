"""Dead letters without a second read of the input topic: only batches with malformed records are read again.

The splitter counts each micro-batch's malformed records (observed metrics `splitter`). For a
batch with malformed > 0, `DeadLetters` reads that batch's offset range once more, as a Spark batch
query (`spout.read_range`), keeps the malformed records (`splitter.dead_letters`, the splitter's own
expressions) and hands them to `DeadLetterSink` (`<run>.dlq`, `dlq/batch-<id>.parquet`). A batch
without malformed records costs nothing. (Before, a second streaming query read and parsed every
record once more, for dead letters that most datasets never have.)

Coverage: `dlq/covered.json` holds the input offsets up to which every dead letter is written.
A batch's range must start there. If it does not (a progress event was lost, or the driver stopped
after Spark committed a batch and before its dead letters were written), the gap is read together
with the batch, whatever its malformed count, so a restarted run loses no dead letter. A dead
letter written twice has the same Kafka key (`partition:offset`); readers take one value per key.

Progress events arrive on Spark's listener thread, which must not block: it only enqueues, and one
driver thread does the reads, in batch order.
"""

from __future__ import annotations

import json
import queue
import threading
import time
from pathlib import Path

from bench.metrics import SPLITTER_METRICS
from bench.topology import splitter, spout
from bench.topology.config import TopologyConfig
from bench.topology.sink import DeadLetterSink


def malformed_count(progress: dict) -> int | None:
    """The batch's malformed input records per the splitter's observed metrics; None if not reported."""
    metrics = (progress.get("observedMetrics") or {}).get(SPLITTER_METRICS)
    return None if metrics is None or metrics.get("malformed") is None else int(metrics["malformed"])


def range_to_read(covered: dict[int, int], start: dict[int, int], end: dict[int, int],
                  malformed: int | None) -> dict[int, int] | None:
    """Where to start reading a batch `start -> end` for its dead letters, given the offsets already
    covered; None: nothing to read (the batch follows the covered offsets and has no malformed record).

    Offsets are next-to-read per partition; an empty `start` is the first batch of a checkpoint
    (earliest offsets), like an empty `covered`.
    """
    if start != covered:
        return covered  # a gap: read from where coverage stopped
    if malformed == 0 or not any(end.get(p, 0) > start.get(p, spout.EARLIEST) for p in end):
        return None
    return start


class DeadLetters:
    """Writes the dead letters of the main query's batches from their progress (see the module text).

    `on_progress(progress dict)` is the listener's callback. `covers(ends)` says whether every
    dead letter before `ends` is written; `error` holds the exception that stopped the thread
    (a Kafka or Spark failure), which the orchestrator turns into a failed run.
    """

    def __init__(self, spark, config: TopologyConfig, splitter_sql):
        self.spark = spark
        self.config = config
        self.splitter_sql = splitter_sql
        self.sink = DeadLetterSink(config.run_id, config.results_dir, config.bootstrap_servers, config.dlq_topic)
        self._file = Path(config.results_dir) / "dlq" / "covered.json"
        self.covered: dict[int, int] = (
            {int(p): int(o) for p, o in json.loads(self._file.read_text())["offsets"].items()}
            if self._file.exists() else {})
        self.batches_read = 0
        self.error: BaseException | None = None
        self._lock = threading.Lock()
        self._queue: queue.Queue = queue.Queue()
        self._thread = threading.Thread(target=self._loop, name="dead-letters", daemon=True)
        self._thread.start()

    def on_progress(self, progress: dict) -> None:
        self._queue.put(progress)

    def covers(self, ends: dict[int, int]) -> bool:
        with self._lock:
            return all(self.covered.get(p, 0) >= end for p, end in ends.items() if end > 0)

    def close(self, timeout_s: float = 300.0) -> None:
        """Handle the progress events already received, then stop the thread and the Kafka writer."""
        self._queue.put(None)
        self._thread.join(timeout_s)
        self.sink.close()

    def _loop(self) -> None:
        while (progress := self._queue.get()) is not None:
            if self.error is None:
                try:
                    self.handle(progress)
                except Exception as e:  # reported through `error`; later events are not handled
                    self.error = e

    def handle(self, progress: dict) -> None:
        """Write the dead letters of one batch (and of any gap before it), then advance the coverage."""
        topic = self.config.topic
        end = spout.batch_offsets(progress, topic, "endOffset")
        if not end:
            return
        start = spout.batch_offsets(progress, topic, "startOffset")
        with self._lock:
            covered = dict(self.covered)
        read_from = range_to_read(covered, start, end, malformed_count(progress))
        if read_from is None and end == covered:
            return  # a batch without input records: nothing read, nothing to record
        if read_from is not None:
            records = spout.read_range(self.spark, self.config, read_from, end)
            self.sink(splitter.dead_letters(records, self.splitter_sql, self.config.max_key_bytes),
                      int(progress["batchId"]))
            self.batches_read += 1
        self._file.parent.mkdir(parents=True, exist_ok=True)
        tmp = self._file.with_name(self._file.name + ".tmp")
        tmp.write_text(json.dumps({"batch_id": int(progress["batchId"]), "written_ms": int(time.time() * 1000),
                                   "offsets": {str(p): o for p, o in sorted(end.items())}}))
        tmp.replace(self._file)
        with self._lock:
            self.covered = end
