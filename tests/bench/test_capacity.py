"""The capacity decision (`bench.capacity`): lag trend, thresholds, the ladder's capacity, the bound."""

from __future__ import annotations

import pytest

from bench.capacity.decision import (CAPACITY_STEP, Thresholds, capacity_of, hot_worker_bound, ladder_saturated,
                                     lag_series, lag_slope, median_and_spread, step_holds)
from bench.capacity.decision import TOO_FEW_LAG_SAMPLES, capacity_under, holds_under
from bench.capacity.ladder import cpu_fit, format_capacity_table, step_point, summarize


def batches(records_per_batch: list[int], batch_s: float = 1.0) -> list[dict]:
    return [{"batch_id": i, "end_ms": int(1000 * batch_s * (i + 1)), "records": n}
            for i, n in enumerate(records_per_batch)]


def test_a_topology_that_keeps_up_has_a_flat_lag_and_one_that_does_not_a_growing_one():
    t, lag = lag_series(batches([100] * 10), first_ts_ms=0, rate=100, total=1000)
    assert lag.tolist() == [0.0] * 10 and lag_slope(t, lag) == pytest.approx(0.0)
    t, lag = lag_series(batches([60] * 10), first_ts_ms=0, rate=100, total=1000)
    assert lag_slope(t, lag) == pytest.approx(40.0)  # 40 records/s more produced than read
    t, _ = lag_series(batches([60] * 10), first_ts_ms=0, rate=100, total=1000, warmup_s=5)
    assert t.tolist() == [5.0, 6.0, 7.0, 8.0, 9.0, 10.0]
    assert lag_slope(t[:2], t[:2]) is None


def test_batches_after_the_input_ended_do_not_hide_a_growing_lag():
    # 10 s of input at 100 rec/s read at 60 rec/s, then drained in two big batches after the input's end.
    t, lag = lag_series(batches([60] * 10 + [300, 100]), first_ts_ms=0, rate=100, total=1000)
    assert t.tolist() == [float(s) for s in range(1, 11)]
    assert lag_slope(t, lag) == pytest.approx(40.0)


def test_step_decision_names_the_threshold_that_failed():
    th = Thresholds(max_p99_ms=1000, max_lag_growth=0.05)
    assert step_holds(20.0, 1.0, 500, th) == (True, "holds")
    assert step_holds(2000.0, 0.0, 500, th)[1] == "p99 2000 ms > 1000 ms"
    assert not step_holds(20.0, 30.0, 500, th)[0]  # 30 > 0.05 * 500
    assert step_holds(None, 0.0, 500, th) == (False, "no processing latency measured")
    # never passed on p99 alone: a step without a lag trend is run again longer (bench.capacity.ladder)
    assert step_holds(20.0, None, 500, th) == (False, TOO_FEW_LAG_SAMPLES)


def test_the_tighter_bounds_come_from_the_same_steps():
    steps = [{"rate": 1000, "holds": True, "p99_ms": 90.0}, {"rate": 2000, "holds": True, "p99_ms": 450.0},
             {"rate": 4000, "holds": True, "p99_ms": 150.0}, {"rate": 8000, "holds": False, "p99_ms": 9000.0}]
    assert [capacity_under(steps, bound) for bound in (100, 200, 1000, 5000)] == [1000, 1000, 4000, 4000]
    assert capacity_under(steps, 50) is None
    assert not holds_under({"rate": 1, "holds": False, "p99_ms": 10.0}, 1000)  # failed on its lag
    assert not holds_under({"rate": 1, "holds": True, "p99_ms": None}, 1000)


def test_capacity_is_the_last_rate_before_the_first_failure_and_reps_give_median_and_spread():
    steps = [{"rate": 250, "holds": True}, {"rate": 500, "holds": True}, {"rate": 1000, "holds": False},
             {"rate": 2000, "holds": True}]
    assert capacity_of(steps) == 500
    assert capacity_of([{"rate": 250, "holds": False}]) is None
    assert median_and_spread([500, 1000, None]) == {"median": 500.0, "min": 0.0, "max": 1000.0,
                                                    "values": [500.0, 1000.0, 0.0],
                                                    "lower_bounds": [False, False, False], "at_least": False}


def test_hot_worker_bound_of_key_on_an_80_percent_key():
    assert hot_worker_bound(0.8, 1.0) == pytest.approx(1250.0)
    assert hot_worker_bound(0.8, 0.0) is None


