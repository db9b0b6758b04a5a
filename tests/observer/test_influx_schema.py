"""One declared type per InfluxDB field, across runs, resumes and groupings; the backfill of a run's
points from its record (issue 27). The integration tests use the session's real InfluxDB 1.8."""

from __future__ import annotations

import json
import socket
import urllib.parse
import urllib.request

import pandas as pd
import pytest

from bench.__main__ import main as bench_main
from bench.observer.influx import InfluxWriter
from bench.observer.influx_schema import OBSERVER_FIELDS, WORKER_LOAD_FIELDS, row_points
from bench.run.outputs import InfluxOutput

T0 = 1_800_000_000_000
INFLUX_TYPE = {int: "integer", float: "float", str: "string", bool: "boolean"}


def tick(i: int, *, as_int: bool) -> dict:
    """An observer row; `as_int`: the float fields given as Python ints (what a first tick with
    whole numbers looks like), else the int fields given as floats (a row reloaded from parquet)."""
    num = (lambda v: int(v)) if as_int else (lambda v: float(v))  # noqa: E731
    row = {"run_id": "r", "tick": i, "time_ms": T0 + 1000 * i, "worker_loads": [3, 1], "worker_shares": [75, 25.0],
           "watermark": None, "hottest_keys": json.dumps([{"key": "JFK", "count": 3}])}
    for name, kind in OBSERVER_FIELDS.items():
        if kind is bool:
            row[name] = i % 2 == 0
        elif name not in row:
            row[name] = (num(i + 1) if kind is float else (int(i + 1) if as_int else float(i + 1)))
    return row


def test_points_have_the_declared_types_whatever_the_python_types():
    for as_int in (True, False):
        points = list(row_points(tick(2, as_int=as_int), {"run_id": "r"}))
        (_, tags, fields, ts), *workers = points
        assert ts == T0 + 2000 and tags == {"run_id": "r"}
        assert {k: type(v) for k, v in fields.items()} == OBSERVER_FIELDS
        assert [(t["worker"], f) for _, t, f, _ in workers] == [("0", {"load": 3, "share_pct": 75.0}),
                                                                  ("1", {"load": 1, "share_pct": 25.0})]
        assert all(type(f[k]) is WORKER_LOAD_FIELDS[k] for _, _, f, _ in workers for k in f)


def test_absent_values_are_left_out_and_an_undeclared_metric_is_refused():
    (_, _, fields, _), *_ = row_points({"time_ms": T0, "std_dev": float("nan"), "dist_cost": None,
                                         "keys": 3, "latency_p99_ms": float("inf")}, {})
    assert fields == {"time_ms": T0, "keys": 3}
    with pytest.raises(KeyError, match="new_metric"):
        list(row_points({"time_ms": T0, "new_metric": 1.5}, {}))


def query(stack, q: str) -> list[dict]:
    params = urllib.parse.urlencode({"db": stack.influx_database, "q": q, "epoch": "ms"})
    with urllib.request.urlopen(f"{stack.influx_url}/query?{params}", timeout=10) as r:
        result = json.load(r)["results"][0]
    assert "error" not in result, result
    return result.get("series") or []


def points_of(stack, measurement: str, run_id: str) -> list[dict]:
    series = query(stack, f"SELECT * FROM {measurement} WHERE run_id = '{run_id}'")
    return [dict(zip(s["columns"], v)) for s in series for v in s["values"]]


@pytest.mark.parametrize("live_input", [True, False])
def test_every_column_of_an_observer_tick_is_declared(tmp_path, live_input):
    """A metric added to the observer's row without a declared type makes `row_points` raise, and
    the run's InfluxDB output then writes nothing: the schema must cover the row the observer makes."""
    from bench.observer.observer import Observer

    row = Observer("schema", 3, tmp_path, live_input=live_input).tick(1_000)
    points = list(row_points(row, {"run_id": "schema"}))
    assert points and points[0][0] == "observer"


@pytest.mark.integration
def test_two_runs_and_a_resume_keep_one_type_per_field(stack):
    def run(run_id, grouping, ticks, as_int):
        w = InfluxWriter(stack.influx_url, stack.influx_database,
                         {"run_id": run_id, "grouping": grouping, "dataset": "NYC_FLIGHTS", "workers": "2"},
                         flush_interval_ms=100)
        for i in ticks:
            w.write_row(tick(i, as_int=as_int))
        w.close()
        assert w.status()["failed_batches"] == 0, w.status()

    run("schema-a", "KEY", range(3), as_int=True)  # first run: whole numbers everywhere
    run("schema-b", "SHUFFLE", range(3), as_int=False)  # another grouping: floats everywhere
    run("schema-a", "KEY", range(3, 6), as_int=False)  # a resume of the first run, rows reloaded as floats
    for measurement, declared in (("observer", OBSERVER_FIELDS), ("worker_load", WORKER_LOAD_FIELDS)):
        (series,) = query(stack, f"SHOW FIELD KEYS FROM {measurement}")
        types = dict(series["values"])
        assert {k: types[k] for k in declared} == {k: INFLUX_TYPE[v] for k, v in declared.items()}
    got = sorted(points_of(stack, "observer", "schema-a"), key=lambda p: p["time"])
    assert [p["time"] for p in got] == [T0 + 1000 * i for i in range(6)]
    for i, p in enumerate(got):  # every field read back equals what was written, typed
        (_, _, fields, _), *_ = row_points(tick(i, as_int=i < 3), {})
        assert {k: p[k] for k in fields} == fields
    assert len(points_of(stack, "worker_load", "schema-b")) == 3 * 2


