"""Rescaling in the simulator (rescaling.md §3-4): every protocol x routing keeps the per-key state
exact, the figures of a rescale are in the run record, broken protocols are caught, bad schedules
are refused before anything runs."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from bench.__main__ import main as bench_main
from bench.simulate.engine import route_table, worker_state
from bench.simulate.rescale import RescaleConfig, simulate
from bench.simulate.sources import VirtualClock, from_dataset
from datasets import get_dataset
from groupings import create_grouping
from groupings.rescaling import PROTOCOLS, RESCALABLE, CostModel, parse_schedule

ROUTING_PARAMS = {"KEY": {}, "KEY_GROUP": {"max_parallelism": 256}, "VNODE": {}}
SCHEDULE = "40s:12,70s:8"  # on a 100 s input: 10 -> 12 -> 8 workers


@pytest.fixture(scope="module")
def small():
    """20 000 tuples of the golden stream (100 s at 200 tuples/s), 10 splitters."""
    return from_dataset(get_dataset("GOLDEN_SKEW", length=20_000), 10, VirtualClock())[0]


@pytest.fixture(scope="module")
def golden():
    return from_dataset(get_dataset("GOLDEN_SKEW"), 10, VirtualClock())[0]


def by_key(state: dict) -> pd.DataFrame:
    frame = pd.DataFrame(state)
    return frame.sort_values(["key", "worker"]).reset_index(drop=True)


def run(table, routing, protocol, schedule=SCHEDULE, **kw):
    config = RescaleConfig(tuple(parse_schedule(schedule)), protocol, **kw)
    return simulate(table, routing, 10, 10, ROUTING_PARAMS[routing], config)


@pytest.mark.parametrize("protocol", PROTOCOLS)
@pytest.mark.parametrize("routing", RESCALABLE)
def test_every_cell_keeps_the_state_of_the_run_without_rescaling(small, routing, protocol):
    # routers reach control messages at different times, as several splitters do
    result = run(small, routing, protocol, cost=CostModel(router_stagger_ms=3.0))
    assert result.violations == 0
    assert [e["ownership_violations"] for e in result.events] == [0, 0]
    assert [(e["workers_before"], e["workers_after"]) for e in result.events] == [(10, 12), (12, 8)]
    got = by_key(result.state)
    plain, _ = route_table(small, routing, 10, 10, ROUTING_PARAMS[routing])
    want = by_key(worker_state(small, plain))
    cols = ["key", "count", "sum", "first_ts_ms", "last_ts_ms"]
    pd.testing.assert_frame_equal(got[cols], want[cols])  # one row per key, equal state
    assert got["count"].sum() == len(small) and got["sum"].sum() == int(small.count.sum())
    final = create_grouping(routing, 10, **ROUTING_PARAMS[routing])
    final.reschedule(12)
    final.reschedule(8)
    assert got["worker"].tolist() == [final.owner_of(k) for k in got["key"]]  # the new owners hold it
    assert (result.worker >= 0).all()
    assert all(e["done_ms"] >= e["at_ms"] for e in result.events)


@pytest.mark.parametrize("routing,protocol,schedule,kw", [
    ("KEY", "HANDOFF", SCHEDULE, {"handoff_batch": 64, "state_bytes": 4096}),
    ("KEY_GROUP", "HANDOFF", SCHEDULE, {"handoff_batch": 64, "state_bytes": 4096}),
    ("VNODE", "HANDOFF", "40s:+10,+11,70s:-3", {"handoff_batch": 7}),
    ("KEY_GROUP", "LEARNER", "40s:+10,+11,70s:-3", {}),
    ("VNODE", "STOP_THE_WORLD", "40s:-3,70s:+3", {}),
    ("VNODE", "SHARED_STATE", "40s:-0,70s:+12", {}),
])
def test_batches_and_worker_ids_keep_the_state_exact(small, routing, protocol, schedule, kw):
    result = run(small, routing, protocol, schedule, cost=CostModel(router_stagger_ms=3.0), **kw)
    assert result.violations == 0
    plain, _ = route_table(small, routing, 10, 10, ROUTING_PARAMS[routing])
    cols = ["key", "count", "sum", "first_ts_ms", "last_ts_ms"]
    pd.testing.assert_frame_equal(by_key(result.state)[cols], by_key(worker_state(small, plain))[cols])


def test_the_figures_before_a_rescale_are_those_of_the_run_without_it(small):
    result = run(small, "VNODE", "HANDOFF")
    plain, _ = route_table(small, "VNODE", 10, 10)
    before = small.ts_ms < small.ts_ms.min() + 40_000
    assert (result.worker[before] == plain[before]).all()


@pytest.mark.parametrize("fault,cost", [
    ("switch_before_final", CostModel(control_latency_ms=200.0)),
    ("react_on_first_final", CostModel(router_stagger_ms=50.0)),
])
def test_a_protocol_broken_on_purpose_is_seen(small, fault, cost):
    result = run(small, "VNODE", "HANDOFF", cost=cost, faults=(fault,))
    assert result.violations > 0
    assert sum(e["ownership_violations"] for e in result.events) == result.violations
    got = by_key(result.state)
    assert got["key"].duplicated().any()  # the stray updates split a key's state
    assert got["count"].sum() == len(small)  # every tuple counted once, somewhere


@pytest.mark.parametrize("routing,moved_groups,moved_keys", [
    ("VNODE", 42, 35), ("KEY_GROUP", 192, 139), ("KEY", 164, 164)])
def test_moved_groups_on_the_golden_stream(golden, routing, moved_groups, moved_keys):
    (event,) = run(golden, routing, "HANDOFF", "150s:12").events
    assert (event["moved_groups"], event["moved_keys"]) == (moved_groups, moved_keys)
    assert event["groups"] == (201 if routing == "KEY" else 256)  # KEY: 164 of 201 keys move


def test_the_protocols_claims(golden):
    ev = {p: run(golden, "KEY_GROUP", p, "150s:12").events[0] for p in PROTOCOLS}
    assert ev["STOP_THE_WORLD"]["pause_ms"] > ev["SHARED_STATE"]["pause_ms"] > 0
    assert ev["LEARNER"]["pause_ms"] == ev["HANDOFF"]["pause_ms"] == 0
    # a global pause holds every tuple arriving during it; HANDOFF holds only units in flight
    assert ev["STOP_THE_WORLD"]["held_tuples"] > 50 * max(1, ev["HANDOFF"]["held_tuples"])
    assert ev["STOP_THE_WORLD"]["state_bytes_written"] > ev["SHARED_STATE"]["state_bytes_written"]


@pytest.mark.parametrize("routing", RESCALABLE)
def test_handoff_holds_only_tuples_of_units_in_flight(golden, routing):
    result = run(golden, routing, "HANDOFF", "150s:12", handoff_batch=4)
    g_old = create_grouping(routing, 10, **ROUTING_PARAMS[routing])
    g_new = create_grouping(routing, 10, **ROUTING_PARAMS[routing])
    g_new.reschedule(12)
    moves = np.array([g_old.owner_of(k) != g_new.owner_of(k) for k in golden.keys])[golden.key_code]
    assert result.was_held.sum() == result.events[0]["held_tuples"]
    assert moves[result.was_held].all()  # a unit that stays never waits
    assert (result.held_ms[~result.was_held] == 0).all()


def test_learner_keeps_the_old_owner_loaded_until_the_switch(golden):
    result = run(golden, "VNODE", "LEARNER", "150s:12")
    (event,) = result.events
    t0 = int(golden.ts_ms.min())
    g_old, g_new = create_grouping("VNODE", 10), create_grouping("VNODE", 10)
    g_new.reschedule(12)
    old = np.array([g_old.owner_of(k) for k in golden.keys])[golden.key_code]
    new = np.array([g_new.owner_of(k) for k in golden.keys])[golden.key_code]
    moves = old != new
    switch = t0 + event["started_ms"] + min(event["steps"]["switch_after_ms"].values())
    during = moves & (golden.ts_ms >= t0 + 150_000) & (golden.ts_ms < switch)
    assert during.sum() > 0 and (result.worker[during] == old[during]).all()
    after = moves & (golden.ts_ms > t0 + event["done_ms"])
    assert (result.worker[after] == new[after]).all()
    assert event["pause_ms"] == 0 and event["steps"]["switch_after_ms"]


def test_a_larger_handoff_batch_is_shorter_but_holds_longer(golden):
    kw = dict(state_bytes=65_536)
    one = run(golden, "KEY_GROUP", "HANDOFF", "150s:12", handoff_batch=1, **kw).events[0]
    big = run(golden, "KEY_GROUP", "HANDOFF", "150s:12", handoff_batch=64, **kw).events[0]
    assert big["rescale_ms"] < one["rescale_ms"]
    assert big["hold_delay_ms_p99"] > one["hold_delay_ms_p99"]


def test_the_cli_writes_the_rescale_record(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr("bench.results.record.RESULTS_DIR", tmp_path)
    code = bench_main(["simulate", "--dataset", "GOLDEN_SKEW", "--grouping", "VNODE", "--workers", "10",
                       "--rescale", "150s:12", "--protocol", "HANDOFF", "--run-id", "rs", "--no-progress"])
    assert code == 0
    summary = json.loads((tmp_path / "rs" / "summary.json").read_text())
    (event,) = summary["rescale"]["events"]
    for field in ("at_ms", "done_ms", "protocol", "routing", "workers_before", "workers_after", "moved_groups",
                  "moved_keys", "state_entries_moved", "state_bytes_moved", "pause_ms", "held_tuples",
                  "hold_delay_ms_p50", "hold_delay_ms_p99", "hold_delay_ms_max", "std_dev_before",
                  "std_dev_after", "ownership_violations"):
        assert field in event, field
    assert (event["at_ms"], event["moved_groups"], event["ownership_violations"]) == (150_000, 42, 0)
    state = pd.read_parquet(tmp_path / "rs" / "state.parquet")
    assert {"key", "worker", "count", "sum"} <= set(state.columns) and state["count"].sum() == 60_000
    metrics = pd.read_parquet(tmp_path / "rs" / "metrics.parquet")
    assert {"throughput_tps", "latency_ms_p99", "window_worker_loads", "rescaling",
            "moved_old_owner_share"} <= set(metrics.columns)
    assert metrics["rescaling"].any()
    assert "42" in capsys.readouterr().out


def test_without_rescale_the_record_is_unchanged_but_for_the_state(tmp_path, monkeypatch):
    monkeypatch.setattr("bench.results.record.RESULTS_DIR", tmp_path)
    assert bench_main(["simulate", "--dataset", "GOLDEN_SKEW", "--grouping", "KEY", "--workers", "10",
                       "--run-id", "plain", "--no-progress"]) == 0
    summary = json.loads((tmp_path / "plain" / "summary.json").read_text())
    assert "rescale" not in summary
    assert summary["exact"]["worker_loads"] == [1208, 840, 1171, 1705, 1298, 49229, 972, 1554, 1053, 970]
    metrics = pd.read_parquet(tmp_path / "plain" / "metrics.parquet")
    assert "throughput_tps" not in metrics.columns
    state = pd.read_parquet(tmp_path / "plain" / "state.parquet")
    assert len(state) == 201 and state["count"].sum() == 60_000


@pytest.mark.parametrize("argv,message", [
    (["--rescale", "400s:12"], "beyond the input"),
    (["--rescale", "150s:0"], "0 workers"),
    (["--rescale", "150s:-12"], "cannot remove worker 12"),
    (["--rescale", "150s:12,150s:8"], "same time"),
    (["--rescale", "150s:12", "--grouping", "SHUFFLE"], "Allowed: KEY, KEY_GROUP, VNODE"),
    (["--rescale", "150s:12", "--protocol", "PAXOS"], "unknown rescale protocol"),
    (["--rescale", "150s:12", "--protocol", "LEARNER", "--handoff-batch", "4"], "HANDOFF only"),
    (["--rescale", "150s:12", "--cost", "warp=9"], "unknown cost parameter"),
    (["--rescale", "150s:12", "--cost-profile", "storm"], "unknown cost profile 'storm': stored are"),
    (["--cost-profile", "spark"], "need --rescale"),
    (["--protocol", "LEARNER"], "need --rescale"),
    (["--influx-url", "http://127.0.0.1:1"], "need --rescale"),
])
def test_bad_rescale_options_are_one_clear_error_each(tmp_path, monkeypatch, capsys, argv, message):
    monkeypatch.setattr("bench.results.record.RESULTS_DIR", tmp_path)
    base = ["simulate", "--dataset", "GOLDEN_SKEW", "--workers", "10", "--no-progress"]
    if "--grouping" not in argv:
        base += ["--grouping", "VNODE"]
    assert bench_main(base + argv) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("error:") == 1
    assert not [p for p in tmp_path.iterdir() if p.name != "sweeps"]  # nothing ran


@pytest.mark.slow  # four simulated rescales and `bench compare` of them: 6 s of CPU (tests/tiers.py)
def test_compare_draws_the_rescales_and_tabulates_protocol_x_routing(tmp_path, monkeypatch):
    from bench.compare import build_comparison, select_runs
    from bench.compare.comparison import figure_caption
    from bench.compare.figures import save_figure

    monkeypatch.setattr("bench.results.record.RESULTS_DIR", tmp_path)
    for routing, protocol in (("VNODE", "STOP_THE_WORLD"), ("KEY", "HANDOFF")):
        assert bench_main(["simulate", "--dataset", "GOLDEN_SKEW", "--grouping", routing, "--workers", "10",
                           "--rescale", "150s:12", "--protocol", protocol, "--run-id", f"c-{routing}",
                           "--no-progress"]) == 0
    runs, _ = select_runs(tmp_path, run_ids=["c-VNODE", "c-KEY"])
    comparison = build_comparison(runs)
    figures = comparison.figures()  # what `bench compare` and `bench report` draw
    for stem in ("rescale_timeline_golden_skew", "rescale_costs_golden_skew"):
        (png, _svg) = save_figure(figures[stem], tmp_path / "cmp" / stem)
        assert png.stat().st_size > 10_000
    assert figure_caption("rescale_costs_golden_skew") == "what each rescale cost, protocol x routing (GOLDEN_SKEW)"
    table = comparison.markdown()
    assert "## Rescale events (protocol x routing)" in table
    assert "| GOLDEN_SKEW | VNODE | STOP_THE_WORLD | 150s:12 | 42 |" in table
    assert "| GOLDEN_SKEW | KEY | HANDOFF | 150s:12 | 164 |" in table


def test_the_costs_figure_draws_protocols_without_any_pause(small):
    from bench.compare.figures import png_bytes
    from bench.compare.rescale import costs_figure

    events = pd.DataFrame([{**e, "dataset": "X", "index": i, "cell": "HANDOFF", "run_id": "r"}
                           for i, e in enumerate(run(small, "VNODE", "HANDOFF").events)])
    assert (events["pause_ms"] == 0).all()
    assert len(png_bytes(costs_figure(events, "X"))) > 10_000  # a log axis of zeros would raise
