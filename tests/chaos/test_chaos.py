"""Fault injection (issue 27, `make chaos`): kill the driver, the broker or InfluxDB at points of a
run, interrupt it with Ctrl-C, feed it every kind of bad record; then check exact totals from the
aggregates (`<run>.aggregates`), never from logs.

Every run is a real `python -m bench run` process (its own Spark driver, in its own process group)
against the session's stack (tests/conftest.py). The table of cases and results is docs/faults.md.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from pathlib import Path

import pandas as pd
import pytest

from bench.__main__ import main as bench_main
from bench.stack import Stack
from bench.topology.sink import read_aggregates
from datasets import get_dataset
from producers import inspect_topic, replay

pytestmark = [pytest.mark.integration, pytest.mark.spark]
ROOT = Path(__file__).resolve().parents[2]
P, W = 4, 4
FAST = ["--workers", str(W), "--splitters", str(P), "--aggregators", "2", "--cost-ms", "0",
        "--worker-window-s", "5", "--aggregator-window-s", "10", "--watermark-delay-s", "2",
        "--observer-tick-s", "2", "--trigger-s", "0.5", "--master", "local[2]", "--no-progress",
        "--timeout-s", "900"]


class Run:
    """One `python -m bench run` process; `kill(sig)` signals its whole process group (driver and JVM)."""

    def __init__(self, stack, results: Path, run_id: str, *extra: str, limit: int, rate: float):
        self.stack, self.results, self.run_id = stack, results, run_id
        self.argv = [sys.executable, "-m", "bench", "run", "--grouping", "KEY", "--dataset", "NYC_FLIGHTS",
                     "--limit", str(limit), "--rate", f"{rate:g}", "--run-id", run_id,
                     "--bootstrap-servers", stack.bootstrap_servers, "--influx-url", stack.influx_url,
                     "--influx-database", stack.influx_database, "--results-dir", str(results), *FAST, *extra]
        self.proc: subprocess.Popen | None = None
        self.output = ""

    def start(self) -> "Run":
        self.proc = subprocess.Popen(self.argv, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                     text=True, start_new_session=True)
        return self

    def kill(self, sig=signal.SIGKILL) -> None:
        os.killpg(self.proc.pid, sig)
        self.output += self.proc.communicate(timeout=300)[0]

    def wait(self, timeout_s: float = 900) -> int:
        self.output += self.proc.communicate(timeout=timeout_s)[0]
        return self.proc.returncode

    def complete(self) -> dict:
        """Start again with the same run id (a resume) and wait; the summary.json."""
        code = self.start().wait()
        summary = json.loads((self.results / self.run_id / "summary.json").read_text())
        assert code == 0 and summary["status"] == "completed", self.output[-3000:]
        return summary

    @property
    def commits(self) -> int:
        folder = self.results / self.run_id / "checkpoint" / "main" / "commits"
        return len(list(folder.glob("[0-9]*"))) if folder.exists() else 0


REPORT = Path(os.environ.get("BENCH_CHAOS_REPORT", ROOT / "results" / "chaos.md"))
"""Each case appends its figures here (a markdown table row), for the closing note and docs/faults.md."""


def report(case: str, summary: dict, extra: str = "") -> None:
    attempts = "; ".join(f"#{a['attempt']} {a.get('topic_state')}: {a.get('records_in_topic_before')} in topic, "
                         f"{a.get('records_replayed')} replayed, {a.get('status', 'killed')}"
                         for a in summary.get("attempts") or [])
    REPORT.parent.mkdir(parents=True, exist_ok=True)
    with REPORT.open("a") as f:
        f.write(f"| {time.strftime('%Y-%m-%d %H:%M', time.gmtime())} | {case} | {summary['status']} | "
                f"{summary['exact']['total_count']} | {summary['exact']['worker_loads']} | {summary['dead_letters']} | "
                f"{attempts} | {extra} |\n")


def wait_for(condition, timeout_s: float = 300, what: str = "") -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.2)


_SIMULATED: dict[int, list[int]] = {}


def simulated_loads(limit: int, tmp_path, monkeypatch) -> list[int]:
    """Worker loads of KEY on NYC_FLIGHTS[:limit] by the simulator (no Kafka, no Spark)."""
    if limit not in _SIMULATED:
        monkeypatch.setattr("bench.results.record.RESULTS_DIR", tmp_path)
        assert bench_main(["simulate", "--dataset", "NYC_FLIGHTS", "--grouping", "KEY", "--limit", str(limit),
                           "--workers", str(W), "--splitters", str(P), "--run-id", f"sim-{limit}",
                           "--no-progress"]) == 0
        _SIMULATED[limit] = json.loads((tmp_path / f"sim-{limit}" / "summary.json").read_text())["exact"]["worker_loads"]
    return _SIMULATED[limit]


def assert_exact(stack, summary: dict, limit: int, tmp_path, monkeypatch) -> None:
    """TOTAL COUNT equals the dataset's weight, from the aggregates topic, and every worker's load
    equals the simulator's."""
    weight = get_dataset("NYC_FLIGHTS").key_stats(limit).weight
    aggregates = read_aggregates(stack.bootstrap_servers, f"{summary['run_id']}.aggregates")
    assert sum(v["count"] for v in aggregates.values()) == weight
    assert summary["exact"]["total_count"] == weight
    assert summary["exact"]["worker_loads"] == simulated_loads(limit, tmp_path, monkeypatch)
    assert all(v is not False for v in summary["checks"].values()), summary["checks"]