@pytest.mark.integration
def test_a_database_of_an_older_schema_is_named_in_the_error(stack):
    """A field written with another type before (an older harness) refuses the points: the error kept
    for the console is InfluxDB's own reason, not just "HTTP 400" (a database of its own here)."""
    database = "older_schema"
    request = urllib.request.Request(f"{stack.influx_url}/query?" + urllib.parse.urlencode(
        {"q": f"CREATE DATABASE {database}"}), method="POST")
    urllib.request.urlopen(request, timeout=10).close()
    line = f"observer,run_id=old batch_duration_ms=5i {T0}".encode()
    urllib.request.urlopen(urllib.request.Request(
        f"{stack.influx_url}/write?db={database}&precision=ms", data=line, method="POST"), timeout=10).close()
    w = InfluxWriter(stack.influx_url, database, {"run_id": "new"}, flush_interval_ms=100)
    w.write_row(tick(0, as_int=False))
    w.close()
    status = w.status()
    assert status["failed_batches"] >= 1
    assert "field type conflict" in status["last_error"] and "batch_duration_ms" in status["last_error"], status


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.integration
def test_points_that_failed_are_backfilled_from_the_run_record_idempotently(stack, tmp_path, capsys):
    run_id = "backfill-run"
    tags = {"run_id": run_id, "grouping": "KEY", "dataset": "NYC_FLIGHTS", "workers": "2"}
    rows = [tick(i, as_int=i % 2 == 0) for i in range(7)]
    down = InfluxWriter(f"http://127.0.0.1:{free_port()}", stack.influx_database, tags, flush_interval_ms=100)
    for row in rows:
        down.write_row(row)
    assert down.finish(rows) == 0  # InfluxDB down: nothing to backfill into
    assert down.status()["failed_batches"] >= 1 and down.status()["pending_backfill"]
    assert "\n" not in down.status()["last_error"]

    run_dir = tmp_path / run_id
    run_dir.mkdir()
    (run_dir / "run.json").write_text(json.dumps({"config": {**tags, "workers": 2, "influx_url": stack.influx_url}}))
    pd.DataFrame(rows).to_parquet(run_dir / "metrics.parquet", index=False)
    argv = ["influx", "backfill", run_id, "--results-dir", str(tmp_path), "--influx-database", stack.influx_database]
    for _ in range(2):  # twice: the same points, not twice as many
        assert bench_main(argv) == 0
        assert f"{run_id}: {7 * 3:,} points written" in capsys.readouterr().out
        assert len(points_of(stack, "observer", run_id)) == len(rows)
        assert len(points_of(stack, "worker_load", run_id)) == 2 * len(rows)
    assert bench_main(["influx", "backfill", "no-such-run", "--results-dir", str(tmp_path)]) == 2


@pytest.mark.integration
@pytest.mark.parametrize("resumed", [False, True])
def test_a_resumed_run_writes_the_earlier_attempts_ticks_again(stack, resumed):
    """A killed attempt's last ticks may never have left its writer's batch (make nemesis, seed 60:
    one tick of a SIGKILLed driver missing from InfluxDB): a resumed run's first tick writes the run
    record's earlier ticks again; a first attempt writes only its own."""
    run_id = f"resumed-{resumed}"
    tags = {"run_id": run_id, "grouping": "KEY", "dataset": "NYC_FLIGHTS", "workers": "2"}
    earlier = [tick(i, as_int=False) for i in range(4)] if resumed else []
    rows = earlier + [tick(len(earlier), as_int=False)]  # the observer's rows at this attempt's first tick
    writer = InfluxWriter(stack.influx_url, stack.influx_database, tags, flush_interval_ms=100)
    lines: list[str] = []
    output = InfluxOutput(writer, stack.influx_url, lambda: rows, lines.append)
    output(rows[-1])
    rows.append(tick(len(rows), as_int=False))
    output(rows[-1])  # once only: a later tick writes its own point
    writer.close()
    assert len(points_of(stack, "observer", run_id)) == len(rows)
    assert lines == ([f"InfluxDB at {stack.influx_url}: {5 * 3:,} points of 5 ticks written again from the run "
                      "record"] if resumed else [])
