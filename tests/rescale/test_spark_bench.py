"""`make rescale-bench`'s plan and tables (bench/experiments/rescale_bench.py, bench/experiments/rescale_table.py),
without Spark: the cells of the scale-out and the scale-in, medians over the runs of a cell, the
simulator's rows beside them, and the order of the protocols by pause per event."""

from __future__ import annotations

import pandas as pd
import pytest

from bench.experiments.rescale_bench import Event, harness_state, parse_args, scale_in_notes
from bench.peers.rescale import PEERS
from bench.experiments.rescale_table import cell_rows, engines_order, order_by_pause, table_markdown

OUT = "10 -> 12"


def _spark(protocol, pause, steps, routing="VNODE", status="completed", violations=0, load=1.5, workers=(10, 12)):
    return {"grouping": routing, "status": status, "checks": {"aggregated_equals_produced": status == "completed"},
            "bench": {"load_before": load},
            "rescale": {"protocol": protocol, "ownership_violations": violations,
                        "events": [{"pause_ms": pause, "steps": steps, "moved_groups": 42, "moved_keys": 10,
                                    "transfer_records": 10, "workers_before": workers[0],
                                    "workers_after": workers[1]}]}}


def _sim(protocol, pause, batch=1, routing="VNODE", workers=(10, 12)):
    return {"grouping": routing, "status": "completed",
            "rescale": {"protocol": protocol, "handoff_batch": batch,
                        "events": [{"pause_ms": pause, "hold_delay_ms_p99": 3.0 if protocol == "HANDOFF" else None,
                                    "moved_groups": 42, "moved_keys": 10, "ownership_violations": 0,
                                    "workers_before": workers[0], "workers_after": workers[1]}]}}


def test_a_spark_cell_is_the_median_of_its_runs_and_says_whether_every_run_was_exact():
    runs = [_spark("STOP_THE_WORLD", p, {"restart_ms": r}) for p, r in ((30_000, 700), (22_000, 600), (40_000, 900))]
    runs += [_spark("SHARED_STATE", 5_000, {"savepoint_ms": 900}), _spark("SHARED_STATE", 7_000, {"savepoint_ms": 1100},
                                                                        status="failed")]
    rows = {(r["protocol"], r["where"]): r for r in cell_rows(runs, [_sim("STOP_THE_WORLD", 34_000)])}
    stw = rows[("STOP_THE_WORLD", "Spark")]
    assert (stw["runs"], stw["pause_ms"], stw["steps_ms"], stw["exact"]) == (3, 30_000, {"restart_ms": 700}, True)
    assert stw["pause_ms_runs"] == [30_000, 22_000, 40_000]
    shared = rows[("SHARED_STATE", "Spark")]
    assert (shared["pause_ms"], shared["exact"]) == (6_000, False)  # one run failed: not exact
    assert rows[("STOP_THE_WORLD", "simulator")]["pause_ms"] == 34_000


def test_the_order_by_pause_is_compared_over_the_protocols_spark_runs():
    runs = [_spark("STOP_THE_WORLD", 30_000, {}), _spark("SHARED_STATE", 5_000, {}), _spark("LEARNER", 6_000, {})]
    sims = [_sim("STOP_THE_WORLD", 34_000), _sim("SHARED_STATE", 900), _sim("LEARNER", 0.0), _sim("HANDOFF", 0.0),
            _sim("HANDOFF", 0.0, batch=64)]
    rows = cell_rows(runs, sims)
    on_spark = ["STOP_THE_WORLD", "SHARED_STATE", "LEARNER"]
    assert order_by_pause(rows, "VNODE", "Spark", on_spark, OUT) == [["SHARED_STATE"], ["LEARNER"], ["STOP_THE_WORLD"]]
    assert order_by_pause(rows, "VNODE", "simulator", on_spark, OUT) == [["LEARNER"], ["SHARED_STATE"], ["STOP_THE_WORLD"]]
    # protocols without a pause are one group: HANDOFF and LEARNER tie in the simulator
    with_handoff = on_spark + ["HANDOFF"]
    assert order_by_pause(rows, "VNODE", "simulator", with_handoff, OUT) == [["LEARNER", "HANDOFF"], ["SHARED_STATE"],
                                                                         ["STOP_THE_WORLD"]]
    table = table_markdown(rows, "conditions")
    assert "- 10 -> 12, VNODE: Spark SHARED_STATE < LEARNER < STOP_THE_WORLD; simulator LEARNER < SHARED_STATE < " \
           "STOP_THE_WORLD (different order)" in table
    assert "| 10 -> 12 | VNODE | HANDOFF b64 | simulator |" in table


