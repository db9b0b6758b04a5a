"""What Spark itself costs per micro-batch on this machine, measured beside a latency run: the
batch cycle of the empty query (the run's own spout into Spark's `noop` sink, the same topic, the
same session, batches of the run's median size).

A paced run's LAT is at least the time a record waits for its batch plus that batch's duration;
no topology on this engine can make a batch shorter than the empty query's, so the figure tells how
much of a run's LAT is the topology and how much the engine (issue 37: the limit printed beside the
harness's figures; `make perf`'s stages section measures the same query against batch size).
"""

from __future__ import annotations

import statistics
import tempfile
import time
from dataclasses import replace

from bench.results.batches import journal_batches
from bench.results.record import RunRecord
from bench.topology import spout
from bench.topology.config import TopologyConfig

FLOOR_BATCHES = 10
"""Batches of the empty query measured (after its first, which plans the query and opens the
consumers): 76-114 ms each at `make bench`'s batch sizes (2026-11-28), a few seconds with the
query's start."""
FLOOR_TIMEOUT_S = 120.0
"""The empty query is stopped after this long even if it has not run `FLOOR_BATCHES` batches."""


def empty_query_cycle(spark, config: TopologyConfig, records_per_batch: int, batches: int = FLOOR_BATCHES,
                      timeout_s: float = FLOOR_TIMEOUT_S) -> dict:
    """Run the empty query on the run's input topic (`config.topic`, and its control topic, as the
    run's spout) from its first offset, `records_per_batch` records per micro-batch
    (`maxOffsetsPerTrigger`; at least 1), back to back (Spark's `availableNow` trigger), until it
    has run `batches` batches after its first or read the whole topic.

    Returns `{"query", "records_per_batch", "batches", "cycle_p50_ms", "cycle_max_ms"}`: the median
    and the largest batch duration (Spark's `triggerExecution`, ms) of the measured batches: fewer
    than asked when the topic ran out first, and with none (0 batches) no cycle.
    Raises whatever the query raised (a broker gone, a topic deleted)."""
    config = replace(config, max_offsets_per_trigger=max(1, int(records_per_batch)))
    frame = spout.read_kafka(spark, config)
    with tempfile.TemporaryDirectory(prefix="bench-floor-") as checkpoint:
        query = (frame.writeStream.format("noop").queryName(f"{config.run_id}-empty")
                 .option("checkpointLocation", checkpoint).trigger(availableNow=True).start())
        deadline = time.monotonic() + timeout_s
        try:
            while time.monotonic() < deadline and query.isActive and \
                    sum(1 for p in query.recentProgress if p["numInputRows"]) <= batches:
                time.sleep(0.1)
            if query.exception() is not None:
                raise query.exception()
            progress = query.recentProgress
        finally:
            query.stop()
    durations = [int(p["durationMs"]["triggerExecution"]) for p in progress if p["numInputRows"]][1:batches + 1]
    return {"query": "spout -> noop", "records_per_batch": config.max_offsets_per_trigger,
            "batches": len(durations), "cycle_p50_ms": statistics.median(durations) if durations else None,
            "cycle_max_ms": max(durations) if durations else None}


def measure_floor(spark, config: TopologyConfig, summary: dict, batches: int = FLOOR_BATCHES) -> dict:
    """`empty_query_cycle` at the run's median batch size (the batches of its observer journal,
    `<results_dir>/observer/progress.jsonl`, that read records), added to `summary` as
    `spark_floor` and written to the run's summary.json (a batch journalled twice by a resumed run
    counts once). Returns the summary (unchanged when the journal has no batch with records)."""
    sizes = [b["records"] for b in journal_batches(config.results_dir).values() if b.get("records")]
    if not sizes:
        return summary
    summary["spark_floor"] = empty_query_cycle(spark, config, int(statistics.median(sizes)), batches)
    RunRecord(config.run_id, root=config.results_dir.parent).write_summary(summary)
    return summary


def describe_floor(summary: dict) -> str | None:
    """The line printed under the result table, or None when the run has no `spark_floor`."""
    floor = summary.get("spark_floor")
    if not floor or not floor.get("batches"):
        return None
    return (f"Spark's floor ({summary['grouping']}): {floor['cycle_p50_ms']:,.0f} ms per batch (median of "
            f"{floor['batches']}, max {floor['cycle_max_ms']:,} ms), the empty query (this run's spout into Spark's "
            f"noop sink) on the same topic and session at {floor['records_per_batch']:,} records per batch: no LAT "
            "p99 here can fall below about one such cycle")
