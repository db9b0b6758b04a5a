"""`make rescale-bench`'s table (bench/perf/rescale_bench.py), without Spark: medians over the runs
of a cell, the simulator's rows beside them, and the order of the protocols by pause."""

from __future__ import annotations

from bench.perf.rescale_bench import cell_rows, order_by_pause, table_markdown


def _spark(protocol, pause, steps, routing="VNODE", status="completed", violations=0, load=1.5):
    return {"grouping": routing, "status": status, "checks": {"aggregated_equals_produced": status == "completed"},
            "bench": {"load_before": load},
            "rescale": {"protocol": protocol, "ownership_violations": violations,
                        "events": [{"pause_ms": pause, "steps": steps, "moved_groups": 42, "moved_keys": 10,
                                    "transfer_records": 10}]}}


def _sim(protocol, pause, batch=1, routing="VNODE"):
    return {"grouping": routing, "status": "completed",
            "rescale": {"protocol": protocol, "handoff_batch": batch,
                        "events": [{"pause_ms": pause, "hold_delay_ms_p99": 3.0 if protocol == "HANDOFF" else None,
                                    "moved_groups": 42, "moved_keys": 10, "ownership_violations": 0}]}}


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
    assert order_by_pause(rows, "VNODE", "Spark", on_spark) == [["SHARED_STATE"], ["LEARNER"], ["STOP_THE_WORLD"]]
    assert order_by_pause(rows, "VNODE", "simulator", on_spark) == [["LEARNER"], ["SHARED_STATE"], ["STOP_THE_WORLD"]]
    # protocols without a pause are one group: HANDOFF and LEARNER tie in the simulator
    with_handoff = on_spark + ["HANDOFF"]
    assert order_by_pause(rows, "VNODE", "simulator", with_handoff) == [["LEARNER", "HANDOFF"], ["SHARED_STATE"],
                                                                         ["STOP_THE_WORLD"]]
    table = table_markdown(rows, "conditions")
    assert "- VNODE: Spark SHARED_STATE < LEARNER < STOP_THE_WORLD; simulator LEARNER < SHARED_STATE < " \
           "STOP_THE_WORLD (different order)" in table
    assert "| VNODE | HANDOFF b64 | simulator |" in table


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
    assert "| VNODE | HANDOFF b64 | Spark | 3 | 0 | 0 / 0 / 0 |" in table_markdown(list(rows.values()), "c")


def test_the_peers_are_ordered_with_the_spark_cells_and_checked_against_the_routing_they_share(tmp_path):
    import pandas as pd
    import pytest

    from bench.perf.rescale_bench import engines_order, harness_state, parse_args
    from bench.perf.rescale_peers import PEERS

    rows = cell_rows([_spark("STOP_THE_WORLD", 30_000, {}, routing="KEY_GROUP"),
                      _spark("LEARNER", 6_000, {}, routing="KEY_GROUP")], [])
    peers = [{"title": "Flink", "protocol": "STOP_THE_WORLD", "pause_ms": 2_000.0, "pause_ms_runs": [1_500.0, 2_500.0]}]
    assert engines_order(rows, peers) == (
        "Order by pause across the engines (median ms, min-max over the runs), shortest first: Flink STOP_THE_WORLD "
        "2,000 (1,500-2,500) < Spark KEY_GROUP LEARNER 6,000 (6,000-6,000) < Spark KEY_GROUP STOP_THE_WORLD 30,000 "
        "(30,000-30,000)\n")

    def summary(run_id, routing, status="completed"):
        pd.DataFrame({"key": ["a"], "worker": [1], "count": [1], "sum": [1], "first_ts_ms": [5], "last_ts_ms": [5]}
                     ).to_parquet((tmp_path / run_id).mkdir() or tmp_path / run_id / "state.parquet")
        return {"run_id": run_id, "grouping": routing, "status": status}

    spark = [summary("vnode-1", "VNODE"), summary("kg-failed", "KEY_GROUP", "failed"), summary("kg-1", "KEY_GROUP")]
    simulated = [summary("sim-kg", "KEY_GROUP")]
    assert harness_state(PEERS["flink"], spark, simulated, tmp_path)[1] == "kg-1"  # Flink's owners are KEY_GROUP's
    assert harness_state(PEERS["kstreams"], spark, simulated, tmp_path)[1] == "vnode-1"  # totals only
    assert harness_state(PEERS["flink"], spark[:2], simulated, tmp_path)[1] == "sim-kg"
    assert harness_state(PEERS["flink"], [], [], tmp_path) == (None, None)
    with pytest.raises(SystemExit):
        parse_args(["--peers", "storm"])