def test_handoff_cells_are_one_per_batch_with_the_median_p99_hold_delay():
    def handoff(batch, p99, held):
        run = _spark("HANDOFF", 0, {"rounds": 12, "state_read_ms": [800.0, 900.0]})
        run["rescale"]["handoff_batch"] = batch
        run["rescale"]["events"][0].update(hold_delay_ms_p99=p99, held_tuples=held, rescale_ms=40_000)
        return run

    runs = [handoff(1, p, 100) for p in (7_000, 9_000, 8_000)] + [handoff(64, p, 900) for p in (12_000, 11_000, 15_000)]
    rows = {r["protocol"]: r for r in cell_rows(runs, []) if r["where"] == "Spark"}
    assert rows["HANDOFF"]["hold_delay_ms_p99"] == 8_000 and rows["HANDOFF"]["hold_delay_ms_p99_runs"] == [7_000, 9_000, 8_000]
    assert (rows["HANDOFF b64"]["hold_delay_ms_p99"], rows["HANDOFF b64"]["held_tuples"]) == (12_000, 900)
    assert rows["HANDOFF"]["steps_ms"] == {"rounds": 12}  # a step's list of reads is not a median
    assert rows["HANDOFF"]["pause_ms"] == 0
    assert "| 10 -> 12 | VNODE | HANDOFF b64 | Spark | 3 | 0 | 0 / 0 / 0 |" in table_markdown(list(rows.values()), "c")


def test_the_peers_are_ordered_with_the_spark_cells_per_event_and_checked_against_the_same_event(tmp_path):
    back = (12, 10)
    rows = cell_rows([_spark("STOP_THE_WORLD", 30_000, {}, routing="KEY_GROUP"),
                      _spark("LEARNER", 6_000, {}, routing="KEY_GROUP"),
                      _spark("STOP_THE_WORLD", 20_000, {}, routing="KEY_GROUP", workers=back)], [])
    peers = [{"title": "Flink", "protocol": "STOP_THE_WORLD", "event": OUT, "pause_ms": 2_000.0,
              "pause_ms_runs": [1_500.0, 2_500.0]},
             {"title": "Flink", "protocol": "STOP_THE_WORLD", "event": "12 -> 10", "pause_ms": 1_000.0,
              "pause_ms_runs": [1_000.0]}]
    assert engines_order(rows, peers) == (
        "Order by pause across the engines, 10 -> 12 (median ms, min-max over the runs), shortest first: Flink "
        "STOP_THE_WORLD 2,000 (1,500-2,500) < Spark KEY_GROUP LEARNER 6,000 (6,000-6,000) < Spark KEY_GROUP "
        "STOP_THE_WORLD 30,000 (30,000-30,000)\n\n"
        "Order by pause across the engines, 12 -> 10 (median ms, min-max over the runs), shortest first: Flink "
        "STOP_THE_WORLD 1,000 (1,000-1,000) < Spark KEY_GROUP STOP_THE_WORLD 20,000 (20,000-20,000)\n")

    def summary(run_id, routing, status="completed", workers=(10, 12)):
        pd.DataFrame({"key": ["a"], "worker": [1], "count": [1], "sum": [1], "first_ts_ms": [5], "last_ts_ms": [5]}
                     ).to_parquet((tmp_path / run_id).mkdir() or tmp_path / run_id / "state.parquet")
        return {**_spark("LEARNER", 0, {}, routing=routing, status=status, workers=workers), "run_id": run_id}

    spark = [summary("vnode-1", "VNODE"), summary("kg-failed", "KEY_GROUP", "failed"), summary("kg-1", "KEY_GROUP"),
             summary("kg-in-1", "KEY_GROUP", workers=back)]
    simulated = [summary("sim-kg", "KEY_GROUP"), summary("sim-kg-in", "KEY_GROUP", workers=back)]
    flink, kstreams = PEERS["flink"], PEERS["kstreams"]
    assert harness_state(flink, OUT, spark, simulated, tmp_path)[1] == "kg-1"  # Flink's owners are KEY_GROUP's
    assert harness_state(flink, "12 -> 10", spark, simulated, tmp_path)[1] == "kg-in-1"  # ... at the same W
    assert harness_state(kstreams, OUT, spark, simulated, tmp_path)[1] == "vnode-1"  # totals only
    assert harness_state(flink, OUT, spark[:2], simulated, tmp_path)[1] == "sim-kg"
    assert harness_state(flink, "12 -> 10", spark[:3], simulated, tmp_path)[1] == "sim-kg-in"
    assert harness_state(flink, OUT, [], [], tmp_path) == (None, None)
    with pytest.raises(SystemExit):
        parse_args(["--peers", "storm"])


