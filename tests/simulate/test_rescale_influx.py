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
