"""Observer tick logic on plain dicts and frames (no Spark), and the InfluxDB writer's failure path."""

from __future__ import annotations

import json
import socket

import numpy as np
import pandas as pd
import pytest

from bench.observer.influx import InfluxWriter
from bench.observer.batches import batch_figures
from bench.observer.observer import Observer, batch_us_per_row, exact_worker_figures, weighted_quantile
from tests.histograms import histogram


def progress(batch_id: int, loads: list[int], pairs: list[tuple[str, int]], *, records: int = 0,
             latency: list[str] = ()) -> dict:
    # Two splitter instances: the first routed the loads and the pairs, the second one tuple of a pair again.
    first = {"loads": loads, "tuples": loads, "pairs": [[w, k] for k, w in pairs]}
    second = {"loads": [0] * len(loads), "tuples": [0] * len(loads), "pairs": [[w, k] for k, w in pairs[:1]]}
    workers = {"rows": sum(loads), "routed": [json.dumps(first), json.dumps(second)], "latency": list(latency)}
    return {"batchId": batch_id, "timestamp": f"2026-01-01T00:00:{batch_id:02d}.000Z", "numInputRows": records,
            "processedRowsPerSecond": 10.0, "durationMs": {"triggerExecution": 1500},
            "stateOperators": [{"operatorName": "stateStoreSave", "numRowsTotal": 3, "memoryUsedBytes": 10,
                                "numRowsDroppedByWatermark": 0, "customMetrics": {"rocksdbSstFileSize": 7}},
                               {"operatorName": "transformWithStateInPandasExec", "numRowsTotal": 2,
                                "memoryUsedBytes": 20, "customMetrics": {"rocksdbSstFileSize": 4}}],
            "observedMetrics": {"workers": workers, "splitter": {"records": records, "malformed": 1, "max_ts_ms": 5},
                                "split_tuples": {"tuples": 1, "weight": 3}},
            "eventTime": {"watermark": "2026-01-01T00:00:00.000Z"}}


def test_weighted_quantile():
    assert weighted_quantile(np.array([1.0, 2.0, 3.0]), np.array([1, 1, 98]), 0.5) == 3.0
    assert weighted_quantile(np.array([1.0, 2.0, 3.0]), np.array([98, 1, 1]), 0.99) == 2.0
    assert np.isnan(weighted_quantile(np.array([]), np.array([]), 0.5))


def test_batch_figures_reads_observed_metrics():
    fig = batch_figures(progress(3, [4, 0, 1], [("a", 0), ("b", 2)], records=5), 3)
    assert fig["loads"] == [4, 0, 1] and fig["pairs"] == [("a", 0), ("b", 2)]
    assert fig["records"] == 5 and fig["window_state_rows"] == 3 and fig["state_rows"] == 5
    assert (fig["state_memory_bytes"], fig["state_sst_bytes"]) == (30, 11)  # summed over the stateful operators
    assert (fig["malformed"], fig["split_tuples"], fig["split_weight"]) == (1, 1, 3)
    assert fig["phases_ms"] == {"triggerExecution": 1500}  # Spark's durationMs, where the batch's time went


def test_the_time_per_row_is_the_reading_batches_time_over_their_rows(tmp_path):
    batches = [{"input_rows": 1000, "duration_ms": 700}, {"input_rows": 0, "duration_ms": 60},
               {"input_rows": 3000, "duration_ms": 2100}]
    assert batch_us_per_row(batches) == 700.0  # the empty batch's 60 ms left out
    assert batch_us_per_row([{"input_rows": 0, "duration_ms": 60}]) is None and batch_us_per_row([]) is None
    rows = []
    obs = Observer("r", 3, tmp_path, outputs=(rows.append,))
    obs.on_progress(progress(0, [4, 0, 1], [("a", 0)], records=5))
    assert obs.tick(now_ms=10**13)["batch_us_per_row"] == 300_000.0  # 1,500 ms over 5 rows
    assert obs.tick(now_ms=10**13)["batch_us_per_row"] is None  # no batch since the last tick


