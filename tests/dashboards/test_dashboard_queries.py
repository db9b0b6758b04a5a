"""Every dashboard query, as Grafana would send it, returns data from the real InfluxDB after the
streaming runs of the test session (one per grouping on a recorded topic, one live run, which
alone has processing and window latency, and the STOP_THE_WORLD rescale run, which alone writes the
`rescale` measurement), and after the capacity decisions on that live run are written as
`make capacity` writes them."""

from __future__ import annotations

import copy
import json
import time
import urllib.parse
import urllib.request

from pathlib import Path

import pytest

from tests.conftest import data_batches
from tests.dashboards.grafana import annotation_queries, expand, load_dashboard, panel_queries, variable_queries

pytestmark = [pytest.mark.integration, pytest.mark.spark]


def influxql(stack, query: str) -> list[dict]:
    params = urllib.parse.urlencode({"db": stack.influx_database, "q": query, "epoch": "ms"})
    with urllib.request.urlopen(f"{stack.influx_url}/query?{params}", timeout=30) as resp:
        result = json.load(resp)["results"][0]
    if "error" in result:
        raise AssertionError(f"InfluxDB rejected {query!r}: {result['error']}")
    return result.get("series") or []


def check_dashboard(stack, dashboard: dict, since_ms: int) -> list[str]:
    """Run every variable query, then every panel and annotation query with "All" selected; the
    problems found."""
    problems = []
    variables = {}
    for name, query in variable_queries(dashboard).items():
        series = influxql(stack, query)
        values = sorted({row[1] for s in series for row in s["values"]})
        if not values:
            problems.append(f"variable {name}: {query!r} returned nothing")
        variables[name] = values or ["none"]
    now_ms = int(time.time() * 1000) + 60_000
    for title, raw in panel_queries(dashboard) + annotation_queries(dashboard):
        query = expand(raw, variables, since_ms, now_ms, interval="2s")
        series = influxql(stack, query)
        if not any(v is not None for s in series for row in s["values"] for v in row[1:]):
            problems.append(f"panel {title!r}: no data for {query!r}")
    return problems


@pytest.fixture(scope="module")
def capacity_steps(stack, live_run) -> list[dict]:
    """The live run (500 rec/s) measured as a capacity step twice, as `run_ladder` measures and writes
    it: repetition 1 as a step that held, repetition 2 under a p99 threshold it cannot meet. Its 4 s
    of input give the shared session's slow first batches too few lag samples for the ladder's rule
    (tests/bench/test_capacity.py decides steps), so repetition 1 is marked held here: this test is
    about the panels' queries."""
    from bench.capacity.decision import TOO_FEW_LAG_SAMPLES, Thresholds
    from bench.capacity.ladder import measure_step, step_point
    from bench.observer.influx import write_points

    run_dir = Path(live_run["results"])
    held = measure_step(run_dir, 500.0, 0.0, Thresholds(max_p99_ms=600_000, max_lag_growth=10.0))
    assert held["holds"] or held["why"] == TOO_FEW_LAG_SAMPLES, held["why"]
    steps = [{**held, "holds": True, "why": "holds"}, measure_step(run_dir, 500.0, 0.0, Thresholds(max_p99_ms=0.001))]
    assert not steps[1]["holds"] and steps[1]["why"].startswith("p99"), steps[1]["why"]
    assert steps[0]["batch_p50_ms"] > 0  # the median batch that read records (triggerExecution, ms)
    points = [step_point(s, "DYNAMIC_KEY", 1.0, rep, "NYC_FLIGHTS", "e2e-capacity") for rep, s in enumerate(steps)]
    assert write_points(stack.influx_url, stack.influx_database, points) == 2
    return steps


def test_every_panel_and_variable_query_returns_data(stack, stream_runs, live_run, capacity_steps, stw_run):
    since_ms = int(time.time() * 1000) - 3_600_000
    assert check_dashboard(stack, load_dashboard(), since_ms) == []


def test_a_wrong_field_name_is_caught(stack, stream_runs, live_run, capacity_steps, stw_run):
    broken = copy.deepcopy(load_dashboard())
    target = broken["panels"][0]["targets"][0]
    target["query"] = target["query"].replace('"std_dev"', '"std_deviation"')
    problems = check_dashboard(stack, broken, int(time.time() * 1000) - 3_600_000)
    assert len(problems) == 1 and "std_deviation" in problems[0]


