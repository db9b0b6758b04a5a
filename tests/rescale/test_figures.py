"""The figures of a Spark rescale from the observer's per-batch facts (bench/rescale/figures.py):
throughput, latency and imbalance around an event on the wall clock, the ticks a rescale was under
way in, and its `rescale` point, the simulator's (bench.observer.influx_schema.rescale_point)."""

from __future__ import annotations

import numpy as np
import pytest

from bench import latency
from bench.observer.influx_schema import rescale_point, rescale_points
from bench.observer.observer import overlaps
from bench.rescale.figures import add_event_figures, rescale_spans
from tests.histograms import histogram

T0 = 1_800_000_000_000


def batch(batch_id: int, start_s: float, end_s: float, tuples: list[int], latency_ms: float | None = None) -> dict:
    """An observer batch: `tuples` per worker (weight 2 each), ended at T0 + end_s."""
    fig = {"batch_id": batch_id, "start_ms": int(T0 + 1000 * start_s), "end_ms": int(T0 + 1000 * end_s),
           "rows": sum(tuples), "tuples": tuples, "loads": [2 * t for t in tuples], "latency": {}}
    if latency_ms is not None:
        fig["latency"] = {"0": latency.encode(histogram(np.full(sum(tuples), int(latency_ms * 1000))))}
    return fig


def batches(latency_ms=(100, 100, 100, 100, 5000, 100, 100)) -> dict[int, dict]:
    """Batches 0-2 over workers 0-3 (worker 1 hot in batch 2), the stop at
    T0 + 30 s, batch 3 finished once during the pause, batch 4 written by `repartition` (no input, no
    progress), switch batch 5 ends at T0 + 42 s, then 6 and 7 over 6 workers."""
    out = [batch(0, 0, 10, [100, 100, 100, 100], latency_ms[0]),
           batch(1, 10, 20, [100, 100, 100, 100], latency_ms[1]),
           batch(2, 20, 29, [100, 300, 100, 100], latency_ms[2]),
           batch(3, 31, 35, [50, 50, 50, 50], latency_ms[3]),
           batch(5, 36, 42, [60, 60, 60, 60, 60, 60], latency_ms[4]),
           batch(6, 42, 52, [100, 100, 100, 100, 100, 100], latency_ms[5]),
           batch(7, 52, 62, [100, 100, 100, 100, 100, 300], latency_ms[6])]
    return {b["batch_id"]: b for b in out}


def event() -> dict:
    return {"index": 0, "event": "30s:6", "protocol": "STOP_THE_WORLD", "routing": "VNODE",
            "stop_wall_ms": T0 + 30_000, "pause_ms": 12_000, "barrier_batch": 3, "switch_batch": 5,
            "workers_before": 4, "workers_after": 6, "worker_ids_before": [0, 1, 2, 3],
            "worker_ids_after": [0, 1, 2, 3, 4, 5], "moved_keys": 26, "moved_groups": 84, "groups": 256,
            "units": "groups", "started_ms": 3, "steps": {"savepoint_ms": 534.0, "restart_ms": 397.0}}


def test_throughput_is_the_tuples_of_the_batches_ended_in_each_window_over_its_length():
    e = event()
    add_event_figures([e], batches(), live_input=False, window_ms=20_000)
    assert e["resumed_wall_ms"] == T0 + 42_000
    # before: (T0 + 10 s, T0 + 30 s]: batches 1 and 2, 1,000 tuples over 20 s
    assert e["throughput_tps_before"] == pytest.approx(1000 / 20)
    # during: (stop, end of switch batch]: batches 3 and 5, 560 tuples over 12 s
    assert e["throughput_tps_during"] == pytest.approx(560 / 12)
    # after: (T0 + 42 s, T0 + 62 s], cut at the last batch's end: batches 6 and 7, 1,400 tuples over 20 s
    assert e["throughput_tps_after"] == pytest.approx(1400 / 20)
    assert e["latency_ms_p99_before"] is None and e["latency_ms_p50_during"] is None  # recorded input