def test_a_step_point_has_the_same_field_types_whatever_the_values():
    step = {"rate": 500, "run_id": "cap-key-c1-r500-k0", "holds": True, "why": "holds", "p99_ms": 12,
            "p50_ms": 3.5, "lag_slope": 5, "max_lag": 40, "hottest_share": 0.8, "time_ms": 1_700_000_000_000,
            "batch_p50_ms": 640, "spark_floor_ms": 75}
    measurement, tags, fields, time_ms = step_point(step, "KEY", 1.0, 0, "COUNTRY_SKEW_R80", "capacity-x")
    assert measurement == CAPACITY_STEP and time_ms == 1_700_000_000_000
    assert tags == {"run_id": "cap-key-c1-r500-k0", "grouping": "KEY", "dataset": "COUNTRY_SKEW_R80",
                    "cost_ms": "1", "repetition": "1", "experiment_id": "capacity-x", "system": "microbatch"}
    assert step_point(step, "KEY", 1.0, 0, "COUNTRY_SKEW_R80", "capacity-x", "storm")[1]["system"] == "storm"
    assert fields == {"rate": 500.0, "p50_ms": 3.5, "p99_ms": 12.0, "lag_slope": 5.0, "lag_growth": 0.01,
                      "max_lag": 40.0, "hottest_share": 0.8, "batch_p50_ms": 640.0, "spark_floor_ms": 75.0,
                      "held": True, "why": "holds"}
    assert all(type(v) is float for k, v in fields.items() if k not in ("held", "why"))
    failed = {**step, "holds": False, "why": "no processing latency measured", "p99_ms": None, "p50_ms": None,
              "lag_slope": None, "max_lag": float("nan"), "batch_p50_ms": None, "spark_floor_ms": None}
    _, _, fields, _ = step_point(failed, "KEY", 0.5, 2, "COUNTRY_SKEW_R80", "capacity-x")
    assert fields == {"rate": 500.0, "hottest_share": 0.8, "held": False, "why": "no processing latency measured"}


def test_a_ladder_on_which_every_step_held_gives_only_a_lower_bound():
    held = [{"rate": 250, "holds": True}, {"rate": 500, "holds": True}]
    failed = [{"rate": 250, "holds": True}, {"rate": 500, "holds": False}]
    assert not ladder_saturated(held) and ladder_saturated(failed)
    # the median rests on an exact value: 250, 250, >=500
    assert median_and_spread([250, 250, 500], [False, False, True])["at_least"] is False
    # the median is itself a lower bound: 250, >=500, >=500
    assert median_and_spread([250, 500, 500], [False, True, True])["at_least"] is True
    rows = summarize([{"grouping": "KEY", "cost_ms": 0.0, "rep": r, "capacity": capacity_of(s), "steps": s}
                      for r, s in enumerate([held, held, failed])])
    assert rows[0]["median"] == 500 and rows[0]["at_least"] and rows[0]["lower_bounds"] == [True, True, False]
    table = format_capacity_table(rows)
    assert ">=500" in table and ">=500,>=500,250" in table and "raise --rates" in table
    # a record from before the real-time mode calls the micro-batch topology "harness"
    assert rows[0]["system"] == "microbatch" and table.startswith("SYSTEM")
    both = summarize([{"system": "storm", "grouping": "KEY", "cost_ms": 0.0, "rep": 0, "capacity": 250,
                       "steps": [{**failed[0], "cpu_us_per_record": 40.0}, failed[1]]},
                      {"grouping": "KEY", "cost_ms": 0.0, "rep": 0, "capacity": 500, "steps": held}])
    assert [(r["system"], r["median"], r["cpu_us_per_record"]) for r in both] == [("microbatch", 500, None),
                                                                                  ("storm", 250, 40.0)]