def test_the_plan_runs_the_scale_out_everywhere_and_the_scale_in_on_the_peers_routing_and_says_what_it_left_out():
    _, plan = parse_args([])
    out, back = Event(10, 12), Event(12, 10)
    assert plan.events == [out, back] and (out.label, back.label, out.tag, back.tag) == (OUT, "12 -> 10", "", "-in")
    assert out.schedule(4_999) == "2499ms:12" and back.schedule(4_999) == "2499ms:10"
    cells = {(e.label, r, p, b) for e, r, p, b in plan.spark}
    assert len(plan.spark) == 13 and len(cells) == 13
    assert {(r, p, b) for e, r, p, b in plan.spark if e == back} == {
        ("KEY_GROUP", "STOP_THE_WORLD", 1), ("KEY_GROUP", "SHARED_STATE", 1), ("KEY_GROUP", "LEARNER", 1)}
    assert (OUT, "VNODE", "HANDOFF", 64) in cells and (OUT, "KEY_GROUP", "HANDOFF", 1) in cells
    assert plan.simulated == [(out, "VNODE"), (out, "KEY_GROUP"), (back, "KEY_GROUP")]
    assert scale_in_notes(plan) == [
        "VNODE: scale-out only (`--scale-in-routings`, default KEY_GROUP, the routing the Flink peer shares)",
        "HANDOFF: scale-out only (not in the default scale-in: at batch 1 a KEY_GROUP run takes 7-8 min); "
        "`--scale-in-protocols` adds it"]

    _, plan = parse_args(["--workers", "4", "--routings", "VNODE", "--scale-in-routings", "VNODE",
                          "--protocols", "LEARNER,HANDOFF", "--scale-in-protocols", "LEARNER,HANDOFF",
                          "--handoff-batches", "8"])
    assert plan.events == [Event(4, 6), Event(6, 4)] and scale_in_notes(plan) == []
    assert [(e.label, p, b) for e, _, p, b in plan.spark] == [("4 -> 6", "LEARNER", 1), ("4 -> 6", "HANDOFF", 8),
                                                              ("6 -> 4", "LEARNER", 1), ("6 -> 4", "HANDOFF", 8)]
    _, plan = parse_args(["--scale-in-routings", ""])  # no scale-in at all: neither Spark nor the peers
    assert plan.events == [Event(10, 12)] and {e for e, *_ in plan.spark} == {Event(10, 12)}
    assert scale_in_notes(plan) == ["no scale-in: `--scale-in-routings` is empty"]
    for bad in (["--scale-in-protocols", "VNODE"], ["--runs", "0"], ["--handoff-batches", "0"]):
        with pytest.raises(SystemExit):
            parse_args(bad)


def test_the_table_shows_each_event_with_its_own_order_and_the_notes_under_it():
    runs = [_spark("STOP_THE_WORLD", 30_000, {}, routing="KEY_GROUP"), _spark("LEARNER", 6_000, {}, routing="KEY_GROUP"),
            _spark("STOP_THE_WORLD", 5_000, {}, routing="KEY_GROUP", workers=(12, 10)),
            _spark("LEARNER", 7_000, {}, routing="KEY_GROUP", workers=(12, 10))]
    rows = cell_rows(runs, [_sim("STOP_THE_WORLD", 34_000, routing="KEY_GROUP", workers=(12, 10))])
    table = table_markdown(rows, "conditions", ["HANDOFF: scale-out only"])
    assert table.index("| 10 -> 12 | KEY_GROUP | LEARNER |") < table.index("| 12 -> 10 | KEY_GROUP | STOP_THE_WORLD |")
    assert "\n- HANDOFF: scale-out only\n" in table
    assert "- 10 -> 12, KEY_GROUP: Spark LEARNER < STOP_THE_WORLD; simulator  (different order)" in table
    assert "- 12 -> 10, KEY_GROUP: Spark STOP_THE_WORLD < LEARNER; simulator STOP_THE_WORLD (different order)" in table