def test_a_window_is_cut_at_the_run_s_first_batch_with_data():
    e = event()
    add_event_figures([e], batches(), live_input=False, window_ms=60_000)
    assert e["throughput_tps_before"] == pytest.approx(1400 / 30)  # batches 0-2 from T0 (not 60 s back)
    assert e["throughput_tps_after"] == pytest.approx(1400 / 20)


def test_latency_around_the_event_comes_from_the_batches_hdr_histograms_when_the_input_is_live():
    e = event()
    add_event_figures([e], batches(), live_input=True, window_ms=20_000)
    assert e["latency_ms_p99_before"] == pytest.approx(100, rel=0.01)
    assert e["latency_ms_p50_during"] == pytest.approx(5000, rel=0.01)  # 200 tuples at 0.1 s, 360 at 5 s
    assert e["latency_ms_p99_during"] == pytest.approx(5000, rel=0.01)
    assert e["latency_ms_p99_after"] == pytest.approx(100, rel=0.01)


def test_imbalance_before_is_over_the_old_workers_up_to_the_barrier_and_after_over_the_new_ones():
    from bench import metrics

    e = event()
    add_event_figures([e], batches(), live_input=False)
    before = np.array([2 * (100 + 100 + 100 + 50), 2 * (100 + 100 + 300 + 50), 2 * 350, 2 * 350])
    assert e["std_dev_before"] == pytest.approx(metrics.std_dev_percent(before, 4))
    assert e["max_mean_before"] == pytest.approx(metrics.max_mean_imbalance(before, 4))
    after = np.array([2 * 260] * 5 + [2 * 460])
    assert e["std_dev_after"] == pytest.approx(metrics.std_dev_percent(after, 6))
    assert e["max_mean_after"] == pytest.approx(metrics.max_mean_imbalance(after, 6)) and e["max_mean_after"] > 1


def test_a_rescale_not_finished_has_no_during_or_after_figures():
    e = {**event(), "pause_ms": None}
    add_event_figures([e], batches(), live_input=True, window_ms=20_000)
    assert e["resumed_wall_ms"] is None and e["throughput_tps_before"] is not None
    assert e["throughput_tps_during"] is None and e["throughput_tps_after"] is None


def test_ticks_overlapping_the_pause_are_rescaling():
    journal = [{"index": 0, "stop_wall_ms": T0 + 30_000, "switch_batch": 5}]
    spans = rescale_spans(journal, batches())
    assert spans == [(T0 + 30_000, T0 + 42_000)]
    assert not overlaps(spans, T0 + 20_000, T0 + 29_999)
    assert overlaps(spans, T0 + 28_000, T0 + 30_000) and overlaps(spans, T0 + 40_000, T0 + 50_000)
    assert not overlaps(spans, T0 + 42_000, T0 + 50_000)
    open_span = rescale_spans(journal, {b: f for b, f in batches().items() if b < 5})  # switch batch not committed
    assert open_span == [(T0 + 30_000, None)] and overlaps(open_span, T0 + 90_000, T0 + 92_000)
    assert rescale_spans([{"index": 1}], batches()) == []  # not stopped yet


def test_the_point_is_the_simulators_timed_at_the_stop():
    e = event()
    add_event_figures([e], batches(), live_input=True)
    ((measurement, tags, fields, time_ms),) = rescale_points([e])
    assert (measurement, time_ms) == ("rescale", T0 + 30_000)
    assert tags == {"protocol": "STOP_THE_WORLD", "routing": "VNODE", "event": "30s:6"}
    assert fields["pause_ms"] == 12_000.0 and fields["moved_keys"] == 26.0 and fields["step_restart_ms"] == 397.0
    assert fields["throughput_tps_during"] == pytest.approx(560 / 12) and "latency_ms_p99_after" in fields
    assert fields["description"] == "30s:6 STOP_THE_WORLD on VNODE: 4 -> 6 workers, pause 12,000 ms, 26 keys moved"
    assert all(type(v) is float for k, v in fields.items() if k != "description")
    assert "worker_ids_before" not in fields and "units" not in fields
    ((_, sim_tags, sim_fields, sim_time),) = rescale_points([e], T0)
    assert (sim_fields, sim_tags, sim_time) == (fields, tags, T0 + 3)  # one point function, two clocks
    assert rescale_point(e, 5) == ("rescale", tags, fields, 5)
