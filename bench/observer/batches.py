"""The facts the observer keeps of each micro-batch, from its progress (`batch_figures`); the batch
journal a run record keeps of them (`<run>/observer/progress.jsonl`) is read back by
`bench.results.batches.journal_batches`.

A batch's progress carries the observed metrics of the worker stage (`bench.topology.worker`: rows,
the grouping stage's routing summaries, the worker tasks' latency histograms) and of the splitter
(`bench.topology.splitter`: records, malformed, tuples, weight), and Spark's own figures.
"""

from __future__ import annotations

import json
from datetime import datetime

import numpy as np

from bench import latency
from bench.metrics import SPLIT_TUPLES_METRICS, SPLITTER_METRICS, WORKER_METRICS
from bench.stack.resources import ROUTING_SUMMARY


def _iso_ms(text: str) -> int:
    return int(datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp() * 1000)


def routed_figures(summaries: list[str], workers: int) -> tuple[list[int], list[int], list[tuple[str, int]]]:
    """The per-batch loads, tuples (length W each) and sorted distinct (key, worker) pairs from the
    grouping stage's routing summaries (JSON, one per splitter instance with tuples in the batch;
    `bench.topology.grouping_stage.routing_summary`)."""
    loads = np.zeros(workers, dtype=np.int64)
    tuples = np.zeros(workers, dtype=np.int64)
    pairs: set = set()
    for text in summaries:
        summary = json.loads(text)
        loads += np.asarray(summary[ROUTING_SUMMARY.loads], dtype=np.int64)
        tuples += np.asarray(summary[ROUTING_SUMMARY.tuples], dtype=np.int64)
        pairs.update((key, int(worker)) for worker, key in summary[ROUTING_SUMMARY.pairs])
    return loads.tolist(), tuples.tolist(), sorted(pairs)


def worker_histograms(sent: list[str]) -> tuple[dict[str, str], dict[str, list[int]]]:
    """What the worker stage observed in one batch (`bench.topology.worker.LATENCY_LINE`:
    `<worker>|<first ms>|<last ms>|<encoded histogram>`, or `<worker>|<encoded>`) merged per worker:
    `({str(worker): encoded}, {str(worker): [first, last processed, epoch ms]})`."""
    parts: dict[str, list[str]] = {}
    spans: dict[str, list[int]] = {}
    for text in sent:
        fields = text.split("|", 3)
        worker, encoded = fields[0], fields[-1]
        parts.setdefault(worker, []).append(encoded)
        if len(fields) == 4:
            first, last = int(fields[1]), int(fields[2])
            old = spans.get(worker)
            spans[worker] = [first, last] if old is None else [min(old[0], first), max(old[1], last)]
    merged = {w: latency.encode(latency.merge(encoded)) for w, encoded in sorted(parts.items(), key=lambda i: int(i[0]))}
    return merged, spans


def state_store_figures(progress: dict) -> dict:
    """A query's state stores at the end of the batch of `progress` (a `StreamingQueryProgress` as
    JSON), summed over its stateful operators: `state_memory_bytes`, Spark's `memoryUsedBytes`
    (RocksDB's memtables, block caches and pinned blocks); `state_sst_bytes`, the
    `rocksdbSstFileSize` custom metric (the state's data files)."""
    ops = progress.get("stateOperators") or []
    return {
        "state_memory_bytes": int(sum(int(o.get("memoryUsedBytes") or 0) for o in ops)),
        "state_sst_bytes": int(sum(int((o.get("customMetrics") or {}).get("rocksdbSstFileSize") or 0) for o in ops)),
    }


def batch_figures(progress: dict, workers: int) -> dict:
    """The per-batch facts the observer keeps from one progress dict."""
    observed = progress.get("observedMetrics") or {}
    wk = observed.get(WORKER_METRICS) or {}
    loads, tuples, pairs = routed_figures(wk.get("routed") or [], workers)
    sp = observed.get(SPLITTER_METRICS) or {}
    st = observed.get(SPLIT_TUPLES_METRICS) or {}
    ops = progress.get("stateOperators") or []
    start = _iso_ms(progress["timestamp"])
    duration = int((progress.get("durationMs") or {}).get("triggerExecution", 0))
    fig = {
        "batch_id": int(progress["batchId"]),
        "start_ms": start,
        "end_ms": start + duration,
        "duration_ms": duration,
        "input_rows": int(progress.get("numInputRows") or 0),
        "processed_rows_per_s": float(progress.get("processedRowsPerSecond") or 0.0),
        "rows": int(wk.get("rows") or 0),
        "loads": loads,
        "tuples": tuples,
        "pairs": pairs,
        "records": int(sp.get("records") or 0),
        "malformed": int(sp.get("malformed") or 0),
        "split_tuples": int(st.get("tuples") or 0),
        "split_weight": int(st.get("weight") or 0),
        "max_ts_ms": int(sp["max_ts_ms"]) if sp.get("max_ts_ms") is not None else None,
        "state_rows": int(sum(int(o.get("numRowsTotal") or 0) for o in ops)),
        **state_store_figures(progress),
        "window_state_rows": int(sum(int(o.get("numRowsTotal") or 0) for o in ops
                                     if "transformWithState" not in str(o.get("operatorName")))),
        "dropped_by_watermark": int(sum(int(o.get("numRowsDroppedByWatermark") or 0) for o in ops)),
        "watermark": (progress.get("eventTime") or {}).get("watermark"),
        "phases_ms": {k: int(v) for k, v in (progress.get("durationMs") or {}).items()},
    }
    fig["latency"], fig["processed_ms"] = worker_histograms(wk.get("latency") or [])
    released = released_figures(wk.get("routed") or [])
    if released:
        fig["released"] = released
    return fig


def released_figures(summaries: list[str]) -> list[list[int]]:
    """`[[hold batch, tuples], ...]` (ascending) of the held tuples a HANDOFF's routers sent in one
    batch, summed over the grouping stage's routing summaries (their `released`, the JVM stage's
    `Handoff`); empty for any other batch."""
    released: dict[int, int] = {}
    for text in summaries:
        for hold_batch, tuples in json.loads(text).get(ROUTING_SUMMARY.released) or ():
            released[int(hold_batch)] = released.get(int(hold_batch), 0) + int(tuples)
    return [[b, released[b]] for b in sorted(released)]