def test_the_cpu_of_a_ladders_held_steps_splits_into_a_marginal_and_a_fixed_part():
    def step(rate: float, holds: bool, fixed_s: float, us_per_record: float) -> dict:
        records = int(rate * 20)
        return {"rate": rate, "holds": holds, "records": records, "cpu_s": fixed_s + us_per_record * records / 1e6}

    # Storm-like: 46 CPU-s a step whatever its records, 2 us a record; a failed step's CPU is left out
    storm = [step(8_000, True, 46.0, 2.0), step(16_000, True, 46.0, 2.0), step(32_000, True, 46.0, 2.0),
             step(64_000, False, 90.0, 2.0)]
    marginal, fixed = cpu_fit(storm)
    assert (round(marginal, 6), round(fixed, 6)) == (2.0, 46.0)
    # one held step, or a record from before the figures: no line
    assert cpu_fit(storm[:1] + storm[3:]) is None
    assert cpu_fit([{"rate": 8_000, "holds": True, "cpu_us_per_record": 40.0}] * 2) is None
    spark = [step(8_000, True, 20.0, 45.0), step(16_000, True, 20.0, 45.0)]
    rows = summarize([{"system": "storm", "grouping": "KEY", "cost_ms": 0.0, "rep": 0, "capacity": 32_000,
                       "steps": storm},
                      {"system": "realtime", "grouping": "KEY", "cost_ms": 0.0, "rep": 0, "capacity": 16_000,
                       "steps": spark},
                      {"system": "realtime", "grouping": "KEY", "cost_ms": 0.0, "rep": 1, "capacity": 8_000,
                       "steps": spark[:1]}])
    fits = {r["system"]: (round(r["marginal_cpu_us_per_record"], 3), round(r["fixed_cpu_s_per_step"], 3))
            for r in rows}
    assert fits == {"realtime": (45.0, 20.0), "storm": (2.0, 46.0)}
    table = format_capacity_table(rows)
    assert "CPU: MARGINAL (us/record) + FIXED (CPU-s/step)" in table and "45.0 + 20.0" in table
    assert "2.0 + 46.0" in table


def test_a_ladder_that_failed_its_first_step_shows_a_capacity_below_it_not_zero():
    failed_first = [{"rate": 80_000, "holds": False}]
    held_one = [{"rate": 80_000, "holds": True}, {"rate": 96_000, "holds": False}]
    rows = summarize([{"system": "storm", "grouping": "PARTIAL_KEY", "cost_ms": 0.0, "rep": r,
                       "capacity": capacity_of(s), "steps": s}
                      for r, s in enumerate([failed_first, held_one, held_one])])
    assert rows[0]["values"] == [0.0, 80_000.0, 80_000.0] and rows[0]["first_rate"] == 80_000
    table = format_capacity_table(rows)
    assert table.splitlines()[1].split()[3:6] == ["80000", "<80000-80000", "<80000,80000,80000"]
    assert "lower --rates" in table
    only_failed = summarize([{"grouping": "KEY", "cost_ms": 0.0, "rep": 0, "capacity": None, "steps": failed_first}])
    assert format_capacity_table(only_failed).splitlines()[1].split()[3:6] == ["<80000", "<80000-<80000", "<80000"]


def test_the_harness_rows_show_their_batch_against_sparks_floor_at_capacity():
    def ladder(rep: int, batch: float, floor: float | None) -> dict:
        steps = [{"rate": 500, "holds": True, "batch_p50_ms": batch, "spark_floor_ms": floor},
                 {"rate": 1000, "holds": False, "batch_p50_ms": 9_000.0, "spark_floor_ms": 1.0}]
        return {"grouping": "KEY", "cost_ms": 1.0, "rep": rep, "capacity": 500, "steps": steps}

    storm = {"system": "storm", "grouping": "KEY", "cost_ms": 1.0, "rep": 0, "capacity": 500,
             "steps": [{"rate": 500, "holds": True}, {"rate": 1000, "holds": False}]}
    rows = summarize([ladder(0, 1_500.0, 80.0), ladder(1, 1_700.0, None), ladder(2, 1_600.0, 90.0), storm])
    harness = next(r for r in rows if r["system"] == "microbatch")
    # at each ladder's last step that held (the failed steps' 9,000 / 1 are not capacity's), median
    assert (harness["batch_p50_ms"], harness["spark_floor_ms"]) == (1_600.0, 85.0)
    table = format_capacity_table(rows).splitlines()
    assert table[0].endswith("BATCH / SPARK'S FLOOR AT CAPACITY (ms)")
    assert table[1].startswith("microbatch") and table[1].split()[-3:] == ["1,600", "/", "85"]
    assert table[2].startswith("storm") and table[2].split()[-1] == "-"
    assert table[-1].startswith("BATCH / SPARK'S FLOOR: the micro-batch harness's median batch at capacity")
    no_floor = summarize([ladder(0, 1_500.0, None)])
    assert format_capacity_table(no_floor).splitlines()[1].split()[-3:] == ["1,500", "/", "-"]