def topic_of(run: Run) -> str:
    return json.loads((run.results / run.run_id / "run.json").read_text())["config"]["topic"]


LIMIT, RATE = 3000, 300.0


def test_driver_killed_during_the_replay_then_resumed(stack, tmp_path, monkeypatch):
    run = Run(stack, tmp_path, "chaos-replay", limit=LIMIT, rate=RATE).start()
    wait_for(lambda: (tmp_path / "chaos-replay" / "run.json").exists(), what="run.json")
    wait_for(lambda: inspect_topic(stack.bootstrap_servers, topic_of(run), LIMIT, P).present >= LIMIT // 3,
             what="a third of the replay")
    run.kill()
    before = inspect_topic(stack.bootstrap_servers, topic_of(run), LIMIT, P)
    assert before.state == "prefix", before.describe()
    summary = run.complete()
    assert "resuming the replay" in run.output
    last = summary["attempts"][-1]
    assert last["topic_state"] == "prefix" and last["records_replayed"] == LIMIT - last["records_in_topic_before"]
    assert_exact(stack, summary, LIMIT, tmp_path, monkeypatch)
    report("driver SIGKILL during the replay", summary, f"killed with {before.present} of {LIMIT} in the topic")


def test_driver_killed_during_processing_then_resumed(stack, tmp_path, monkeypatch):
    run = Run(stack, tmp_path, "chaos-processing", "--max-offsets-per-trigger", "200", limit=LIMIT, rate=RATE).start()
    wait_for(lambda: run.commits >= 3, what="three committed batches")
    run.kill()
    summary = run.complete()
    assert summary["resumed"]
    assert_exact(stack, summary, LIMIT, tmp_path, monkeypatch)
    report("driver SIGKILL during processing", summary, f"observer missed batches {summary['observer_missed_batches']}")


def test_ctrl_c_then_resumed(stack, tmp_path, monkeypatch):
    run = Run(stack, tmp_path, "chaos-sigint", "--max-offsets-per-trigger", "200", limit=LIMIT, rate=RATE).start()
    wait_for(lambda: run.commits >= 3, what="three committed batches")
    run.kill(signal.SIGINT)  # what a terminal sends to the foreground process group
    first_code = run.proc.returncode
    first = json.loads((tmp_path / "chaos-sigint" / "summary.json").read_text())
    # in the replay (3,000 records at 300 rec/s) or after it, the run is interrupted, not failed
    assert first_code != 0 and first["status"] == "interrupted", (first["status"], first.get("error"))
    summary = run.complete()
    assert_exact(stack, summary, LIMIT, tmp_path, monkeypatch)
    report("Ctrl-C then resume", summary, f"first attempt exit code {first_code}")


def service_killed_mid_run(stack, tmp_path, monkeypatch, run_id: str, limit: int, service: int):
    """Start a run, SIGKILL stack service `service` (0 Kafka, 1 InfluxDB) at a third of its replay,
    start it again 15 s later; the run must complete with exact totals. Returns (run, summary)."""
    run = Run(stack, tmp_path, run_id, limit=limit, rate=RATE).start()
    wait_for(lambda: (tmp_path / run_id / "run.json").exists(), what="run.json")
    wait_for(lambda: inspect_topic(stack.bootstrap_servers, topic_of(run), limit, P).present >= limit // 3,
             what="a third of the replay")
    os.kill(Stack(stack).services[service].process.running_pid(), signal.SIGKILL)
    time.sleep(15)
    Stack(stack).up(log=lambda _m: None)
    code = run.wait()
    summary = json.loads((tmp_path / run_id / "summary.json").read_text())
    assert code == 0 and summary["status"] == "completed", run.output[-3000:]
    assert_exact(stack, summary, limit, tmp_path, monkeypatch)
    return run, summary


