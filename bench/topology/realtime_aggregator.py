"""Storm's AggregatorBolt in real-time mode: the `foreachBatch` of the aggregator query over
`<run>.partials` (`bench.topology.realtime`), on the driver.

Per micro-batch of partial updates (`RealtimeAggregator.__call__`):

1. the updates that carry tuples not seen before: an update whose partial has more tuples than the
   latest one kept for its (worker window, worker, key); an update written twice by the real-time
   query's at-least-once sink has no more, and is left out;
2. each new update's newest tuple's processing latency (its worker's done time minus its Kafka
   timestamp), in an HDR histogram per worker: each tuple counted once;
3. the latest partial per (worker window, worker, key), and what the batch added to each worker's
   load (weight and tuples) and which (key, worker) pairs it routed: the observer's batch figures,
   as the micro-batch topology's observed metrics give them (`bench.observer.batches`);
4. the aggregator windows whose end the event-time watermark (the newest Kafka timestamp in the
   latest partials minus `watermark_delay_s`) has passed, or every window once the driver's
   end-of-input record is in the batch: their final totals per (window, key), summed over the
   worker windows and workers, with the per-worker breakdown, to `<run>.aggregates` and
   `aggregates/batch-<id>.parquet` (`AggregateSink`). An update that reaches a window already
   written (later than the watermark allows) writes that window's keys again, corrected, and is
   counted (`late_updates`); readers take the last total per (window, key).

Exactly once across a restart: a batch's latest partials go to `partials/batch-<id>.parquet`
after its totals and figures, so a batch whose file exists is done; a batch run again after a
killed driver reads the same offsets, meets the same latest partials (rebuilt from the files of
the batches before it) and writes what it wrote the first time. The batch that met the
end-of-input record leaves `partials/batch-<id>.end` beside its file.

Rescales (STOP_THE_WORLD, `bench.rescale.stop_the_world_realtime`): the driver stops the real-time
query in the middle of a real-time batch, whose updates are already in `<run>.partials` but whose
tuples the restarted query processes again, under the new routing: a moved key's tuples of that
batch would be counted at its old worker and at its new one. So every update carries the routing's
generation (the events before its query started), and before the restart the driver writes the
worker windows' partials as the last committed real-time batch left them to
`partials/generation-<g>.parquet`, then a generation-start record `{"generation_start": g,
"watermark_ms": ...}` to `<run>.partials`. The batch that reads it first keeps the batch's updates
of the older generation, then makes every worker window that the committed batch had not closed
(its end past `watermark_ms`, the watermark that batch closed windows with) what that file says:
the file's partial, or nothing where the file has none. Updates of an older generation read after
that batch are the interrupted batch's, written late by its sink: they are left out
(`stale_updates`). Every record written before the generation-start record is read by its batch or
an earlier one (Kafka's end offsets, which the batch reads, cover every acknowledged record), and
the driver restarts the query only once that batch is done, so the new generation's updates come
in the batches after it.
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pandas as pd

from bench import latency
from bench.topology.config import TopologyConfig
from bench.results.batches import read_batches
from bench.topology.sink import AggregateSink, batch_file, write_parquet_atomic

END_OF_INPUT = "end_of_input"
"""The field of the record the driver writes to `<run>.partials` once every tuple of the input is
in the latest partials: the aggregator then closes its last windows."""
GENERATION_START = "generation_start"
"""The field of a rescale's generation-start record on `<run>.partials` (module text), beside
`watermark_ms`."""
ZERO = [0, 0, 0, 0, 0]
"""VALUES of a worker window's partial that a rescale took back (no tuple)."""

GROUP = ["wstart_ms", "worker", "key"]
VALUES = ["count", "tuples", "first_ms", "last_ms", "ts_sum_ms"]


def new_updates(updates: pd.DataFrame, latest: dict) -> pd.DataFrame:
    """The rows of `updates` (PARTIAL_SCHEMA columns) whose partial has more tuples than the latest
    partial of its (window, worker, key) in `latest` ((wstart_ms, worker, key) -> VALUES' list)."""
    if not len(updates):
        return updates
    groups = updates[GROUP].drop_duplicates()
    groups["seen"] = [latest.get(g, (0, 0))[1] for g in zip(groups["wstart_ms"], groups["worker"], groups["key"])]
    merged = updates.merge(groups, on=GROUP, how="left")
    return merged[merged["tuples"] > merged["seen"]].drop(columns="seen")


