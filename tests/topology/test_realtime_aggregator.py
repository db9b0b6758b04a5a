"""The real-time aggregator's batches (`bench.topology.realtime_aggregator.RealtimeAggregator`) on
written partial updates, without Spark: the at-least-once sink's repeats left out, windows closed
by the watermark, a late update rewriting its window, and a resume that writes nothing twice. The
same callable runs on the real partials topic in tests/topology/test_realtime.py."""

from pathlib import Path

import pandas as pd

from bench.observer.batches import state_store_figures
from bench.topology.config import TopologyConfig
from bench.topology.realtime_aggregator import END_OF_INPUT, GENERATION_START, GROUP, VALUES, RealtimeAggregator
from bench.results.batches import read_batches
from bench.topology.sink import write_parquet_atomic

MINUTE = 60_000


class Updates:
    """A batch of `<run>.partials` as `foreachBatch` hands it: something with `toPandas()`. `rows`:
    `update`s (of generation 0, or `(generation, update)` pairs); `start`: a generation-start record
    `(generation, watermark_ms)` after them."""

    def __init__(self, rows: list[tuple], end: bool = False, start: tuple[int, int] | None = None):
        columns = ["wstart_ms", "worker", "key", "count", "tuples", "first_ms", "last_ms", "ts_sum_ms",
                   "done_us", "event_ms", "generation"]
        rows = [(*r[1], r[0]) if len(r) == 2 else (*r, 0) for r in rows]
        frame = pd.DataFrame(rows, columns=columns)
        frame[END_OF_INPUT] = None
        if start is not None:
            frame = pd.concat([frame, pd.DataFrame({GENERATION_START: [start[0]], "watermark_ms": [start[1]]})],
                              ignore_index=True)
        if end:
            frame = pd.concat([frame, pd.DataFrame({END_OF_INPUT: [True]})], ignore_index=True)
        self.frame = frame

    def toPandas(self) -> pd.DataFrame:
        return self.frame.copy()


def update(wstart_s: int, worker: int, key: str, tuples: int, last_s: int) -> tuple:
    """A partial of worker window `wstart_s` with `tuples` tuples of weight 1, its newest at `last_s`."""
    return (1000 * wstart_s, worker, key, tuples, tuples, 1000 * wstart_s, 1000 * last_s,
            tuples * 1000 * wstart_s, 1000 * (1000 * last_s + 5), 1000 * last_s)


class FileSink:
    """The aggregate sink's file half (`AggregateSink.write` without Kafka)."""

    def __init__(self, folder: Path):
        self.folder = folder / "aggregates"

    def write(self, frame: pd.DataFrame, batch_id: int) -> None:
        write_parquet_atomic(frame.assign(batch_id=batch_id), self.folder / f"batch-{batch_id:09d}.parquet")


class Figures:
    def __init__(self):
        self.batches = []

    def on_batch(self, fig: dict) -> None:
        self.batches.append(fig)


def aggregator(tmp_path: Path) -> tuple[RealtimeAggregator, Figures]:
    config = TopologyConfig(run_id="r", grouping="KEY", dataset="D", topic="t", bootstrap_servers="b",
                            checkpoint_dir=tmp_path, results_dir=tmp_path, workers=2,
                            worker_window_s=10, aggregator_window_s=60, watermark_delay_s=10)
    figures = Figures()
    return RealtimeAggregator(config, figures, FileSink(tmp_path)), figures