def test_reference_figures_dedup_batches_and_resume(tmp_path):
    rows = []
    obs = Observer("r", 2, tmp_path, outputs=(rows.append,))
    obs.on_progress(progress(0, [8, 0], [("hot", 0)]))
    obs.on_progress(progress(0, [8, 0], [("hot", 0)]))  # a batch re-run after a restart counts once
    first = obs.tick(now_ms=10**13)
    assert first["total_count"] == 8 and first["std_dev"] == pytest.approx(50.0) and first["dist_cost"] == 1.0
    obs.on_progress(progress(1, [0, 8], [("hot", 1)]))
    second = obs.tick(now_ms=10**13)
    assert second["total_count"] == 16 and second["std_dev"] == pytest.approx(0.0)
    assert second["dist_cost"] == 2.0 and second["window_std_dev"] == pytest.approx(50.0)
    assert second["duration_ms"] == 2500  # first batch start (0 s) to last batch end (1 s + 1.5 s)
    quiet = obs.tick(now_ms=10**13)
    assert quiet["total_count"] == 16 and quiet["window_count"] == 0  # quiet tick keeps the last figures
    assert len(rows) == 3

    resumed = Observer("r", 2, tmp_path)  # same folder: the journal brings the batches back
    assert resumed.loads().tolist() == [8, 8] and len(resumed.pairs()) == 2


def sent_histogram(worker: int, latencies_us) -> str:
    """What the worker stage observes for one worker (`bench.topology.worker.LATENCY_LINE`, without first and last)."""
    from bench import latency

    return f"{worker}|{latency.encode(histogram(latencies_us))}"


def test_processing_latency_per_tick_and_per_run_after_the_warm_up(tmp_path):
    """Batch 0 (warm-up, 0 s) has slow tuples; batches 2 and 3 start 2 and 3 s later. A tick
    covers the batches since the previous one; the run leaves out batches of the warm-up (1.5 s)."""
    from bench import latency

    rng = np.random.default_rng(7)
    slow = rng.integers(5_000_000, 9_000_000, 300)  # µs
    steady = [rng.integers(1_000, 400_000, 500) for _ in range(4)]  # batch 2: 2 chunks on w0, 1 on w1; batch 3
    obs = Observer("r", 2, tmp_path, latency_warmup_s=1.5)
    obs.on_progress(progress(0, [300, 0], [("a", 0)], latency=[sent_histogram(0, slow)]))
    first = obs.tick(now_ms=10**13)
    assert first["latency_tuples"] == 300 and first["latency_p50_ms"] >= 5000
    obs.on_progress(progress(2, [1000, 500], [("a", 0)], latency=[sent_histogram(0, steady[0]),
                    sent_histogram(0, steady[1]), sent_histogram(1, steady[2])]))
    obs.on_progress(progress(3, [500, 0], [("a", 0)], latency=[sent_histogram(0, steady[3])]))
    second = obs.tick(now_ms=10**13)
    every = np.concatenate(steady)
    assert second["latency_tuples"] == every.size  # batches 2 and 3 only
    for name, q in latency.PERCENTILES:
        exact = latency.exact_percentile(every, q) / 1000
        assert exact <= second[f"latency_{name}_ms"] <= exact * 1.001 + 0.001
    run = obs.run_latency()
    assert run["latency_tuples"] == every.size and run["warmup_tuples"] == 300
    assert run["latency_max_ms"] < 400.5
    w1 = latency.exact_percentile(steady[2], 99) / 1000
    assert w1 <= run["per_worker_p99_ms"][1] <= w1 * 1.001 + 0.001

    recorded = Observer("r2", 2, tmp_path / "recorded", live_input=False)
    recorded.on_progress(progress(0, [300, 0], [("a", 0)], latency=[sent_histogram(0, slow)]))
    assert recorded.tick(now_ms=10**13)["latency_p99_ms"] is None and recorded.run_latency() == {}


def test_processing_span_from_the_worker_tasks_first_and_last_tuples(tmp_path):
    obs = Observer("r", 3, tmp_path)
    assert obs.processing_span() == {}
    enc = sent_histogram(0, [5]).split("|", 1)[1]
    obs.on_progress(progress(0, [2, 1, 0], [("a", 0)], latency=[f"0|1000|1500|{enc}", f"1|1200|1300|{enc}",
                                                                 f"0|1600|2100|{enc}"]))
    obs.on_progress(progress(1, [1, 0, 0], [("a", 0)], latency=[f"0|5000|5400|{enc}"]))
    span = obs.processing_span()
    assert (span["first_ms"], span["last_ms"], span["duration_ms"]) == (1000, 5400, 4400)
    assert span["per_worker_busy_ms"] == [4400, 100, None]


def test_exact_worker_figures_from_final_aggregates():
    agg = pd.DataFrame({"key": ["a", "b"], "per_worker": [
        [{"worker": 0, "count": 3, "tuples": 3}, {"worker": 1, "count": 1, "tuples": 1}],
        [{"worker": 1, "count": 4, "tuples": 2}]]})
    ex = exact_worker_figures(agg, 3)
    assert ex["worker_loads"] == [3, 5, 0] and ex["total_count"] == 8
    assert ex["dist_cost"] == 1.5 and ex["worker_tuples"] == [3, 3, 0]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_influx_failures_are_counted_not_raised():
    writer = InfluxWriter(f"http://127.0.0.1:{free_port()}", "groupings", {"run_id": "x"}, flush_interval_ms=100)
    assert not writer.reachable()
    writer.write_row({"time_ms": 1_700_000_000_000, "std_dev": 1.0})
    writer.close()
    status = writer.status()
    assert status["failed_batches"] >= 1 and status["last_error"]