def test_storms_batch_sizes_ladder_apart_and_the_best_is_marked():
    from bench.capacity.storm import storm_system

    assert (storm_system(1), storm_system(100)) == ("storm", "storm-b100")

    def ladder(system: str, rep: int, capacity: float, top_held: bool = False) -> dict:
        steps = [{"rate": 500, "holds": True}, {"rate": 1000, "holds": top_held}]
        return {"system": system, "grouping": "KEY", "cost_ms": 1.0, "rep": rep, "capacity": capacity, "steps": steps}

    rows = summarize([ladder("microbatch", 0, 500), ladder("storm", 0, 500), ladder("storm-b100", 0, 1000, True),
                      ladder("storm-b1000", 0, 1000)])
    assert [(r["system"], r["median"], r.get("best_storm", False)) for r in rows] == [
        ("microbatch", 500, False), ("storm", 500, False), ("storm-b100", 1000, True), ("storm-b1000", 1000, False)]
    table = format_capacity_table(rows)
    assert [line.split()[0] for line in table.splitlines()[1:5]] == ["microbatch", "storm", "storm-b100*",
                                                                     "storm-b1000"]
    assert "* : the best of its batch sizes" in table
    # one batch size (Storm's default): nothing to choose, nothing marked
    single = summarize([ladder("microbatch", 0, 500), ladder("storm", 0, 1000)])
    assert not any(r.get("best_storm") for r in single)
    assert [line.split()[0] for line in format_capacity_table(single).splitlines()[1:]] == ["microbatch", "storm"]


def test_the_capacity_command_refuses_bad_storm_batch_sizes_before_it_starts(capsys):
    from bench.__main__ import main as bench_main

    for argv, message in ((["--peers", "storm", "--storm-batches", "0,100"], "distinct integers >= 1"),
                          (["--peers", "storm", "--storm-batches", "1,1"], "distinct integers >= 1"),
                          (["--peers", "storm", "--storm-batches", "ten"], "distinct integers >= 1"),
                          (["--storm-batches", "100"], "add --peers storm")):
        assert bench_main(["capacity", *argv]) == 2
        assert message in capsys.readouterr().err


def test_the_default_ladder_reaches_past_what_any_grouping_can_hold():
    from bench.capacity.decision import default_rates
    from bench.capacity.ladder import CapacityOptions

    ladder = default_rates(1.0, 10)
    assert ladder[0] == 250 and ladder[-1] >= 20_000 and ladder[-2] < 20_000
    assert all(b == 2 * a for a, b in zip(ladder, ladder[1:]))
    assert default_rates(0.0, 10) == [4000, 8000, 16000, 32000, 64000, 128000, 256000]
    options = CapacityOptions(groupings=["KEY"], costs_ms=[0.0, 1.0], rates=None)
    assert options.rates_for(0.0) == default_rates(0.0, 10) and options.rates_for(1.0) == ladder
    assert CapacityOptions(groupings=["KEY"], costs_ms=[1.0], rates=[100, 200]).rates_for(0.0) == [100, 200]


def test_a_harness_step_runs_with_the_ladders_trigger_and_aggregator_partitions():
    from bench.capacity.ladder import CapacityOptions, step_options

    reference = CapacityOptions(groupings=["KEY"], costs_ms=[0.0], rates=None)
    fitted = CapacityOptions(groupings=["KEY"], costs_ms=[0.0], rates=None, trigger_s=0.5, aggregators=2,
                             step_s=20.0, experiment_id="cap")
    step = step_options(fitted, "KEY", 0.0, 4000.0, "k0")
    assert (step.trigger_s, step.aggregators, step.limit, step.rate, step.mode) == (0.5, 2, 80_000, 4000.0,
                                                                                   "microbatch")
    assert step.run_id == "cap-microbatch-key-c0-r4000-k0" and step.own_topic
    # both modes in one session: a slot for every task of the real-time query, its audit and aggregator
    assert step.master == "local[36]"  # S 10 + 2 N 2 + W 10, + S 10 + 2
    realtime = step_options(fitted, "KEY", 0.0, 4000.0, "k0", "realtime", 40.0)
    assert (realtime.mode, realtime.limit, realtime.realtime_batch_s) == ("realtime", 160_000, 300)
    assert realtime.run_id == "cap-realtime-key-c0-r4000-k0"
    default = step_options(reference, "KEY", 0.0, 4000.0, "k0")
    assert (default.trigger_s, default.aggregators, default.master) == (1.0, 10, "local[52]")
    assert reference.harness_setting() == ("micro-batches every 1 s, A = 10 aggregator (state) partitions, "
                                           "real-time batches of 300 s")
    assert "back to back, A = 2" in CapacityOptions(groupings=["KEY"], costs_ms=[0.0], rates=None, trigger_s=0,
                                                    aggregators=2).harness_setting()
    only = CapacityOptions(groupings=["KEY"], costs_ms=[0.0], rates=None, modes=("microbatch",))
    assert step_options(only, "KEY", 0.0, 4000.0, "k0").master == "local[10]"


