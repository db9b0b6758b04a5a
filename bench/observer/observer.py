"""Storm's DistributionObserverBolt, on the driver: cumulative figures per tick, from exact inputs.

Inputs, both de-duplicated by batch id (a batch re-run after a restart replaces, never adds):
- each batch's progress (`listener.ProgressListener`): the observed metrics `workers` (the rows
  that reached the worker tasks, and the grouping stage's routing summaries: per-worker weighted and
  tuple counts, distinct key-worker pairs), `splitter` (records, malformed) and `split_tuples`
  (tuples, weight), and Spark's own figures (rows/s, batch duration, state rows and
  memory, rows dropped by the watermark);
- each batch's final aggregates (`bench.topology.sink.AggregateSink`): totals per (window, key),
  with the time they were written, for the end-to-end latency and the hottest keys.

Reference figures (§10) follow the reference's rules: cumulative, STD_DEV over the W configured
workers with idle ones at 0 % (Q20), DIST_COST = pairs / keys, THROUGHPUT_RATIO = total / whole
seconds since the observer's first input (Q21), recomputed only on a tick that saw new data (a
quiet tick keeps the last values). Deviation (documented in docs/topology.md): the observer's
clock runs from the start of the first micro-batch with data to the end of the last one. Extra figures sit beside them (Q21/Q22): per-worker share,
max/mean imbalance, STD_DEV of the last tick interval, processing latency p50/p99/p99.9/max of
the tuples of the batches since the last tick (HDR histograms, `bench.latency`), window output
latency, Spark's progress figures.

Everything the observer receives is appended to `results/<run>/observer/progress.jsonl`, so a
restarted run resumes with the same cumulative figures. In memory it keeps every batch's scalar
figures, and the bulky ones (distinct pairs, latency histograms, worker spans) only for the newest
DETAIL_BATCHES batches: older ones are folded into running totals (`Observer.batch_details` reads
them all back from the journal).
"""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import numpy as np
import pandas as pd

from bench import latency, metrics
from bench.observer.batches import batch_figures
from bench.results.batches import journal_batches, read_batches, timestamps_ms

DETAIL_BATCHES = 32
"""How many of the newest batches (by batch id) keep their bulky figures (BULKY) in the observer's
memory; an older batch that a tick has covered has its pairs, latency and worker spans folded into
the run's totals and its phase times dropped (`Observer._fold`; the journal keeps them all). A batch
is delivered again only when the query re-runs it after a restart, and that is one of the newest.
Rebuilt from the 3,000,000-record soak's journal and ticks (soak-mb-5), the observer held 6.9 MiB
at its 493rd batch without the fold, 13.7 KB per batch, 11 KB of it in these four; with the fold,
4.3 MiB, 2.3 of them the folded latency histograms (229 KB per worker, whatever the run's length)."""
BULKY = ("pairs", "latency", "processed_ms", "phases_ms")


def weighted_quantile(values: np.ndarray, weights: np.ndarray, q: float) -> float:
    """The smallest value v with (sum of weights of values <= v) >= q * total weight. NaN if empty."""
    values = np.asarray(values, dtype=float)
    weights = np.asarray(weights, dtype=float)
    if values.size == 0 or weights.sum() <= 0:
        return float("nan")
    order = np.argsort(values, kind="stable")
    cum = np.cumsum(weights[order])
    idx = int(np.searchsorted(cum, q * cum[-1], side="left"))
    return float(values[order][min(idx, values.size - 1)])



def batch_us_per_row(batches: list[dict]) -> float | None:
    """The time `batches` (batch figures) took per row they read, in µs: the triggerExecution of
    those that read any, summed, over their input rows, summed; None when none read any. Where a
    batch's time is mostly its rows' (the workers' cost per tuple), this stays level while the batch
    time grows and shrinks with how many rows the batches hold, which is what a loaded topology's
    batches do: a longer batch leaves more records for the next one."""
    read = [b for b in batches if b.get("input_rows")]
    rows = sum(int(b["input_rows"]) for b in read)
    return round(1000.0 * sum(int(b["duration_ms"]) for b in read) / rows, 1) if rows else None