def test_progress_listener_keeps_the_latest_batch_after_its_sinks():
    from bench.observer.listener import ProgressListener

    def progress(batch_id: int, name: str = "run-main") -> str:
        return json.dumps({"batchId": batch_id, "name": name})

    seen = []
    listener = ProgressListener([lambda p: seen.append((p["batchId"], listener.latest))], "run-main")
    assert listener.latest is None
    listener.on_progress_json(progress(0))
    listener.on_progress_json(progress(2))
    listener.on_progress_json(progress(1))  # events of a restarted query may repeat an older batch
    listener.on_progress_json(progress(7, name="other-query"))
    assert listener.latest["batchId"] == 2
    # Each sink saw its batch before `latest` moved to it.
    assert [(b, latest and latest["batchId"]) for b, latest in seen] == [(0, None), (2, 0), (1, 2)]

    def failing(_progress):
        raise RuntimeError("sink down")

    listener = ProgressListener([failing], "run-main")
    listener.on_progress_json(progress(3))  # logged, not raised
    assert listener.latest["batchId"] == 3
    listener.on_progress_json("not json")  # logged, not raised
    assert listener.latest["batchId"] == 3


def test_a_batchs_released_tuples_are_summed_per_hold_batch_over_the_routers():
    from bench.observer.batches import released_figures

    summaries = ['{"loads":[1],"tuples":[1],"pairs":[],"released":[[4,10],[6,2]]}',
                 '{"loads":[1],"tuples":[1],"pairs":[]}', '{"loads":[1],"tuples":[1],"pairs":[],"released":[[4,5]]}']
    assert released_figures(summaries) == [[4, 15], [6, 2]]
    assert released_figures(summaries[1:2]) == []


def test_folded_batches_give_the_figures_of_every_batch_kept_whole(tmp_path, monkeypatch):
    """Past DETAIL_BATCHES, the observer folds a ticked batch's pairs, latency and worker spans
    into totals: the ticks, the run's latency and span, and a resumed observer's figures are
    those of an observer that keeps every batch whole, and a folded batch delivered again
    counts once."""
    from bench.observer import observer as module

    rng = np.random.default_rng(3)
    inputs = []
    for b in range(40):
        encoded = [sent_histogram(w, rng.integers(1_000, 90_000, 20)).split("|", 1)[1] for w in range(2)]
        lat = [f"{w}|{1000 * b + w}|{1000 * b + 500}|{encoded[w]}" for w in range(2)]
        inputs.append(progress(b, [b, 40 - b], [(f"k{b % 7}", b % 2), (f"k{b % 5}", 1)], latency=lat))

    def run(folder, detail):
        monkeypatch.setattr(module, "DETAIL_BATCHES", detail)
        obs = Observer("r", 2, folder, latency_warmup_s=2.5)
        ticks = []
        for i, p in enumerate(inputs):
            obs.on_progress(p)
            if i % 3 == 2:
                ticks.append(obs.tick(now_ms=10**13 + i))
        obs.on_progress(inputs[1])  # a batch re-run long after it was folded
        ticks.append(obs.tick(now_ms=10**14))
        return obs, ticks

    folded, folded_ticks = run(tmp_path / "folded", 4)
    whole, whole_ticks = run(tmp_path / "whole", 10**6)
    assert sorted(b for b, fig in folded.batches.items() if "latency" in fig) == [36, 37, 38, 39]
    assert all("pairs" in fig for fig in whole.batches.values())
    keep = ("total_count", "std_dev", "pairs", "keys", "latency_p99_ms", "latency_tuples", "window_count")
    assert [{k: t[k] for k in keep} for t in folded_ticks] == [{k: t[k] for k in keep} for t in whole_ticks]
    assert folded.run_latency() == whole.run_latency() and folded.run_latency()["warmup_tuples"] == 3 * 40
    assert folded.processing_span() == whole.processing_span()
    assert folded.pairs() == whole.pairs()
    resumed = Observer("r", 2, tmp_path / "folded", latency_warmup_s=2.5)
    assert resumed.run_latency() == whole.run_latency() and resumed.pairs() == whole.pairs()
    assert len(folded.batch_details()) == 40 and all("pairs" in b for b in folded.batch_details().values())