def test_the_systems_order_rotates_from_one_repetition_to_the_next():
    from bench.capacity.ladder import CapacityOptions, rotated

    options = CapacityOptions(groupings=["KEY"], costs_ms=[0.0], rates=None, peers=("storm",))
    assert options.systems() == ["microbatch", "realtime", "storm"]
    assert [rotated(options.systems(), rep) for rep in range(3)] == [
        ["microbatch", "realtime", "storm"], ["realtime", "storm", "microbatch"], ["storm", "microbatch", "realtime"]]


def test_the_figure_draws_p99_against_rate_per_grouping_with_the_hot_worker_bound():
    from bench.capacity.ladder import capacity_figure

    steps = [{"rate": 250, "holds": True, "p99_ms": 4000.0, "hottest_share": 0.8},
             {"rate": 500, "holds": True, "p99_ms": 4500.0, "hottest_share": 0.8},
             {"rate": 1000, "holds": False, "p99_ms": 11000.0, "hottest_share": 0.8}]
    ladders = [{"grouping": "KEY", "cost_ms": c, "rep": 0, "steps": steps, "capacity": capacity_of(steps)}
               for c in (0.0, 1.0)]
    record = {"ladders": ladders, "capacity": summarize(ladders),
              "options": {"thresholds": {"max_p99_ms": 10_000.0}}}
    fig = capacity_figure(record)
    zero, one = fig.axes
    assert [list(line.get_xdata()) for line in zero.lines][0] == [250, 500, 1000]
    verticals = [line for line in one.lines if list(line.get_xdata()) == [1250.0, 1250.0]]
    assert len(verticals) == 1 and not any(list(line.get_xdata()) == [1250.0, 1250.0] for line in zero.lines)


