"""STOP_THE_WORLD on Spark (docs/rescaling.md, "On Spark"): the query stops at a batch boundary,
its state is repartitioned (Spark's `StreamingCheckpointManager.repartition`), the keys that change
owner move through `<run>.state`, and it restarts from the same checkpoint with the new worker
count. Real broker, real Spark; the shared e2e topic and its VNODE run without rescaling."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pandas as pd
import pytest

from bench.__main__ import main as bench_main
from bench.run.stream import run_stream
from bench.run.preflight import prepare
from bench.topology.sink import read_aggregates
from tests.conftest import (EVERY_PHASE, E2E_DATASET, E2E_FAST, E2E_LIMIT, E2E_PARTITIONS, InputTopic, data_batches,
                            e2e_options)
from tests.killing import kill_driver_in_a_rescale

pytestmark = [pytest.mark.integration, pytest.mark.spark]


@pytest.fixture(scope="module")
def paced_topic(stack) -> InputTopic:
    """The shared topic's 2,000 NYC_FLIGHTS records (without its malformed ones) replayed at 4,000
    records/s: 0.5 s of Kafka timestamps, where the shared topic's fast replay spans 0-3 ms, so two
    events on it lie whole micro-batches apart on any machine."""
    from datasets import get_dataset
    from producers import replay

    topic = f"e2e.nyc.paced.{int(time.time())}"
    dataset = get_dataset(E2E_DATASET)
    assert replay(dataset, topic, stack.bootstrap_servers, partitions=E2E_PARTITIONS, limit=E2E_LIMIT,
                  rate=4000.0, progress=False).ok
    stats = dataset.key_stats(E2E_LIMIT)
    return InputTopic(topic, dict(stats.weights), stats.weight)


@pytest.fixture(scope="module")
def two_events(stack, paced_topic) -> str:
    """Two events by worker id: add workers 4 and 5 at a third of the valid tuples' span, remove
    worker 1 at two thirds (4 -> 6 -> 5 workers, ids 0, 2, 3, 4, 5 at the end); with A = 2, N goes
    2 -> 6 -> 5."""
    from bench.simulate.sources import from_topic
    from datasets import get_dataset

    table = from_topic(get_dataset(E2E_DATASET), paced_topic.name, stack.bootstrap_servers,
                       E2E_FAST["splitters"])[0]
    span = int(table.ts_ms.max()) - int(table.ts_ms.min())
    return f"{span // 3}ms:+4,+5,{2 * span // 3}ms:-1"


def simulate_stop_the_world(stack, input_topic, schedule: str, folder: Path,
                            protocol: str = "STOP_THE_WORLD") -> tuple[dict, pd.DataFrame, Path]:
    """summary.json, state.parquet and the record's folder (`<folder>/sim-stw`) of `bench simulate
    --from-topic` over `input_topic` (an InputTopic) with the e2e runs' W and S, `schedule` and
    `protocol`."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr("bench.results.record.RESULTS_DIR", folder)
        simulate_ok = bench_main([
            "simulate", "--from-topic", input_topic.name, "--bootstrap-servers", stack.bootstrap_servers,
            "--dataset", "NYC_FLIGHTS", "--grouping", "VNODE", "--workers", str(E2E_FAST["workers"]),
            "--splitters", str(E2E_FAST["splitters"]), "--run-id", "sim-stw", "--no-progress",
            "--rescale", schedule, "--protocol", protocol,
        ])
    assert simulate_ok == 0
    return (json.loads((folder / "sim-stw" / "summary.json").read_text()),
            pd.read_parquet(folder / "sim-stw" / "state.parquet"), folder / "sim-stw")


@pytest.fixture(scope="module")
def simulated(stack, input_topic, stw_schedule, tmp_path_factory):
    return simulate_stop_the_world(stack, input_topic, stw_schedule, tmp_path_factory.mktemp("stw-sim"))


def assert_completed_exactly(stack, run: dict, total: int) -> None:
    """The run completed, every check held, and its aggregates (Kafka) and exact figures count
    `total`, the input's weighted tuples."""
    assert run["status"] == "completed", run["error"]
    assert all(v is not False for v in run["checks"].values()), run["checks"]
    aggregates = read_aggregates(stack.bootstrap_servers, f"{Path(run['results']).name}.aggregates")
    assert sum(v["count"] for v in aggregates.values()) == total
    assert run["exact"]["total_count"] == total


def test_totals_are_exact_and_the_checks_hold(stack, stw_run, input_topic):
    assert_completed_exactly(stack, stw_run, input_topic.total)


def test_the_event_is_recorded_with_the_figures_of_part_1(stw_run, simulated):
    rescale = stw_run["rescale"]
    assert rescale["ownership_violations"] == 0 and rescale["worker_id_space"] == 6
    (event,) = rescale["events"]
    (sim_event,) = simulated[0]["rescale"]["events"]
    assert (event["workers_before"], event["workers_after"]) == (4, 6)
    assert event["moved_groups"] == sim_event["moved_groups"] and event["groups"] == 256
    assert event["ownership_violations"] == 0
    assert event["switch_batch"] > event["barrier_batch"]
    assert (event["partitions_before"], event["partitions_after"]) == (2, 6)
    assert event["pause_ms"] > 0 and event["state_entries_moved"] == event["moved_keys"]
    assert event["state_entries_read"] >= event["moved_keys"]


def test_the_final_state_is_the_simulators_and_that_of_the_run_without_rescaling(stw_run, simulated, stream_runs):
    state = pd.read_parquet(Path(stw_run["results"]) / "state.parquet")
    pd.testing.assert_frame_equal(state, simulated[1], check_dtype=False)  # owners included
    assert not state["key"].duplicated().any()
    plain = pd.read_parquet(Path(stream_runs["VNODE"]["results"]) / "state.parquet")
    cols = ["key", "count", "sum", "first_ts_ms", "last_ts_ms"]
    pd.testing.assert_frame_equal(state[cols], plain[cols], check_dtype=False)
    assert set(state["worker"]) - set(range(4))  # keys now at the added workers 4 and 5


def test_throughput_and_imbalance_around_the_event_are_measured_on_the_wall_clock(stw_run):
    (event,) = stw_run["rescale"]["events"]
    assert event["resumed_wall_ms"] == event["stop_wall_ms"] + event["pause_ms"]
    # The shared topic's records span a few ms, so the driver, which polls, may stop the query
    # after its last batch with data: each window has tuples exactly when a batch with data ended
    # in it (test_rescale_live.py checks every window on an input that goes on after the event).
    data = data_batches(stw_run)
    stop, resumed = event["stop_wall_ms"], event["resumed_wall_ms"]
    assert event["throughput_tps_before"] > 0  # the barrier batch had reached the event's time
    if any(stop < b["end_ms"] <= resumed for b in data):
        assert event["throughput_tps_during"] > 0
    else:
        assert event["throughput_tps_during"] == 0
    if any(b["end_ms"] > resumed for b in data):
        assert event["throughput_tps_after"] > 0
    else:
        assert event["throughput_tps_after"] is None  # the window after the last batch with data is empty
    for window in ("before", "during", "after"):
        assert event[f"latency_ms_p99_{window}"] is None, window  # a recorded topic: no processing latency
    assert event["std_dev_before"] is not None and event["max_mean_before"] >= 1
    if any(b["batch_id"] >= event["switch_batch"] for b in data):  # the imbalance after counts the switch batch
        assert event["std_dev_after"] is not None and event["max_mean_after"] >= 1
    else:
        assert event["std_dev_after"] is None and event["max_mean_after"] is None


def test_the_ticks_of_the_pause_are_marked_rescaling_in_metrics_and_influxdb(stack, stw_run):
    from tests.observer.test_influx_schema import query

    (event,) = stw_run["rescale"]["events"]
    ticks = pd.read_parquet(Path(stw_run["results"]) / "metrics.parquet")
    assert ticks["rescaling"].dtype == bool and ticks["rescaling"].any() and not ticks["rescaling"].all()
    previous = ticks["time_ms"].shift(1)
    marked = ticks[ticks["rescaling"]]
    began = event["stop_wall_ms"] - 100  # the driver notes the stop a moment before it journals stop_wall_ms
    assert (marked["time_ms"] >= began).all()
    assert (previous[ticks["rescaling"]].fillna(0) < event["resumed_wall_ms"]).all()
    assert not ticks.loc[ticks["time_ms"] < began, "rescaling"].any()
    # every tick whose interval holds the stop or lies in the pause is marked
    during = (ticks["time_ms"] >= event["stop_wall_ms"]) & (previous < event["resumed_wall_ms"])
    assert ticks.loc[during, "rescaling"].all()
    run_id = Path(stw_run["results"]).name
    (series,) = query(stack, f"SELECT \"rescaling\" FROM \"observer\" WHERE \"run_id\" = '{run_id}'")
    written = {t: v for t, v in series["values"]}
    assert written == dict(zip(ticks["time_ms"].astype(int), ticks["rescaling"]))


def test_the_rescale_point_reaches_influxdb_at_the_stop_with_the_events_figures(stack, stw_run):
    from tests.observer.test_influx_schema import query

    (event,) = stw_run["rescale"]["events"]
    assert stw_run["rescale"]["influx"] == {"points_sent": 1, "error": None}
    run_id = Path(stw_run["results"]).name
    (series,) = query(stack, f"SELECT * FROM \"rescale\" WHERE \"run_id\" = '{run_id}' AND time >= 0")
    (point,) = [dict(zip(series["columns"], v)) for v in series["values"]]
    assert point["time"] == event["stop_wall_ms"]
    assert {k: point[k] for k in ("run_id", "grouping", "dataset", "workers", "protocol", "routing", "event")} == {
        "run_id": run_id, "grouping": "VNODE", "dataset": "NYC_FLIGHTS", "workers": "4",
        "protocol": "STOP_THE_WORLD", "routing": "VNODE", "event": stw_run["rescale"]["schedule"][0]}
    for field in ("pause_ms", "moved_keys", "moved_groups", "groups", "state_entries_read", "state_bytes_read",
                  "barrier_batch", "switch_batch", "resumed_wall_ms", "ownership_violations",
                  "throughput_tps_before", "throughput_tps_during", "throughput_tps_after", "std_dev_after"):
        assert point[field] == pytest.approx(event[field]), field
    assert point["step_savepoint_ms"] == pytest.approx(event["steps"]["savepoint_ms"])
    # no such field in this point (a null column when another run's point has it): the run had no latency
    assert point.get("latency_ms_p99_during") is None
    assert point["description"].startswith(f"{event['event']} STOP_THE_WORLD on VNODE: 4 -> 6 workers, pause ")


def test_a_backfill_writes_the_rescale_point_as_the_run_did(stack, stw_run, tmp_path, capsys):
    """`bench influx backfill` of a Spark rescale run's record writes its ticks and the event's
    `rescale` point with the stop's timestamp, the run's tags and the event's fields, as the run did
    live; twice gives the same points. The record (run.json, summary.json, metrics.parquet) is
    copied under another run id, so the session's run keeps its own points."""
    import shutil

    from bench.observer.influx_schema import row_points
    from tests.observer.test_influx_schema import points_of, query

    source = Path(stw_run["results"])
    run_id = f"{source.name}-copy"
    copy = tmp_path / run_id
    copy.mkdir()
    for name in ("summary.json", "metrics.parquet"):
        shutil.copy(source / name, copy / name)
    run = json.loads((source / "run.json").read_text())
    run["run_id"] = run["config"]["run_id"] = run_id
    (copy / "run.json").write_text(json.dumps(run))

    def rescale_points(rid: str) -> list[dict]:
        series = query(stack, f"SELECT * FROM \"rescale\" WHERE \"run_id\" = '{rid}' AND time >= 0")
        return [dict(zip(s["columns"], v)) for s in series for v in s["values"]]

    (live,) = rescale_points(source.name)
    rows = pd.read_parquet(source / "metrics.parquet").to_dict("records")
    tick_points = sum(1 for row in rows for _ in row_points(row, {}))  # observer + each worker's load
    argv = ["influx", "backfill", run_id, "--results-dir", str(tmp_path), "--influx-url", stack.influx_url,
            "--influx-database", stack.influx_database]
    capsys.readouterr()
    for _ in range(2):
        assert bench_main(argv) == 0
        assert f"{run_id}: {tick_points + 1:,} points written" in capsys.readouterr().out
        (point,) = rescale_points(run_id)
        assert point == {**live, "run_id": run_id}
        assert point["time"] == stw_run["rescale"]["events"][0]["stop_wall_ms"]
        assert len(points_of(stack, "observer", run_id)) == len(rows)


def test_compare_draws_the_spark_rescale_beside_the_simulators(stw_run, simulated, tmp_path):
    """`bench compare` of the Spark run draws `rescale_timeline_<dataset>` and `rescale_costs_<dataset>`
    (it failed on the Spark events before, KeyError on the simulator-only `hold_delay_ms_p99`, and
    drew no timeline: a Spark record has no `throughput_tps` per tick). Beside the simulator's run of
    the same schedule, the Spark events are a cell of their own, on the wall clock: the ticks'
    throughput counts every tuple of the run's batches once, and the shaded span is the pause."""
    from bench.compare import build_comparison
    from bench.compare.rescale import SPARK, load_events, stream_ticks
    from bench.results import reader

    source = Path(stw_run["results"])
    assert bench_main(["compare", source.name, "--root", str(source.parent), "--out", str(tmp_path / "alone")]) == 0
    for stem in ("rescale_timeline_nyc_flights", "rescale_costs_nyc_flights"):
        assert (tmp_path / "alone" / f"{stem}.png").is_file(), stem
    assert "| STOP_THE_WORLD (Spark) |" in (tmp_path / "alone" / "comparison.md").read_text()

    sim_record = simulated[2]
    runs = pd.concat([reader.load_runs(source.parent, run_ids=[source.name]),
                      reader.load_runs(sim_record.parent, run_ids=[sim_record.name])], ignore_index=True)
    comparison = build_comparison(runs)
    events = load_events(comparison.runs)
    assert sorted(events["cell"]) == ["STOP_THE_WORLD", f"STOP_THE_WORLD {SPARK}"]
    figures = comparison.figures()
    timeline = figures["rescale_timeline_nyc_flights"]
    assert "rescale_costs_nyc_flights" in figures

    tick_ms = 1000 * json.loads((source / "run.json").read_text())["config"]["observer_tick_s"]
    spark_ticks = stream_ticks(comparison.metrics[comparison.metrics["run_id"] == source.name], source, tick_ms)
    intervals = spark_ticks["time_ms"].diff().fillna(tick_ms)
    finished = (spark_ticks["throughput_tps"] * intervals / 1000.0).sum()
    assert finished == pytest.approx(sum(sum(b["tuples"]) for b in data_batches(stw_run)
                                         if b["end_ms"] <= spark_ticks["time_ms"].max()))
    (event,) = stw_run["rescale"]["events"]
    origin_ms = float((spark_ticks["time_ms"] - 1000 * spark_ticks["elapsed_s"]).iloc[0])
    spark_column = [ax for ax in timeline.axes if ax.get_title() == f"STOP_THE_WORLD {SPARK}"][0]
    (span,) = spark_column.patches
    x0, x1 = span.get_x(), span.get_x() + span.get_width()
    assert x0 == pytest.approx((event["stop_wall_ms"] - origin_ms) / 1000)
    assert x1 == pytest.approx((max(event["resumed_wall_ms"], event["stop_wall_ms"] + 500) - origin_ms) / 1000)


def state_topic_keys(stack, run_id: str) -> list[str]:
    """The keys of every record in `<run>.state`, in offset order (`<epoch>|<slot>|<kind>|<chunk>`
    and the epochs' `<epoch>|done` markers)."""
    from confluent_kafka import Consumer, TopicPartition

    from bench.topology import state_transfer

    name = state_transfer.topic(run_id)
    consumer = Consumer({"bootstrap.servers": stack.bootstrap_servers, "group.id": f"{run_id}.test",
                         "enable.auto.commit": False})
    try:
        low, high = consumer.get_watermark_offsets(TopicPartition(name, 0), timeout=10)
        consumer.assign([TopicPartition(name, 0, low)])
        keys, position = [], low
        while position < high:
            msg = consumer.poll(10)
            assert msg is not None, f"{name}: no record at offset {position}"
            if msg.error():
                continue
            keys.append(msg.key().decode())
            position = msg.offset() + 1
        return keys
    finally:
        consumer.close()


def assert_epoch_written_once(stack, run_id: str, epoch: int) -> None:
    """`<run>.state` holds epoch `epoch`'s records and its marker once each: a resumed driver did not
    write the epoch again (nor lose it)."""
    keys = [k for k in state_topic_keys(stack, run_id) if k.split("|")[0] == str(epoch)]
    assert keys.count(f"{epoch}|done") == 1 and keys[-1] == f"{epoch}|done", keys
    assert len(keys) == len(set(keys)) > 1, keys


@pytest.mark.parametrize("killed", [pytest.param("STOP_THE_WORLD/stopped", marks=EVERY_PHASE),
                                    "STOP_THE_WORLD/savepoint",
                                    pytest.param("STOP_THE_WORLD/repartitioned", marks=EVERY_PHASE),
                                    pytest.param("STOP_THE_WORLD/transferred", marks=EVERY_PHASE)], indirect=True)
def test_a_driver_killed_in_the_middle_of_a_rescale_resumes_exactly(stack, spark, input_topic, stw_schedule, simulated,
                                                                  killed):
    """SIGKILL right after the query was stopped (the interrupted batch not finished, no savepoint),
    after the savepoint was read (and, as if it died inside Spark's repartition, an uncommitted
    repartition batch), after Spark's
    repartition wrote its batch (before the moved state reached `<run>.state`), or after the moved
    state was written (before the restart); the same run id finishes the rescale and the run,
    exactly, and writes the epoch to `<run>.state` once in all."""
    from bench.rescale.driver import checkpoint_partitions

    phase, run_id, folder = killed.phase, killed.run_id, killed.results_dir
    options = e2e_options(stack, folder, input_topic.name, "VNODE", run_id, rescale=stw_schedule,
                          protocol="STOP_THE_WORLD", max_offsets_per_trigger=300)
    # what the kill left: the checkpoint's layout and the state topic at that phase
    (journal,) = json.loads((folder / run_id / "rescale.json").read_text())["events"]
    checkpoint = folder / run_id / "checkpoint" / "main"
    if phase == "stopped":
        assert "barrier_batch" not in journal and checkpoint_partitions(checkpoint) == 2
    elif phase == "savepoint":
        assert "switch_batch" not in journal and checkpoint_partitions(checkpoint) == 2
    else:
        assert journal["switch_batch"] > journal["barrier_batch"] and checkpoint_partitions(checkpoint) == 6
    assert state_topic_has_epoch(stack, run_id) == (phase == "transferred")
    if phase == "savepoint":
        # As if the driver died inside Spark's repartition, after it wrote its batch and before the
        # commit: a query started on that fails (STREAMING_UNFINISHED_REPARTITION_DETECTED), and the
        # resumed driver tried to finish it as a data batch at every attempt (make nemesis, 2026-11-29).
        from bench.rescale.driver import batch_ids

        spark._streamingCheckpointManager.repartition(str(checkpoint), 6)
        last = batch_ids(checkpoint / "commits")[-1]
        for name in (str(last), f".{last}.crc"):
            (checkpoint / "commits" / name).unlink(missing_ok=True)

    resumed = run_stream(prepare(options), spark=spark, log=lambda *_: None)
    assert resumed["status"] == "completed" and resumed["resumed"], resumed["error"]
    assert_completed_exactly(stack, resumed, input_topic.total)
    assert resumed["rescale"]["ownership_violations"] == 0
    (event,) = resumed["rescale"]["events"]
    assert (event["partitions_before"], event["partitions_after"]) == (2, 6)
    if phase != "stopped":
        assert event["barrier_batch"] == journal["barrier_batch"]
    if phase not in ("stopped", "savepoint"):
        assert event["switch_batch"] == journal["switch_batch"]
    assert_epoch_written_once(stack, run_id, 1)
    state = pd.read_parquet(folder / run_id / "state.parquet")
    pd.testing.assert_frame_equal(state, simulated[1], check_dtype=False)


def state_topic_has_epoch(stack, run_id: str, epoch: int = 1) -> bool:
    """Whether `<run>.state` holds epoch `epoch` with its completion marker."""
    from bench.topology import state_transfer

    return epoch in state_transfer.written_epochs(stack.bootstrap_servers, run_id)


@pytest.fixture(scope="module")
def rescaled_twice(stack, spark, paced_topic, two_events, tmp_path_factory):
    run_id = f"e2e-stw2-{int(time.time())}"
    options = e2e_options(stack, tmp_path_factory.mktemp("stw2"), paced_topic.name, "VNODE", run_id,
                          rescale=two_events, protocol="STOP_THE_WORLD", max_offsets_per_trigger=300)
    return run_stream(prepare(options), spark=spark, log=lambda *_: None)


@pytest.fixture(scope="module")
def simulated_twice(stack, paced_topic, two_events, tmp_path_factory):
    return simulate_stop_the_world(stack, paced_topic, two_events, tmp_path_factory.mktemp("stw2-sim"))


def test_two_events_by_worker_id_are_exact(stack, paced_topic, two_events, rescaled_twice, simulated_twice):
    """`+4,+5` then `-1`: each event stops, moves and restarts in turn (the second only once the
    first's switch batch is committed); totals exact, every check true, 0 ownership violations,
    the final state the simulator's row for row, owners included."""
    run = rescaled_twice
    assert_completed_exactly(stack, run, paced_topic.total)
    sim_summary, sim_state, _ = simulated_twice
    rescale = run["rescale"]
    assert rescale["ownership_violations"] == 0 and rescale["worker_id_space"] == 6
    first, second = rescale["events"]
    assert (first["worker_ids_before"], first["worker_ids_after"]) == ([0, 1, 2, 3], [0, 1, 2, 3, 4, 5])
    assert (second["worker_ids_before"], second["worker_ids_after"]) == ([0, 1, 2, 3, 4, 5], [0, 2, 3, 4, 5])
    assert [(e["partitions_before"], e["partitions_after"]) for e in (first, second)] == [(2, 6), (6, 5)]
    assert first["barrier_batch"] < first["switch_batch"] <= second["barrier_batch"] < second["switch_batch"]
    assert [e["moved_groups"] for e in rescale["events"]] == [e["moved_groups"] for e in sim_summary["rescale"]["events"]]
    for event in rescale["events"]:
        assert event["ownership_violations"] == 0 and event["pause_ms"] > 0
        assert event["state_entries_read"] >= event["moved_keys"] == event["state_entries_moved"]
    state = pd.read_parquet(Path(run["results"]) / "state.parquet")
    pd.testing.assert_frame_equal(state, sim_state, check_dtype=False)  # owners included
    assert not state["key"].duplicated().any()
    assert set(state["worker"]) <= {0, 2, 3, 4, 5} and {4, 5} & set(state["worker"])


@EVERY_PHASE
def test_a_driver_killed_in_the_second_event_resumes_exactly(stack, spark, paced_topic, two_events, simulated_twice,
                                                             tmp_path):
    """The two-event schedule, SIGKILL after the second event's repartition (N 6 -> 5; its moved
    state not yet in `<run>.state`): the same run id keeps the first event as it was, finishes the
    second, and the run ends with the totals and the state of the simulator, owners included."""
    from bench.rescale.driver import checkpoint_partitions

    run_id = f"e2e-stw2-kill-{int(time.time())}"
    kill_driver_in_a_rescale(stack, E2E_FAST, tmp_path, paced_topic.name, two_events, run_id, "repartitioned", index=1)
    first_killed, second_killed = json.loads((tmp_path / run_id / "rescale.json").read_text())["events"]
    assert first_killed["phase"] == "restarted"
    assert checkpoint_partitions(tmp_path / run_id / "checkpoint" / "main") == 5
    assert state_topic_has_epoch(stack, run_id, 1) and not state_topic_has_epoch(stack, run_id, 2)

    options = e2e_options(stack, tmp_path, paced_topic.name, "VNODE", run_id, rescale=two_events,
                          protocol="STOP_THE_WORLD", max_offsets_per_trigger=300)
    resumed = run_stream(prepare(options), spark=spark, log=lambda *_: None)
    assert resumed["resumed"]
    assert_completed_exactly(stack, resumed, paced_topic.total)
    rescale = resumed["rescale"]
    assert rescale["ownership_violations"] == 0
    first, second = rescale["events"]
    assert {k: first[k] for k in ("barrier_batch", "switch_batch", "moved_keys")} == \
        {k: first_killed[k] for k in ("barrier_batch", "switch_batch", "moved_keys")}
    assert (second["barrier_batch"], second["switch_batch"]) == (second_killed["barrier_batch"],
                                                               second_killed["switch_batch"])
    assert [(e["partitions_before"], e["partitions_after"]) for e in (first, second)] == [(2, 6), (6, 5)]
    assert [e["moved_groups"] for e in rescale["events"]] == \
        [e["moved_groups"] for e in simulated_twice[0]["rescale"]["events"]]
    assert_epoch_written_once(stack, run_id, 1)
    assert_epoch_written_once(stack, run_id, 2)
    state = pd.read_parquet(tmp_path / run_id / "state.parquet")
    pd.testing.assert_frame_equal(state, simulated_twice[1], check_dtype=False)  # owners included