def totals(tmp_path: Path) -> dict[tuple[int, str], tuple[int, int]]:
    """The last written (count, batch) per (window start s, key)."""
    written = read_batches(tmp_path / "aggregates")
    return {(int(pd.Timestamp(r.window_start).value // 10**9), r.key): (int(r.count), int(r.batch_id))
            for r in written.itertuples()}


def test_repeats_are_left_out_windows_close_on_the_watermark_and_a_late_update_rewrites(tmp_path):
    agg, figures = aggregator(tmp_path)
    agg(Updates([update(0, 0, "a", 1, 1), update(0, 0, "a", 2, 2), update(0, 0, "a", 2, 2),  # a repeat
                 update(10, 1, "a", 3, 15), update(10, 1, "b", 1, 12)]), 0)
    assert figures.batches[0]["loads"] == [2, 4] and agg.tuples == 6
    assert totals(tmp_path) == {}  # watermark 5 s: no window has ended

    agg(Updates([update(60, 0, "b", 1, 75)]), 1)  # watermark 65 s: [0, 60) closes
    assert totals(tmp_path) == {(0, "a"): (5, 1), (0, "b"): (1, 1)}
    assert figures.batches[1]["loads"] == [1, 0]

    agg(Updates([update(50, 1, "b", 2, 58)], end=True), 2)  # late for [0, 60); end of input
    assert totals(tmp_path) == {(0, "a"): (5, 2), (0, "b"): (3, 2), (60, "b"): (1, 2)}  # the window again
    assert agg.late_updates == 1 and agg.closed_all and agg.tuples == 9
    assert set(figures.batches[2]["phases_ms"]) == {"read", "aggregate", "write"}


def test_a_resumed_aggregator_rebuilds_its_partials_and_skips_the_batches_it_wrote(tmp_path):
    agg, _ = aggregator(tmp_path)
    first = [update(0, 0, "a", 2, 2), update(10, 1, "a", 3, 15)]
    agg(Updates(first), 0)
    agg(Updates([update(60, 0, "b", 1, 75)]), 1)
    before = totals(tmp_path)

    resumed, figures = aggregator(tmp_path)
    assert resumed.latest == agg.latest and resumed.windows == agg.windows and resumed.closed == {0}
    resumed(Updates(first), 0)  # a batch written before the kill: nothing again
    resumed(Updates([update(10, 1, "a", 3, 15)], end=True), 2)  # a repeat, then the end of input
    assert figures.batches[0]["loads"] == [0, 0]
    assert totals(tmp_path) == {**before, (60, "b"): (1, 2)}


def test_each_batch_reports_the_real_time_querys_state_stores_at_its_latest_batch(tmp_path):
    agg, figures = aggregator(tmp_path)
    agg(Updates([update(0, 0, "a", 1, 1)]), 0)
    agg.query_state = state_store_figures({"stateOperators": [  # as bench.run.realtime sets it
        {"memoryUsedBytes": 100, "customMetrics": {"rocksdbSstFileSize": 7}},
        {"memoryUsedBytes": 20, "customMetrics": {}}]})
    agg(Updates([update(0, 0, "a", 2, 2)]), 1)
    assert [(f["state_memory_bytes"], f["state_sst_bytes"]) for f in figures.batches] == [(0, 0), (120, 7)]
    assert figures.batches[1]["state_rows"] == 1  # the latest partials kept


def test_a_rescale_gives_back_the_interrupted_batchs_partials_and_leaves_its_late_updates_out(tmp_path):
    """STOP_THE_WORLD in real-time mode (module text of bench.topology.realtime_aggregator, "Rescales"):
    key a moves from worker 0 to worker 1. The last committed real-time batch left a's partial of
    worker window [10, 20) at 2 tuples and had closed window [0, 10) (c's, watermark 10 s); the
    interrupted batch wrote a's third tuple and b's first at worker 0, which the restarted query
    routes to worker 1."""
    agg, figures = aggregator(tmp_path)
    agg(Updates([update(0, 0, "c", 1, 1), update(10, 0, "a", 2, 12), update(10, 0, "a", 3, 13),
                 update(10, 0, "b", 1, 14)]), 0)
    committed = pd.DataFrame([update(10, 0, "a", 2, 12)], columns=GROUP + VALUES + ["done_us", "event_ms"])
    write_parquet_atomic(committed[GROUP + VALUES], tmp_path / "partials" / "generation-1.parquet")
    agg(Updates([], start=(1, 10_000)), 1)
    assert agg.generation == 1 and agg.generation_batches == {1: 1}
    assert [agg.latest[(w, 0, k)][1] for w, k in ((0, "c"), (10_000, "a"), (10_000, "b"))] == [1, 2, 0]
    assert agg.tuples == 3 and figures.batches[1]["loads"] == [-2, 0]  # a's third tuple and b's, taken back
    agg(Updates([(1, update(10, 1, "a", 1, 13)), (1, update(10, 1, "b", 1, 14)), update(10, 0, "a", 3, 13)],
                end=True), 2)
    assert agg.stale_updates == 1  # the interrupted batch's sink, late
    assert totals(tmp_path) == {(0, "a"): (3, 2), (0, "b"): (1, 2), (0, "c"): (1, 2)}
    assert agg.tuples == 5 and figures.batches[2]["loads"] == [0, 2]

    resumed, _ = aggregator(tmp_path)
    assert (resumed.latest, resumed.generation, resumed.tuples) == (agg.latest, 1, 5)