def test_a_storm_step_is_decided_by_the_harness_rule_on_its_progress_samples():
    from bench.capacity.decision import Thresholds
    from bench.capacity.storm import measure_storm_step, progress_batches
    from bench.latency import encode
    from tests.histograms import histogram

    # after a warm-up step of 80 tuples in the same JVM, only the step's own tuples count
    assert progress_batches([[1_000, 0, 0], [1_250, 90, 80], [1_500, 200, 190]], skipped=80) == [
        {"batch_id": 1, "records": 0, "end_ms": 1_250}, {"batch_id": 2, "records": 110, "end_ms": 1_500}]
    assert progress_batches([[1_000, 0, 0], [1_250, 90, 80], [1_500, 200, 190]]) == [
        {"batch_id": 0, "records": 0, "end_ms": 1_000}, {"batch_id": 1, "records": 80, "end_ms": 1_250},
        {"batch_id": 2, "records": 110, "end_ms": 1_500}]
    # 400 rec/s for 10 s from t = 0: keeping up, the processed count follows the rate 50 ms behind.
    kept_up = [[t, 400 * t // 1000, max(0, 400 * (t - 50) // 1000)] for t in range(0, 10_001, 250)]
    result = {"ok": True, "outcome": "complete", "progress": kept_up, "worker_loads": [3_000, 1_000],
              "cpu_seconds": 2.0, "settings": {"executors": {"worker": 10}},
              "latency": {"tuples": 3, "histogram": encode(histogram([20_000, 30_000, 400_000]))}}
    step = measure_storm_step(result, 400.0, 4_000, 0, 2.0, Thresholds(), "t")
    assert step["holds"] and step["why"] == "holds" and step["system"] == "storm"
    assert abs(step["lag_slope"]) < 1 and step["p99_ms"] == pytest.approx(400.0, rel=1e-3)
    assert step["hottest_share"] == 0.75 and step["cpu_us_per_record"] == 500.0
    # Reading half as fast as the rate: the lag grows by 200 rec/s, more than 10 % of 400.
    behind = [[t, 200 * t // 1000, 200 * t // 1000] for t in range(0, 10_001, 250)]
    slow = measure_storm_step({**result, "progress": behind}, 400.0, 4_000, 0, 2.0, Thresholds(), "t")
    assert not slow["holds"] and "lag grows" in slow["why"] and slow["lag_slope"] == pytest.approx(200, rel=0.01)
    failed = measure_storm_step({**result, "ok": False, "outcome": "no progress for 60 s"}, 400.0, 4_000, 0, 2.0,
                                Thresholds(), "t")
    assert not failed["holds"] and failed["why"] == "peer no progress for 60 s"


def test_a_ladder_climbs_until_its_first_step_that_does_not_hold():
    from bench.capacity.ladder import climb

    asked = []

    def step_at(rate):
        asked.append(rate)
        return {"rate": rate, "holds": rate < 1000}

    assert [s["rate"] for s in climb([250, 500, 1000, 2000], step_at)] == [250, 500, 1000]
    assert asked == [250, 500, 1000]  # 2,000 is never run
    assert [s["holds"] for s in climb([250, 500], step_at)] == [True, True]


def test_a_ctrl_c_ends_the_capacity_run_and_keeps_the_ladders_that_finished(monkeypatch, tmp_path, capsys):
    from bench.__main__ import main as bench_main
    from bench.capacity import ladder

    class Session:
        stopped = False

        def stop(self):
            Session.stopped = True

    held = [{"rate": 1000, "holds": True, "p99_ms": 80.0}, {"rate": 2000, "holds": False, "p99_ms": 9000.0}]
    ran = []

    def run_ladder(options, grouping, cost_ms, rep, spark, log, mode):
        ran.append(rep)
        if rep == 2:  # Ctrl-C during the third repetition's ladder
            raise KeyboardInterrupt
        return held

    monkeypatch.setattr(ladder, "build_session", lambda *_: Session())
    monkeypatch.setattr(ladder, "warm_up_step", lambda *args: {"holds": True})
    monkeypatch.setattr(ladder, "run_ladder", run_ladder)
    options = ladder.CapacityOptions(groupings=["KEY", "SHUFFLE"], costs_ms=[0.0], rates=[1000, 2000],
                                     modes=("realtime",))
    record = ladder.run_capacity(options, log=lambda *_: None)
    assert record["interrupted"] and Session.stopped and ran == [0, 1, 2]  # SHUFFLE never started
    assert [(r["grouping"], r["values"]) for r in record["capacity"]] == [("KEY", [1000.0, 1000.0])]

    # the command writes what finished, says it was cut short, and exits as an interrupted program does
    out = tmp_path / "cut"
    assert bench_main(["capacity", "--groupings", "KEY,SHUFFLE", "--cost-ms", "0", "--rates", "1000,2000",
                       "--modes", "realtime", "--out", str(out)]) == 130
    text = (out / "capacity.txt").read_text()
    assert "interrupted (Ctrl-C): the tables hold the 2 ladder(s) that finished" in text
    assert "1000,1000" in text and not any(line != line.rstrip() for line in text.splitlines())
    ran.clear()
    monkeypatch.setattr(ladder, "run_ladder", lambda *args: (_ for _ in ()).throw(KeyboardInterrupt))
    assert bench_main(["capacity", "--groupings", "KEY", "--cost-ms", "0", "--rates", "1000",
                       "--modes", "realtime", "--out", str(tmp_path / "none")]) == 130
    assert "nothing written" in capsys.readouterr().err and not (tmp_path / "none").exists()


def test_a_ctrl_c_during_a_storm_step_ends_the_peers_jvm_and_decides_nothing(monkeypatch):
    import subprocess
    import sys
    from types import SimpleNamespace

    from bench.capacity import storm

    processes = []

    def peer(*args, started, **kwargs):  # a real child process in the peer JVM's place
        with subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"]) as proc:
            processes.append(proc)
            started(proc)
            proc.wait()
        raise RuntimeError(f"exit {proc.returncode}")

    monkeypatch.setattr(storm, "STORM_START_S", 0.5)
    monkeypatch.setattr(storm, "ensure_topics", lambda *args: None)
    monkeypatch.setattr(storm, "get_dataset", lambda name: None)
    monkeypatch.setattr(storm, "run_storm_peer", peer)
    # the replay took the Ctrl-C: it flushed what it had handed over and says it was interrupted
    monkeypatch.setattr(storm, "replay", lambda *args, **kwargs: SimpleNamespace(interrupted=True))
    with pytest.raises(KeyboardInterrupt):
        storm.run_storm_step("127.0.0.1:1", "COUNTRY_SKEW_R80", "KEY", 0.0, 1000.0, 1.0, 0.5, Thresholds(), "t")
    assert len(processes) == 1 and processes[0].returncode is not None