def overlaps(spans: list[tuple[int, int | None]], lo_ms: int, hi_ms: int) -> bool:
    """Whether a rescale span overlaps the tick interval (lo_ms, hi_ms] (an open span: until now).

    Args: spans: `(start, end)` wall-clock spans, epoch ms (`bench.rescale.figures.rescale_spans`),
        `end` None while the rescale is under way; lo_ms, hi_ms: the tick's interval, epoch ms."""
    return any(start <= hi_ms and (end is None or end > lo_ms) for start, end in spans)


class Observer:
    """Tick logic and outputs of one run. Thread-safe: the listener, the sink and the ticker call in."""

    def __init__(self, run_id: str, workers: int, folder: Path, *, tags: dict | None = None,
                 outputs: tuple = (), record=None, live_input: bool = True, latency_warmup_s: float = 0.0,
                 rescale_spans=None):
        """`live_input` False: the input topic was recorded before the run, so a latency measured from
        the Kafka timestamp would measure the topic's age, not the pipeline: latency is not reported.
        `latency_warmup_s`: the run's processing latency (`run_latency`) leaves out the batches that
        started within this many seconds of the first batch with data (Python workers' start-up);
        the per-tick figures keep them.
        `rescale_spans`: for a rescale run, a callable returning the `(stop, resumed)` wall-clock
        spans (epoch ms; resumed None while under way) of its rescales (`bench.rescale.figures.
        rescale_spans`); each tick then has `rescaling`: a span `overlaps` the tick's interval
        (from the previous tick's time, or the first batch with data, to this tick's)."""
        self.run_id = run_id
        self.workers = workers
        self.folder = Path(folder)
        self.tags = dict(tags or {})
        self.outputs = list(outputs)
        self.record = record
        self.live_input = live_input
        self.latency_warmup_s = latency_warmup_s
        self.rescale_spans = rescale_spans
        self._lock = threading.RLock()
        self._write_lock = threading.Lock()
        self._rows_written = 0
        self.batches: dict[int, dict] = {}
        self.aggregates: dict[int, pd.DataFrame] = {}
        self.rows: list[dict] = []
        self.start_ms: int | None = None
        self.last_data_ms: int | None = None
        self._last_total = 0
        self._last_reference: dict = {}
        self._previous_loads = np.zeros(workers, dtype=np.int64)
        self.output_errors: list[str] = []
        self.resources = None
        """A callable giving each tick's resource figures (`bench.observer.resources.ResourceProbe`), or None."""
        self.audited = {"records": 0, "malformed": 0}
        """A real-time run's input records and malformed ones, counted by its input audit
        (`bench.topology.audit`) rather than per batch."""
        self._pairs_seen: dict[tuple, tuple] = {}
        self._folded_ids: set[int] = set()
        self._folded_pairs: set[tuple] = set()
        self._folded_steady: dict[int, object] = {}
        """Worker -> the latency histogram of its tuples in the folded batches after the warm-up."""
        self._folded_warm_tuples = 0
        self._folded_spans: dict[int, list[int]] = {}
        self._journal = self.folder / "observer" / "progress.jsonl"
        self._ticker: threading.Thread | None = None
        self._stop = threading.Event()
        self._resume()

    # -- inputs ---------------------------------------------------------------------------------
    def _resume(self) -> None:
        for batch_id, fig in journal_batches(self.folder).items():
            fig["pairs"] = self._shared(fig["pairs"])
            self.batches[batch_id] = fig
        aggregates = read_batches(self.folder / "aggregates")
        if len(aggregates):
            for batch_id, frame in aggregates.groupby("batch_id"):
                self.aggregates[int(batch_id)] = frame
        metrics_file = self.folder / "metrics.parquet"
        if metrics_file.exists():
            self.rows = pd.read_parquet(metrics_file).to_dict("records")
            if self.rows:
                last = self.rows[-1]
                self._last_total = int(last.get("total_count") or 0)
                self._last_reference = {k: last.get(k) for k in
                                        ("std_dev", "dist_cost", "throughput_ratio", "total_count", "duration_ms")}
                self._previous_loads = self.loads()
        self._set_start()
        self._fold()

    def _set_start(self) -> None:
        with_data = [b for b in self.batches.values() if b["rows"] > 0]
        if with_data:
            self.start_ms = min(b["start_ms"] for b in with_data)
            self.last_data_ms = max(b["end_ms"] for b in with_data)

    def on_progress(self, progress: dict) -> None:
        """A micro-batch's progress (the listener's callback): its figures (`batch_figures`)."""
        self.on_batch(batch_figures(progress, self.workers))

    def on_batch(self, fig: dict) -> None:
        """One batch's figures (`batch_figures`' keys; in real-time mode the aggregator's,
        `bench.topology.realtime_aggregator`), journalled; a batch id seen before is replaced."""
        with self._lock:
            self._journal.parent.mkdir(parents=True, exist_ok=True)
            with self._journal.open("a") as f:
                f.write(json.dumps(fig) + "\n")
            fig["pairs"] = self._shared(fig["pairs"])
            if fig["batch_id"] in self._folded_ids:  # delivered again after its fold: the folded figures stay
                fig = {k: v for k, v in fig.items() if k not in BULKY}
            self.batches[fig["batch_id"]] = fig
            self._set_start()

    def _shared(self, pairs) -> list[tuple]:
        """A batch's (key, worker) pairs as references to the observer's one copy of each pair: the
        observer keeps every batch's figures, and the pairs repeat from batch to batch (a soak of
        3,000,000 US_FLIGHTS_3M records, 1,346 batches, held 63 MiB of them in copies of their own)."""
        known = self._pairs_seen
        return [known.setdefault(p, p) for p in map(tuple, pairs)]

    def _fold(self) -> None:
        """Fold the bulky figures (BULKY) of the batches older than the newest DETAIL_BATCHES and
        already covered by a tick into the run's totals: their distinct pairs, their latency after
        the warm-up per worker (before it, a tuple count) and each worker's first and last
        processed instant; their phase times are dropped. The caller holds the lock (or is the
        constructor)."""
        if not self.batches:
            return
        last_ticked = self._last_ticked()
        newest = max(self.batches)
        cut = (self.start_ms or 0) + 1000 * self.latency_warmup_s
        for batch_id, fig in self.batches.items():
            if batch_id > last_ticked or batch_id > newest - DETAIL_BATCHES or "pairs" not in fig:
                continue
            self._folded_pairs.update(fig.pop("pairs"))
            self._folded_pairs.difference_update(map(tuple, fig.pop("pairs_taken_back", None) or ()))
            encoded = fig.pop("latency", None) or {}
            if fig["start_ms"] >= cut:
                for w, enc in encoded.items():
                    latency.merge([enc], into=self._folded_steady.setdefault(int(w), latency.new_histogram()))
            else:
                self._folded_warm_tuples += int(latency.merge(encoded.values()).get_total_count())
            for w, (first, last) in (fig.pop("processed_ms", None) or {}).items():
                old = self._folded_spans.get(int(w))
                self._folded_spans[int(w)] = [first, last] if old is None else \
                    [min(old[0], first), max(old[1], last)]
            fig.pop("phases_ms", None)  # Spark's phase times: kept in the journal, never totalled
            self._folded_ids.add(batch_id)

    def batch_details(self) -> dict[int, dict]:
        """Every batch's figures with the bulky ones (BULKY), read back from the journal
        (`journal_batches`): for the checks and figures that need them per batch at a run's end (a
        rescale run's ownership check and per-event figures)."""
        return journal_batches(self.folder)

    def on_aggregates(self, batch_id: int, frame: pd.DataFrame) -> None:
        """Batch `batch_id`'s final totals (the sink's frame). Only a batch that closed a window is
        kept: most batches close none, and an empty frame still costs 5.5 KB (a 3,000,000-record
        soak: 5 MiB of them by its 1,000th batch)."""
        with self._lock:
            if len(frame):
                self.aggregates[batch_id] = frame
            else:
                self.aggregates.pop(batch_id, None)

    # -- figures --------------------------------------------------------------------------------
    def loads(self) -> np.ndarray:
        with self._lock:
            return np.array([b["loads"] for b in self.batches.values()], dtype=np.int64).reshape(-1, self.workers).sum(axis=0)

    def pairs(self) -> set:
        """The distinct (key, worker) pairs routed so far."""
        with self._lock:
            out = set(self._folded_pairs)
            for batch_id in sorted(self.batches):
                out.update(self.batches[batch_id].get("pairs") or ())
                out.difference_update(map(tuple, self.batches[batch_id].get("pairs_taken_back") or ()))
            return out

    def final_aggregates(self) -> pd.DataFrame:
        """Every final total per (window, key) written so far, the last written where a window was
        written again (a real-time run's late update corrects it)."""
        with self._lock:
            frames = [self.aggregates[b] for b in sorted(self.aggregates)]
        if not frames:
            return pd.DataFrame()
        agg = pd.concat(frames, ignore_index=True)
        return agg.drop_duplicates(["window_start", "key"], keep="last", ignore_index=True)

    def last_committed_batch(self) -> int:
        with self._lock:
            return max(self.batches, default=-1)

    def tick(self, now_ms: int | None = None) -> dict:
        """Compute one row of figures, rewrite metrics.parquet, and send the row to the outputs: the run
        record first, so that an output never holds a tick that the record lacks (a driver killed
        between the two; a resumed run writes the record's ticks to InfluxDB again)."""
        now_ms = int(time.time() * 1000) if now_ms is None else now_ms
        # Outside the lock: a folder walk and a call into the JVM must not hold up the batches' progress.
        sample = self.resources() if self.resources is not None else {}
        with self._lock:
            row = {**self._row(now_ms), **sample}
            self.rows.append(row)
            rows = list(self.rows)
            self._fold()
        if self.record is not None:
            # The ticker thread and the driver loop both tick: one writer at a time, newest wins.
            with self._write_lock:
                if len(rows) > self._rows_written:
                    self.record.write_metrics(pd.DataFrame(rows))
                    self._rows_written = len(rows)
        for out in self.outputs:
            try:
                out(row)
            except Exception as e:  # an output must never stop the run
                self.output_errors.append(f"{type(e).__name__}: {e}")
        return row

    def _row(self, now_ms: int) -> dict:
        """The figures of the tick at `now_ms` (the caller holds the lock): the reference figures
        (recomputed only on new data), the tick interval's, the last batch's, latency, the window
        output and, for a rescale run, whether a rescale was under way (`rescaling`)."""
        loads = self.loads()
        total = int(loads.sum())
        pairs = self.pairs()
        keys = {k for k, _ in pairs}
        batches = [self.batches[i] for i in sorted(self.batches)]
        last = batches[-1] if batches else {}
        if total > self._last_total:
            self._update_reference(loads, total, len(pairs), len(keys), now_ms)
        window_loads = loads - self._previous_loads
        self._previous_loads = loads
        agg = self.final_aggregates()
        last_ticked = self._last_ticked()
        fresh = [b for b in batches if b["batch_id"] > last_ticked]
        row = {
            "run_id": self.run_id,
            "tick": len(self.rows),
            "time_ms": now_ms,
            **{k: self._last_reference.get(k) for k in ("std_dev", "dist_cost", "throughput_ratio", "total_count", "duration_ms")},
            "max_mean_imbalance": metrics.max_mean_imbalance(loads, self.workers) if total else None,
            # a tick whose window holds a rescale's take-back (real-time mode) has no load distribution
            "window_std_dev": metrics.std_dev_percent(window_loads, self.workers)
            if window_loads.sum() and window_loads.min() >= 0 else None,
            "window_count": int(window_loads.sum()),
            "keys": len(keys),
            "pairs": len(pairs),
            "worker_loads": loads.tolist(),
            "worker_shares": (100.0 * loads / total).tolist() if total else [0.0] * self.workers,
            "records": sum(b["records"] for b in batches) + self.audited["records"],
            "malformed": sum(b["malformed"] for b in batches) + self.audited["malformed"],
            "dropped_by_watermark": sum(b["dropped_by_watermark"] for b in batches),
            "batches": len(batches),
            "last_batch_id": last.get("batch_id"),
            "processed_rows_per_s": last.get("processed_rows_per_s"),
            "batch_duration_ms": last.get("duration_ms"),
            "batch_us_per_row": batch_us_per_row(fresh),
            "state_rows": last.get("state_rows"),
            "state_memory_bytes": last.get("state_memory_bytes"),
            "state_sst_bytes": last.get("state_sst_bytes"),
            "aggregated_count": int(agg["count"].sum()) if len(agg) else 0,
            **self._latency(fresh, "latency"),
            **(window_latency_figures(agg) if self.live_input else window_latency_figures(agg.iloc[0:0])),
            "hottest_keys": json.dumps(hottest_keys(agg)),
        }
        if self.rescale_spans is not None:
            since = self.rows[-1]["time_ms"] if self.rows else (self.start_ms or now_ms)
            row["rescaling"] = overlaps(self.rescale_spans(), int(since), now_ms)
        return row

    def _last_ticked(self) -> int:
        """The last batch id a tick covered, -1 before any."""
        last = self.rows[-1].get("last_batch_id") if self.rows else None
        return -1 if last is None or last != last else int(last)  # NaN: a tick before any batch

    def _update_reference(self, loads: np.ndarray, total: int, pairs: int, keys: int, now_ms: int) -> None:
        """The reference figures (§10) of a tick that saw new data: STD_DEV, DIST_COST,
        THROUGHPUT_RATIO, TOTAL COUNT and the observer time (ms), from the cumulative `loads`
        (shape (W,)), their `total`, the distinct key-worker `pairs` and `keys`."""
        # Observer time runs from the start of the first batch with data to the end of the
        # last one (not to the tick: an idle wait before the tick is not processing time).
        elapsed = max(0, (self.last_data_ms or now_ms) - (self.start_ms or now_ms))
        self._last_reference = {
            "std_dev": metrics.std_dev_percent(loads, self.workers),
            "dist_cost": metrics.dist_cost(pairs, keys),
            "throughput_ratio": metrics.throughput_ratio(total, elapsed),
            "total_count": total,
            "duration_ms": elapsed,
        }
        self._last_total = total

    def _latency(self, batches: list[dict], prefix: str) -> dict:
        """Processing-latency figures (`bench.latency.figures_ms`) of the tuples of `batches`; None
        percentiles when the input was not live."""
        encoded = (enc for b in batches for enc in (b.get("latency") or {}).values())
        return self._latency_figures(latency.merge(encoded), prefix)

    def _latency_figures(self, merged, prefix: str) -> dict:
        """`bench.latency.figures_ms` of the histogram `merged`; None percentiles when the input was
        not live."""
        figures = latency.figures_ms(merged, prefix)
        if not self.live_input:
            figures = {k: (None if k.endswith("_ms") else v) for k, v in figures.items()}
        return figures

    def run_latency(self) -> dict:
        """The run's processing latency after the warm-up: `latency_p50_ms` ... `latency_max_ms`,
        `latency_tuples`, `warmup_s`, `warmup_tuples` (left out), and per worker
        `per_worker_p99_ms` (length W; None for a worker without tuples). Empty if not live."""
        if not self.live_input:
            return {}
        with self._lock:
            batches = [b for b in self.batches.values() if b.get("latency")]
            start = self.start_ms
            per_worker = {w: _copy(h) for w, h in self._folded_steady.items()}
            warm_tuples = self._folded_warm_tuples
        cut = (start or 0) + 1000 * self.latency_warmup_s
        for b in batches:
            if b["start_ms"] >= cut:
                for w, enc in b["latency"].items():
                    latency.merge([enc], into=per_worker.setdefault(int(w), latency.new_histogram()))
            else:
                warm_tuples += int(latency.merge(b["latency"].values()).get_total_count())
        every = latency.new_histogram()
        for h in per_worker.values():
            every.add(h)
        p99 = {w: h.get_value_at_percentile(99.0) / 1000.0 for w, h in per_worker.items() if h.get_total_count()}
        return {**self._latency_figures(every, "latency"), "warmup_s": self.latency_warmup_s,
                "warmup_tuples": warm_tuples, "per_worker_p99_ms": [p99.get(w) for w in range(self.workers)]}

    def processing_span(self) -> dict:
        """When the workers processed the run's tuples (epoch ms, from the worker tasks' clocks):
        `first_ms`, `last_ms`, `duration_ms` (first to last tuple processed, any worker) and per
        worker `per_worker_busy_ms` (its first to its last tuple). Empty before any tuple."""
        with self._lock:
            spans = [b.get("processed_ms") or {} for b in self.batches.values()]
            per_worker = {w: list(span) for w, span in self._folded_spans.items()}
        for batch in spans:
            for w, (first, last) in batch.items():
                old = per_worker.get(int(w))
                per_worker[int(w)] = [first, last] if old is None else [min(old[0], first), max(old[1], last)]
        if not per_worker:
            return {}
        first = min(v[0] for v in per_worker.values())
        last = max(v[1] for v in per_worker.values())
        return {"first_ms": first, "last_ms": last, "duration_ms": last - first,
                "per_worker_busy_ms": [per_worker[w][1] - per_worker[w][0] if w in per_worker else None
                                       for w in range(self.workers)]}

    # -- ticker ---------------------------------------------------------------------------------
    def start(self, tick_s: float) -> None:
        def loop():
            while not self._stop.wait(tick_s):
                self.tick()

        self._stop.clear()
        self._ticker = threading.Thread(target=loop, name=f"observer-{self.run_id}", daemon=True)
        self._ticker.start()

    def stop(self) -> None:
        self._stop.set()
        if self._ticker is not None:
            self._ticker.join()
            self._ticker = None