def test_a_multi_value_selection_narrows_to_the_chosen_runs(stack, stream_runs):
    dashboard = load_dashboard()
    run_ids = sorted(summary["results"].rsplit("/", 1)[1] for summary in stream_runs.values())[:2]
    title, raw = panel_queries(dashboard)[0]
    variables = {"run_id": run_ids, "grouping": sorted(stream_runs),
                 "dataset": ["NYC_FLIGHTS"]}
    series = influxql(stack, expand(raw, variables, int(time.time() * 1000) - 3_600_000,
                                    int(time.time() * 1000) + 60_000, "2s"))
    assert sorted({s["tags"]["run_id"] for s in series}) == run_ids, title


def test_capacity_panels_show_the_held_rate_and_every_step(stack, live_run, capacity_steps):
    dashboard = load_dashboard()
    queries = dict(panel_queries(dashboard))
    variables = {"run_id": [live_run["results"].rsplit("/", 1)[1]], "grouping": ["DYNAMIC_KEY"],
                 "dataset": ["NYC_FLIGHTS"]}
    now_ms = int(time.time() * 1000)

    def run(title_start: str) -> list[dict]:
        raw = next(q for t, q in queries.items() if t.startswith(title_start))
        return influxql(stack, expand(raw, variables, now_ms - 3_600_000, now_ms + 60_000, "2s"))

    held = run("Capacity: highest input rate held")
    assert [(s["tags"], s["values"][0][1]) for s in held] == [
        ({"cost_ms": "1", "grouping": "DYNAMIC_KEY", "system": "microbatch"}, 500.0)]
    steps = run("Capacity steps")
    rows = {s["tags"]["repetition"]: dict(zip(s["columns"], s["values"][0])) for s in steps}
    assert sorted(rows) == ["1", "2"]
    assert rows["1"]["held"] is True and rows["2"]["held"] is False
    assert rows["2"]["why"].startswith("p99 ") and rows["1"]["p99_ms"] == pytest.approx(capacity_steps[0]["p99_ms"])
    assert rows["1"]["rate"] == 500.0 and rows["1"]["p99_ms"] > rows["1"]["p50_ms"] > 0


def test_rescaling_row_shows_the_rescale_run_s_event_as_annotation_table_and_stats(stack, stw_run):
    dashboard = load_dashboard()
    (event,) = stw_run["rescale"]["events"]
    run_id = Path(stw_run["results"]).name
    variables = {"run_id": [run_id], "grouping": ["VNODE"], "dataset": ["NYC_FLIGHTS"]}
    now_ms = int(time.time() * 1000)

    def run(raw: str) -> list[dict]:
        return influxql(stack, expand(raw, variables, now_ms - 3_600_000, now_ms + 60_000, "2s"))

    ((_, annotation),) = annotation_queries(dashboard)
    (series,) = run(annotation)
    (row,) = [dict(zip(series["columns"], v)) for v in series["values"]]
    assert row["time"] == event["stop_wall_ms"] and row["resumed_wall_ms"] == event["resumed_wall_ms"]
    assert (row["protocol"], row["routing"], row["run_id"]) == ("STOP_THE_WORLD", "VNODE", run_id)
    assert "4 -> 6 workers" in row["description"]
    queries = dict(panel_queries(dashboard))
    (events,) = run(next(q for t, q in queries.items() if t.startswith("Rescale events")))
    assert events["tags"] == {"run_id": run_id, "event": event["event"], "protocol": "STOP_THE_WORLD",
                              "routing": "VNODE"}
    (values,) = [dict(zip(events["columns"], v)) for v in events["values"]]
    assert values["pause_ms"] == event["pause_ms"] and values["moved_keys"] == event["moved_keys"]
    (pause,) = run(next(q for t, q in queries.items() if t.startswith("Rescale pause")))
    assert pause["values"][0][1] == event["pause_ms"]
    loads = run(next(q for t, q in queries.items() if t.startswith("Per-worker load across")))
    assert sorted(s["tags"]["worker"] for s in loads) == [str(w) for w in range(6)]  # the worker-id space
    added = [v[1] for s in loads if s["tags"]["worker"] in ("4", "5") for v in s["values"]]
    if any(b["batch_id"] >= event["switch_batch"] for b in data_batches(stw_run)):  # routed the new way
        assert max(added) > 0  # the workers added by the rescale took load after it
    else:
        assert max(added) == 0