def newest_per_group(fresh: pd.DataFrame) -> pd.DataFrame:
    """Per (window, worker, key) of `fresh`, the update with the most tuples: GROUP and VALUES."""
    return fresh.sort_values("tuples", kind="stable").drop_duplicates(GROUP, keep="last")[GROUP + VALUES]


def latency_histograms(fresh: pd.DataFrame) -> dict[str, str]:
    """Per worker (as a string), the encoded HDR histogram (`bench.latency`) of the processing
    latencies of `fresh`'s newest tuples, µs (at least 1 µs, HdrHistogram's lowest value)."""
    out = {}
    lat = np.maximum(fresh["done_us"].to_numpy(np.int64) - fresh["event_ms"].to_numpy(np.int64) * 1000, 1)
    workers = fresh["worker"].to_numpy()
    for w in np.unique(workers):
        histogram = latency.new_histogram()
        values, counts = np.unique(lat[workers == w], return_counts=True)
        for value, count in zip(values.tolist(), counts.tolist()):
            histogram.record_value(min(value, latency.HIGHEST_US), count)
        out[str(int(w))] = latency.encode(histogram)
    return out


class Phases:
    """Where a batch's time went: ms per named phase, each timed from the end of the one before."""

    def __init__(self):
        self.ms: dict[str, float] = {}
        self._last = time.perf_counter()

    def end(self, name: str) -> None:
        now = time.perf_counter()
        self.ms[name] = round(1000 * (now - self._last), 1)
        self._last = now