def _copy(histogram):
    """A new histogram holding `histogram`'s counts."""
    out = latency.new_histogram()
    out.add(histogram)
    return out


def window_latency_figures(agg: pd.DataFrame) -> dict:
    """Window output latency of the final aggregates: output time minus Kafka timestamp. It is
    dominated by the aggregator window (a tuple waits for its window to close), so it is not the
    processing latency (`bench.latency`), the headline LAT.

    Per (window, key) row, all its tuples are taken at the row's mean Kafka timestamp
    (`ts_sum_ms / tuples`); p50/p99 are weighted by tuples. `window_latency_max_ms` is exact (the
    row's first tuple).
    """
    if not len(agg):
        return {"window_latency_p50_ms": None, "window_latency_p99_ms": None, "window_latency_max_ms": None}
    tuples = agg["tuples"].to_numpy(dtype=float)
    mean_ts = agg["ts_sum_ms"].to_numpy(dtype=float) / np.maximum(tuples, 1)
    lat = agg["emitted_ms"].to_numpy(dtype=float) - mean_ts
    first = timestamps_ms(pd.Series(agg["first_ts"]))
    return {
        "window_latency_p50_ms": weighted_quantile(lat, tuples, 0.50),
        "window_latency_p99_ms": weighted_quantile(lat, tuples, 0.99),
        "window_latency_max_ms": float((agg["emitted_ms"].to_numpy() - first).max()),
    }