def test_broker_killed_and_restarted_mid_run(stack, tmp_path, monkeypatch):
    limit = LIMIT + 1  # a topic of its own
    run, summary = service_killed_mid_run(stack, tmp_path, monkeypatch, "chaos-broker", limit, service=0)
    # the outage is two console lines, not librdkafka's every retry
    outage = [line for line in run.output.splitlines() if line.startswith("Kafka at ")]
    assert len(outage) == 2 and "unreachable, retrying" in outage[0] and "reachable again after" in outage[1], outage
    assert "Connection refused" not in run.output, run.output[-3000:]
    log_lines = len((tmp_path / "chaos-broker" / "logs" / "driver.log").read_text().splitlines())
    assert log_lines > 0
    report("broker SIGKILL + restart 15 s later", summary, f"console: {' / '.join(outage)}; {log_lines} lines in logs/driver.log")


def influx_points(stack, run_id: str) -> int:
    q = urllib.parse.urlencode({"db": stack.influx_database,
                                "q": f"SELECT count(time_ms) FROM observer WHERE run_id = '{run_id}'"})
    with urllib.request.urlopen(f"{stack.influx_url}/query?{q}", timeout=10) as r:
        series = json.load(r)["results"][0].get("series") or []
    return int(series[0]["values"][0][1]) if series else 0


def test_influxd_killed_and_restarted_mid_run(stack, tmp_path, monkeypatch):
    # 30 s of replay, so that influxd is back (a third in, plus 15 s, plus its start) before the run ends
    # and the run itself backfills: a 10 s replay's run ended 25 s after its start, with influxd still
    # down, once the worker stage ran in the JVM (2026-11-27), leaving the backfill to `bench influx`.
    run, summary = service_killed_mid_run(stack, tmp_path, monkeypatch, "chaos-influx", 3 * LIMIT + 2, service=1)
    assert summary["influx"]["failed_batches"] >= 1 and not summary["influx"]["pending_backfill"]
    rows = pd.read_parquet(tmp_path / "chaos-influx" / "metrics.parquet")
    points = influx_points(stack, "chaos-influx")
    assert points == len(rows)
    report("influxd SIGKILL + restart 15 s later", summary,
           f"{summary['influx']['failed_batches']} failed batches, {summary['influx']['backfilled_points']} points "
           f"backfilled; InfluxDB observer points {points} = metrics.parquet rows {len(rows)}")
    assert "Traceback" not in run.output and "HTTP response body" not in run.output, run.output[-3000:]


def test_a_topic_of_every_bad_kind(stack, tmp_path):
    from confluent_kafka import Producer

    from tests.topology.test_bad_records import AT_THE_BOUND, BAD, MAX_KEY

    valid = 2000
    topic = "chaos-bad-records"
    s = replay(get_dataset("NYC_FLIGHTS"), topic, stack.bootstrap_servers, partitions=P, limit=valid,
               progress=False, key_stats=False)
    producer = Producer({"bootstrap.servers": stack.bootstrap_servers, "message.max.bytes": 2_000_000})
    for i, (value, _) in enumerate(BAD + [(AT_THE_BOUND, None)]):
        producer.produce(topic, value=value, partition=i % P, timestamp=s.last_timestamp_ms)
    assert producer.flush(30) == 0
    run = Run(stack, tmp_path, "chaos-bad", "--topic", topic, "--no-replay", "--max-key-bytes", str(MAX_KEY),
              limit=valid, rate=RATE)
    summary = run.complete()
    in_topic = inspect_topic(stack.bootstrap_servers, topic, 0, P).present
    weight = get_dataset("NYC_FLIGHTS").key_stats(valid).weight
    aggregates = read_aggregates(stack.bootstrap_servers, "chaos-bad.aggregates")
    assert sum(v["count"] for v in aggregates.values()) == weight + 1 == summary["exact"]["total_count"]
    assert summary["exact"]["total_count"] + summary["dead_letters"] == in_topic == valid + len(BAD) + 1
    assert sum(summary["dead_letters_by_reason"].values()) == len(BAD)
    assert "dead letters (KEY): 16 in" in run.output and "key too long 3" in run.output
    report("every bad kind (2,000 valid + 16 bad + 1 at the bound)", summary,
           f"{in_topic} in topic = {summary['exact']['total_count']} counted + {summary['dead_letters']} dead; "
           f"{summary['dead_letters_by_reason']}")
