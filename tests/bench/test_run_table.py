"""The result table of `bench run` / `run-all`: input conditions in its header, slots, default master."""

from __future__ import annotations

from bench.run.input import describe_input
from bench.run.preflight import default_master
from bench.run.summary import format_table


def summary(grouping: str, input_conditions: dict | None, slots: int = 10, workers: int = 10) -> dict:
    return {"status": "completed", "grouping": grouping, "workers": workers, "task_slots": slots,
            "input": input_conditions, "checks": {},
            "reference": {"duration_ms": 1000, "throughput_ratio": 500.0},
            "exact": {"total_count": 500, "std_dev": 1.0, "dist_cost": 1.0, "max_mean_imbalance": 1.1},
            "latency": {"latency_p99_ms": 12.34, "latency_p999_ms": 20.0},
            "window_latency": {"window_latency_p99_ms": 61000.0}, "processing": {"duration_ms": 400}}


LIVE = {"mode": "live", "rate": 500.0, "paced": True}
RECORDED = {"mode": "recorded", "rate": None, "paced": False}


def test_the_header_states_the_common_input_conditions():
    lines = format_table([summary("KEY", LIVE), summary("SHUFFLE", LIVE)]).splitlines()
    assert lines[0].startswith("input: live 500 rec/s, every run replays the same records")
    assert "LAT p99 (ms)" in lines[1] and "WINDOW LAT p99 (ms)" in lines[1] and "INPUT" not in lines[1]
    assert "12.3" in lines[2] and "61000" in lines[2]
    assert "PROC RATE (rec/sec)" in lines[1] and " 400 " in lines[2] and " 1250 " in lines[2]  # 500 / 0.4 s
    assert format_table([summary("KEY", RECORDED)]).startswith("input: recorded topic")


def test_mixed_input_conditions_are_stated_and_each_row_marked():
    lines = format_table([summary("KEY", LIVE), summary("SHUFFLE", RECORDED)]).splitlines()
    assert lines[0].startswith("input: MIXED (live 500 rec/s, recorded)")
    assert "INPUT" in lines[1] and "live 500 rec/s" in lines[2] and "recorded" in lines[3]
    assert describe_input(None) == "unknown"


def test_fewer_slots_than_workers_is_noted_under_the_table():
    text = format_table([summary("KEY", LIVE, slots=2), summary("SHUFFLE", LIVE)])
    assert "note: KEY ran 10 workers on 2 task slots" in text and "note: SHUFFLE" not in text


def test_default_master_gives_every_worker_a_slot():
    assert default_master(10, 10, 10) == "local[10]"
    assert default_master(20, 10, 10) == "local[20]"
    assert default_master(4, 4, 12) == "local[12]"


def test_a_single_run_warms_the_session_up_only_when_it_measures_latency(tmp_path):
    from bench.run.options import RunOptions
    from bench.run.preflight import Prepared
    from bench.run.warm_up import measures_latency
    from bench.topology.config import TopologyConfig

    def prepared(rate, topic_exists=False, resumed=False):
        run_dir = tmp_path / f"r{rate}-{topic_exists}-{resumed}"
        config = TopologyConfig(run_id=run_dir.name, grouping="KEY", dataset="NYC_FLIGHTS", topic="t",
                                bootstrap_servers="127.0.0.1:1", checkpoint_dir=run_dir / "checkpoint",
                                results_dir=run_dir)
        if resumed:
            (config.checkpoint_dir / "main").mkdir(parents=True)
        return Prepared(options=RunOptions(grouping="KEY", dataset="NYC_FLIGHTS", rate=rate), config=config, dataset=None,
                        splitter_sql=None, run_id=run_dir.name, influx_url=None, influx_database="g",
                        topic_exists=topic_exists)

    assert measures_latency(prepared(500.0))
    assert not measures_latency(prepared(None))  # unpaced: no latency
    assert not measures_latency(prepared(500.0, topic_exists=True))  # recorded topic
    assert not measures_latency(prepared(500.0, resumed=True))  # a resume reads its topic as recorded