def hottest_keys(agg: pd.DataFrame, n: int = 5) -> list[dict]:
    if not len(agg):
        return []
    weights = agg.groupby("key")["count"].sum().sort_values(ascending=False, kind="stable")
    total = weights.sum()
    return [{"key": k, "count": int(v), "share_pct": 100.0 * v / total} for k, v in weights.head(n).items()]


def exact_worker_figures(agg: pd.DataFrame, workers: int) -> dict:
    """Per-worker loads and key-worker pairs recomputed from the final aggregates alone (exact:
    each row is emitted once per (window, key) and carries the per-worker breakdown)."""
    loads = np.zeros(workers, dtype=np.int64)
    tuples = np.zeros(workers, dtype=np.int64)
    pairs: set = set()
    if len(agg):
        for key, per_worker in zip(agg["key"], agg["per_worker"]):
            for entry in per_worker:
                w = int(entry["worker"])
                loads[w] += int(entry["count"])
                tuples[w] += int(entry["tuples"])
                pairs.add((key, w))
    keys = {k for k, _ in pairs}
    total = int(loads.sum())
    return {
        "total_count": total,
        "worker_loads": loads.tolist(),
        "worker_tuples": tuples.tolist(),
        "std_dev": metrics.std_dev_percent(loads, workers) if total else None,
        "dist_cost": metrics.dist_cost(len(pairs), len(keys)),
        "max_mean_imbalance": metrics.max_mean_imbalance(loads, workers) if total else None,
        "keys": len(keys),
        "pairs": len(pairs),
    }
