"""A simulated rescale's events reach the real InfluxDB of the test stack (measurement `rescale`)."""

from __future__ import annotations

import json

from bench.__main__ import main as bench_main
from bench.stack.influxdb import InfluxService


def test_rescale_events_are_written_to_influxdb(stack, tmp_path, monkeypatch):
    monkeypatch.setattr("bench.results.record.RESULTS_DIR", tmp_path)
    code = bench_main(["simulate", "--dataset", "GOLDEN_SKEW", "--grouping", "KEY_GROUP", "--param",
                       "max_parallelism=256", "--workers", "10", "--rescale", "150s:12,240s:8", "--protocol",
                       "SHARED_STATE", "--run-id", "rs-influx", "--influx-url", stack.influx_url,
                       "--influx-db", stack.influx_database, "--no-progress"])
    assert code == 0
    summary = json.loads((tmp_path / "rs-influx" / "summary.json").read_text())
    assert summary["influx"]["points_sent"] == 2 and summary["influx"]["failed_batches"] == 0
    body = InfluxService(stack).query(
        'SELECT "moved_groups", "pause_ms", "ownership_violations" FROM "rescale" '
        "WHERE \"run_id\" = 'rs-influx' AND time >= 0 GROUP BY \"protocol\", \"routing\"",
        database=stack.influx_database)
    (series,) = body["results"][0]["series"]
    assert series["tags"] == {"protocol": "SHARED_STATE", "routing": "KEY_GROUP"}
    rows = [dict(zip(series["columns"], v)) for v in series["values"]]
    assert [r["moved_groups"] for r in rows] == [192, 223]
    assert [r["ownership_violations"] for r in rows] == [0, 0]
    assert all(r["pause_ms"] > 0 for r in rows)


def rescale_points(stack, run_id: str) -> list[dict]:
    """Every `rescale` point of `run_id` (tags and fields as columns), by time."""
    body = InfluxService(stack).query(f"SELECT * FROM \"rescale\" WHERE \"run_id\" = '{run_id}' AND time >= 0",
                                      database=stack.influx_database)
    return [dict(zip(s["columns"], v)) for s in body["results"][0].get("series") or [] for v in s["values"]]


def test_a_backfill_writes_a_simulated_rescales_points_as_the_run_did(stack, tmp_path, monkeypatch, capsys):
    """`bench influx backfill` of a `bench simulate --rescale` record writes each event's point with
    the timestamp, tags and fields the run wrote live (dropped here first); twice gives the same points."""
    monkeypatch.setattr("bench.results.record.RESULTS_DIR", tmp_path)
    run_id = "rs-backfill"
    assert bench_main(["simulate", "--dataset", "GOLDEN_SKEW", "--grouping", "VNODE", "--workers", "10", "--rescale",
                       "150s:12,240s:8", "--protocol", "STOP_THE_WORLD", "--run-id", run_id, "--influx-url",
                       stack.influx_url, "--influx-db", stack.influx_database, "--no-progress"]) == 0
    live = rescale_points(stack, run_id)
    assert len(live) == 2 and {p["mode"] for p in live} == {"simulate"}
    InfluxService(stack).query(f"DROP SERIES FROM \"rescale\" WHERE \"run_id\" = '{run_id}'", method="POST",
                               database=stack.influx_database)
    assert rescale_points(stack, run_id) == []
    capsys.readouterr()
    for _ in range(2):
        assert bench_main(["influx", "backfill", run_id, "--results-dir", str(tmp_path), "--influx-url",
                           stack.influx_url, "--influx-database", stack.influx_database]) == 0
        assert f"{run_id}: 2 points written" in capsys.readouterr().out  # no ticks: simulate writes none
        assert rescale_points(stack, run_id) == live