class RealtimeAggregator:
    """The aggregator query's `foreachBatch` callable (module text). `tuples` is the total of the
    latest partials' tuples, which the driver compares with the input's to know when every tuple
    is in; `closed_all` is set once the end-of-input record has closed the last windows."""

    def __init__(self, config: TopologyConfig, observer, sink: AggregateSink):
        self.config = config
        self.observer = observer
        self.sink = sink
        self.folder = Path(config.results_dir) / "partials"
        self.latest: dict[tuple, list] = {}
        self.windows: dict[int, list[tuple]] = {}
        """Per aggregator window (start, epoch ms), the (wstart_ms, worker, key) groups of `latest`
        in it: a batch's totals read the due windows' partials, not every partial kept."""
        self.window_ms = 1000 * config.aggregator_window_s
        self.closed: set[int] = set()
        """The aggregator windows (start, epoch ms) whose totals are written."""
        self.frontier_ms = 0
        """The newest Kafka timestamp in the latest partials."""
        self.tuples = 0
        self.late_updates = 0
        self.closed_all = False
        self.generation = 0
        """The routing's generation in force (module text, "Rescales")."""
        self.generation_batches: dict[int, int] = {}
        """Per generation started, the aggregator batch that started it."""
        self.stale_updates = 0
        self.query_state = {"state_memory_bytes": 0, "state_sst_bytes": 0}
        """The real-time query's state stores at the end of its latest batch, which every aggregator
        batch reports until the next (`bench.run.realtime` sets it from the query's progress)."""
        self._rebuild()

    def _rebuild(self) -> None:
        """The latest partials and the written windows of the batches done before (a resumed run)."""
        for path in sorted(self.folder.glob("batch-*.parquet")):
            newest = pd.read_parquet(path)
            self._keep(newest)
            self.closed_all |= path.with_suffix(".end").exists()
            if path.with_suffix(".generation").exists():
                self.generation = int(path.with_suffix(".generation").read_text())
                self.generation_batches[self.generation] = int(path.stem.split("-")[1])
        written = read_batches(self.sink.folder)
        if len(written):
            self.closed = {int(pd.Timestamp(t).value // 1_000_000) for t in written["window_start"]}

    def _keep(self, newest: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
        """Make `newest` (GROUP + VALUES) the latest partials; returns what it added to each worker's
        weight and tuples, shape (M,) each."""
        loads = np.zeros(self.config.worker_space, dtype=np.int64)
        tuples = np.zeros(self.config.worker_space, dtype=np.int64)
        for row in newest.itertuples(index=False):
            self._set((int(row.wstart_ms), int(row.worker), row.key),
                      [int(row.count), int(row.tuples), int(row.first_ms), int(row.last_ms), int(row.ts_sum_ms)],
                      loads, tuples)
        return loads, tuples

    def _set(self, group: tuple, values: list, loads: np.ndarray, tuples: np.ndarray) -> None:
        """Make `values` (VALUES) the latest partial of `group`, adding the change of its weight and
        tuples to `loads` and `tuples` (per worker)."""
        before = self.latest.get(group)
        if before is None:
            before = ZERO
            self.windows.setdefault(group[0] - group[0] % self.window_ms, []).append(group)
        loads[group[1]] += values[0] - before[0]
        tuples[group[1]] += values[1] - before[1]
        self.tuples += values[1] - before[1]
        self.latest[group] = values
        if values[1]:
            self.frontier_ms = max(self.frontier_ms, values[3])

    def _start_generation(self, generation: int, watermark_ms: int, loads: np.ndarray, tuples: np.ndarray) -> set:
        """A rescale's generation-start record (module text, "Rescales"): every worker window the
        last committed real-time batch had not closed becomes its partial in
        `generation-<generation>.parquet` (GROUP + VALUES), or no tuple; returns the groups changed."""
        committed = pd.read_parquet(self.folder / f"generation-{generation}.parquet")
        values = {(int(r.wstart_ms), int(r.worker), r.key): [int(r.count), int(r.tuples), int(r.first_ms),
                                                             int(r.last_ms), int(r.ts_sum_ms)]
                  for r in committed.itertuples(index=False)}
        window_ms = 1000 * self.config.worker_window_s
        changed = set()
        for group, latest in list(self.latest.items()):
            if group[0] + window_ms > watermark_ms and values.get(group, ZERO) != latest:
                self._set(group, values.get(group, ZERO), loads, tuples)
                changed.add(group)
        for group, value in values.items():
            if self.latest.get(group) != value:
                self._set(group, value, loads, tuples)
                changed.add(group)
        self.generation = generation
        return changed

    def taken_back(self, changed: set) -> list[tuple[str, int]]:
        """The (key, worker) pairs of `changed` groups that no longer have a tuple in any window: the
        routed pairs a rescale took back (the observer's distinct pairs leave them out)."""
        routed = {(g[2], g[1]) for g, values in self.latest.items() if values[1]}
        return sorted({(g[2], g[1]) for g in changed} - routed)

    def __call__(self, batch_df, batch_id: int) -> None:
        done = batch_file(self.folder, batch_id)
        if done.exists():
            return  # written, with its totals and figures, before a restart
        started_ms = int(time.time() * 1000)
        phases = Phases()
        updates = batch_df.toPandas()
        phases.end("read")
        end = END_OF_INPUT in updates and bool(updates[END_OF_INPUT].eq(True).any())
        starts = updates[updates[GENERATION_START].notna()] if GENERATION_START in updates else updates.iloc[:0]
        updates = updates[updates["wstart_ms"].notna()].fillna({"generation": 0}).astype(
            {"wstart_ms": "int64", "worker": "int64", "generation": "int64"})
        stale = updates["generation"] < self.generation
        self.stale_updates += int(stale.sum())
        updates = updates[~stale]
        start = starts.loc[starts[GENERATION_START].idxmax()] if len(starts) else None
        if start is not None and int(start[GENERATION_START]) <= self.generation:
            start = None  # written again by a resumed driver
        loads = np.zeros(self.config.worker_space, dtype=np.int64)
        tuples = np.zeros(self.config.worker_space, dtype=np.int64)
        fresh, newest, changed = [], [], set()
        parts = [updates] if start is None else [updates[updates["generation"] < int(start[GENERATION_START])],
                                                 updates[updates["generation"] >= int(start[GENERATION_START])]]
        for i, part in enumerate(parts):
            if i == 1:
                changed = self._start_generation(int(start[GENERATION_START]), int(start["watermark_ms"]),
                                                 loads, tuples)
            fresh.append(new_updates(part, self.latest))
            newest.append(newest_per_group(fresh[-1]))
            part_loads, part_tuples = self._keep(newest[-1])
            loads += part_loads
            tuples += part_tuples
        fresh, newest = pd.concat(fresh), pd.concat(newest)
        touched = {int(s) - int(s) % self.window_ms for s in newest["wstart_ms"]} | \
            {g[0] - g[0] % self.window_ms for g in changed}
        late = touched & self.closed
        self.late_updates += int(sum(len(fresh[fresh["wstart_ms"] // self.window_ms * self.window_ms == w])
                                     for w in late))
        watermark = self.frontier_ms - 1000 * self.config.watermark_delay_s
        due = {w for w in self.windows.keys() - self.closed if end or w + self.window_ms <= watermark}
        totals = self.totals(due | late)
        phases.end("aggregate")
        self.sink.write(totals, batch_id)
        phases.end("write")
        self.closed |= due
        figures = self.figures(batch_id, started_ms, updates, fresh, newest, loads, tuples, phases.ms)
        if changed:
            figures["pairs_taken_back"] = self.taken_back(changed)
        self.observer.on_batch(figures)
        if end:
            done.with_suffix(".end").touch()
            self.closed_all = True
        if start is not None:
            done.with_suffix(".generation").write_text(str(self.generation))
            self.generation_batches[self.generation] = int(batch_id)
        kept = newest if not changed else pd.DataFrame(
            [[*g, *self.latest[g]] for g in sorted({*changed, *map(tuple, newest[GROUP].itertuples(index=False))})],
            columns=GROUP + VALUES)
        write_parquet_atomic(kept, done)

    def totals(self, windows: set[int]) -> pd.DataFrame:
        """The final totals of the aggregator windows `windows` (starts, epoch ms), one row per
        (window, key): AGGREGATE_COLUMNS, times as UTC timestamps without a zone, as Spark gives them."""
        rows: dict[tuple[int, str], dict] = {}
        for window in windows:
            for group in self.windows.get(window, ()):
                wstart, worker_id, key = group
                count, tuples, first, last, ts_sum = self.latest[group]
                if not tuples:
                    continue  # taken back by a rescale
                row = rows.setdefault((window, key), {"count": 0, "tuples": 0, "first": first, "last": last,
                                                      "ts_sum_ms": 0, "per_worker": {}})
                row["count"] += count
                row["tuples"] += tuples
                row["first"], row["last"] = min(row["first"], first), max(row["last"], last)
                row["ts_sum_ms"] += ts_sum
                share = row["per_worker"].setdefault(worker_id, [0, 0])
                share[0] += count
                share[1] += tuples
        out = pd.DataFrame([
            {"window_start": pd.Timestamp(window, unit="ms"), "window_end": pd.Timestamp(window + self.window_ms, unit="ms"),
             "key": key, "count": r["count"], "tuples": r["tuples"], "first_ts": pd.Timestamp(r["first"], unit="ms"),
             "last_ts": pd.Timestamp(r["last"], unit="ms"), "ts_sum_ms": r["ts_sum_ms"],
             "per_worker": [{"worker": w, "count": c, "tuples": t} for w, (c, t) in sorted(r["per_worker"].items())]}
            for (window, key), r in sorted(rows.items())])
        return out if len(out) else pd.DataFrame(columns=["window_start", "window_end", "key", "count", "tuples",
                                                          "first_ts", "last_ts", "ts_sum_ms", "per_worker"])

    def figures(self, batch_id: int, started_ms: int, updates: pd.DataFrame, fresh: pd.DataFrame,
                newest: pd.DataFrame, loads: np.ndarray, tuples: np.ndarray, phases_ms: dict) -> dict:
        """The observer's facts of this batch (`bench.observer.batches.batch_figures`' keys): its
        span is when its new tuples were done (the workers' clocks), or the batch's own time. Its
        phases (ms): `read`, the batch's updates to pandas (Spark reading the partials topic);
        `aggregate`, the new updates kept and the due windows' totals; `write`, the totals to
        Kafka and their file. `state_rows` counts the latest partials kept; the state stores' memory
        and data are the real-time query's (`query_state`)."""
        now_ms = int(time.time() * 1000)
        done_ms = fresh["done_us"].to_numpy(np.int64) // 1000 if len(fresh) else np.array([], dtype=np.int64)
        start, end = (int(done_ms.min()), int(done_ms.max())) if len(done_ms) else (started_ms, now_ms)
        processed = {str(int(w)): [int(d.min()), int(d.max())]
                     for w, d in (fresh.assign(done_ms=done_ms).groupby("worker")["done_ms"] if len(fresh) else [])}
        return {
            "batch_id": int(batch_id), "start_ms": start, "end_ms": end, "duration_ms": now_ms - started_ms,
            "input_rows": int(len(updates)), "processed_rows_per_s": 0.0, "rows": int(tuples.sum()),
            "loads": loads.tolist(), "tuples": tuples.tolist(),
            "pairs": sorted({(k, int(w)) for k, w in zip(newest["key"], newest["worker"])}),
            "records": 0, "malformed": 0, "split_tuples": int(tuples.sum()), "split_weight": int(loads.sum()),
            "max_ts_ms": int(fresh["event_ms"].max()) if len(fresh) else None,
            "state_rows": len(self.latest), **self.query_state,
            "window_state_rows": len(self.latest),
            "dropped_by_watermark": 0, "late_updates": self.late_updates,
            "watermark": None, "phases_ms": phases_ms, "generation": self.generation,
            "latency": latency_histograms(fresh) if len(fresh) else {},
            "processed_ms": processed,
        }
