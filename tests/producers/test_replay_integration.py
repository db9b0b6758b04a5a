"""The producer against the real broker started by the project's stack (tests/conftest.py)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path

import pytest

from datasets import get_dataset
from producers import MissingEventTime, Schedule, TopicMismatch, replay
from tests.datasets.fixtures import write_fixture_files

pytestmark = pytest.mark.integration
ROOT = Path(__file__).resolve().parents[2]


def read_topic(bootstrap: str, topic: str, timeout_s: float = 60.0) -> dict[int, list]:
    """Every record of every partition, in offset order: {partition: [(value, timestamp, headers)]}."""
    from confluent_kafka import Consumer, TopicPartition

    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"t-{topic}", "enable.auto.commit": False})
    try:
        md = c.list_topics(topic, timeout=timeout_s)
        out = {}
        for p in sorted(md.topics[topic].partitions):
            lo, hi = c.get_watermark_offsets(TopicPartition(topic, p), timeout=timeout_s)
            rows = []
            if hi > lo:
                c.assign([TopicPartition(topic, p, lo)])
                deadline = time.monotonic() + timeout_s
                while len(rows) < hi - lo and time.monotonic() < deadline:
                    for m in c.consume(10_000, timeout=1.0):
                        assert m.error() is None, m.error()
                        rows.append((m.value(), m.timestamp()[1], dict(m.headers() or [])))
            out[p] = rows
        return out
    finally:
        c.close()


def test_roundtrip_100k_real_records(stack):
    bs = stack.bootstrap_servers
    ds = get_dataset("NYC_FLIGHTS")
    n, P = 100_000, 10
    s = replay(ds, "nyc-roundtrip", bs, partitions=P, limit=n, progress=False)
    assert s.ok and s.records == s.delivered == n and s.failed == 0 and s.per_partition == [10_000] * P
    sent = list(ds.records(n))
    got = read_topic(bs, "nyc-roundtrip")
    # per-partition order is exact: partition p holds records p, p+P, p+2P ... in order
    for p in range(P):
        assert [v for v, _, _ in got[p]] == [r.value for r in sent[p::P]], p
        assert [int(h["event_ms"]) for _, _, h in got[p]] == [r.event_ms for r in sent[p::P]]
    # the multiset of keys is exact
    keys = Counter(ds.extract(v.decode())[0][0] for rows in got.values() for v, _, _ in rows)
    assert keys == Counter(ds.extract(r.value.decode())[0][0] for r in sent)
    assert s.key_distribution["records"] == n and s.key_distribution["distinct_keys"] == len(keys)
    # Kafka timestamps are the intended (= hand-over) times, within the run
    ts = [t for rows in got.values() for _, t, _ in rows]
    assert s.start_ms - 1 <= min(ts) and max(ts) <= s.start_ms + 1000 * (s.duration_s + 1)
    assert s.bytes == sum(len(r.value) for r in sent)


def test_paced_rate_and_lag(stack):
    rate, n = 5_000, 10_000
    s = replay(get_dataset("COUNTRY_SKEW_R80", length=n), "paced", stack.bootstrap_servers, partitions=4, rate=rate, progress=False)
    assert s.ok
    assert abs(s.records_per_s / rate - 1) < 0.05, s.records_per_s
    assert s.lag["samples"] == n and s.lag["p50_ms"] < 20
    got = read_topic(stack.bootstrap_servers, "paced")
    first = sorted(t for rows in got.values() for _, t, _ in rows)
    # record i stamped start + i/rate s, whatever its actual hand-over time
    assert first[0] == s.start_ms and first[-1] == s.start_ms + (n - 1) * 1000 // rate


def test_a_replay_shared_by_processes_fills_the_topic_as_one_process_does(stack):
    """Three producer processes over four partitions, paced: every partition holds its records in
    order, each stamped with the intended time one process would give it; the summary adds the
    processes up (producers.sharded)."""
    bs, topic, n, P, rate = stack.bootstrap_servers, "sharded", 6_000, 4, 3_000
    start = int(time.time() * 1000) + 5_000
    s = replay(get_dataset("NYC_FLIGHTS"), topic, bs, partitions=P, rate=rate, limit=n, start_ms=start,
               progress=False, processes=3)
    assert s.ok and s.processes == 3 and s.records == s.delivered == n and s.per_partition == [n // P] * P
    assert s.start_ms == start and s.lag["samples"] == n and s.key_distribution["records"] == n
    sent, got, schedule = list(get_dataset("NYC_FLIGHTS").records(n)), read_topic(bs, topic), Schedule(rate=rate)
    for q in range(P):
        assert [v for v, _, _ in got[q]] == [r.value for r in sent[q::P]], q
        assert [t for _, t, _ in got[q]] == [start + schedule.offset_ns(i, None) // 1_000_000
                                             for i in range(q, n, P)], q


def test_speed_follows_event_time(stack):
    # golden stream: 200 records per virtual second; x10 -> 2,000 records/s
    ds = get_dataset("GOLDEN_SKEW", length=4_000)
    start = int(time.time() * 1000) + 500
    s = replay(ds, "speed", stack.bootstrap_servers, partitions=1, speed=10, start_ms=start, progress=False)
    assert s.ok and s.start_ms == start
    assert 1.8 < s.duration_s < 2.6
    (rows,) = read_topic(stack.bootstrap_servers, "speed").values()
    recs = list(ds.records())
    assert [t for _, t, _ in rows] == [start + (r.event_ms - 1_000_000) // 10 for r in recs]


def test_speed_needs_event_times(stack):
    with pytest.raises(MissingEventTime):
        replay(get_dataset("COUNTRY_SKEW_R80", length=10), "nospeed", stack.bootstrap_servers, speed=2, progress=False)


def test_topic_with_other_partition_count(stack):
    replay(get_dataset("GOLDEN_SKEW", length=10), "three", stack.bootstrap_servers, partitions=3, progress=False)
    with pytest.raises(TopicMismatch, match="3 partitions"):
        replay(get_dataset("GOLDEN_SKEW", length=10), "three", stack.bootstrap_servers, partitions=10, progress=False)


def test_malformed_lines_are_reported(stack, tmp_path):
    files = write_fixture_files(tmp_path)
    ds = get_dataset("WIKIPEDIA_CLICKSTREAM", path=files["WIKIPEDIA_CLICKSTREAM"])
    s = replay(ds, "clicks", stack.bootstrap_servers, partitions=2, progress=False)
    assert s.ok and s.records == 4
    assert s.malformed["count"] == 3 and [e["line"] for e in s.malformed["first"]] == [5, 6, 7]
    assert s.skipped == {"header": 1}
    assert s.key_distribution["weighted"]["top1_share"] == pytest.approx(105 / 128)


def test_undelivered_records_fail_the_run(stack):
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": stack.bootstrap_servers})
    fut = admin.create_topics([NewTopic("tiny", 2, 1, config={"max.message.bytes": "300"})])["tiny"]
    fut.result(30)
    s = replay(get_dataset("TRUMP_TWEETS"), "tiny", stack.bootstrap_servers, partitions=2, limit=200, progress=False)
    assert s.failed > 0 and not s.ok and s.delivered == s.records - s.failed
    assert any("too large" in e.lower() or "size" in e.lower() for e in s.errors), s.errors
    p = subprocess.run(
        [sys.executable, "-m", "producers", "TRUMP_TWEETS", "-t", "tiny", "-P", "2", "-b", stack.bootstrap_servers,
         "--limit", "50", "--no-progress"],
        cwd=ROOT, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert p.returncode == 1, p.stderr
    assert json.loads(p.stdout)["ok"] is False


def test_a_broker_paused_longer_than_the_delivery_timeout_leaves_no_gap(stack):
    """The broker answers nothing (SIGSTOP) for 3 s in the middle of a paced replay whose delivery
    timeout is 0.5 s: no record expires, so every partition holds exactly its records, in order.
    A record that expired would leave a gap that a resume cannot see (docs/faults.md, the seed-63
    nemesis)."""
    from bench.stack import Stack

    kafka = next(s for s in Stack(stack).status() if s.name == "kafka")
    bs, topic, n, P = stack.bootstrap_servers, "paused-broker", 4_000, 4

    def pause() -> None:
        time.sleep(0.5)
        os.kill(kafka.pid, signal.SIGSTOP)
        try:
            time.sleep(3.0)
        finally:
            os.kill(kafka.pid, signal.SIGCONT)

    pauser = threading.Thread(target=pause)
    pauser.start()
    try:
        s = replay(get_dataset("NYC_FLIGHTS"), topic, bs, partitions=P, limit=n, rate=1_000, progress=False,
                   key_stats=False, delivery_timeout_s=0.5)
    finally:
        pauser.join()
    assert s.ok and s.failed == 0 and s.delivered == n, s.errors
    sent = list(get_dataset("NYC_FLIGHTS").records(n))
    got = read_topic(bs, topic)
    for q in range(P):
        assert [v for v, _, _ in got[q]] == [r.value for r in sent[q::P]], q


def test_ctrl_c_flushes_and_reports(stack, tmp_path):
    out = tmp_path / "summary.json"
    proc = subprocess.Popen(
        [sys.executable, "-m", "producers", "COUNTRY_SKEW_R80", "-t", "ctrlc", "-b", stack.bootstrap_servers,
         "--rate", "2000", "--summary", str(out), "--no-progress"],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    time.sleep(6)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err
    s = json.loads(out.read_text())
    assert s["interrupted"] is True and s["ok"] is False
    assert 0 < s["delivered"] == s["records"] < 10_000_000
    got = read_topic(stack.bootstrap_servers, "ctrlc")
    assert sum(len(rows) for rows in got.values()) == s["delivered"]
    assert "INTERRUPTED" in err
    assert s["key_distribution"]["records"] == s["records"]


def test_make_style_cli_roundtrip(stack, tmp_path):
    out = tmp_path / "s.json"
    env = {**os.environ, "BENCH_KAFKA_BOOTSTRAP": stack.bootstrap_servers}
    p = subprocess.run(
        [sys.executable, "-m", "producers", "ZIPF", "--topic", "zipf", "-p", "length=20000", "-p", "s=1.2",
         "--summary", str(out)],
        cwd=ROOT, capture_output=True, text=True, timeout=300, env=env,
    )  # fmt: skip
    assert p.returncode == 0, p.stderr
    s = json.loads(out.read_text())
    assert s["ok"] and s["records"] == 20_000 and s["fingerprint"]["s"] == 1.2
    assert 1.0 < s["key_distribution"]["zipf_exponent"] < 1.4


def test_a_killed_replay_resumes_without_gap_or_duplicate(stack):
    """SIGKILL the producer process mid-way, then `--resume`: every partition holds exactly its
    records, in order, each stamped with the first attempt's intended time."""
    from producers import ReplayMismatch, inspect_topic

    bs, topic, n, P, rate = stack.bootstrap_servers, "killed-replay", 12_000, 4, 3000
    cmd = [sys.executable, "-m", "producers", "NYC_FLIGHTS", "-t", topic, "-P", str(P), "-b", bs,
           "--limit", str(n), "--rate", str(rate), "--no-progress", "--no-key-stats"]
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:  # kill once a good part is in the topic
        state = inspect_topic(bs, topic, n, P)
        if state.present >= n // 4:
            break
        time.sleep(0.2)
    proc.kill()
    proc.wait(30)
    before = inspect_topic(bs, topic, n, P)
    assert before.state == "prefix", before.describe()

    p = subprocess.run(cmd + ["--resume"], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    s = json.loads(p.stdout)
    assert s["already_present"] == before.present and s["records"] == n - before.present
    assert s["resumed_from"] == list(before.ends) and "resumed:" in p.stderr

    sent = list(get_dataset("NYC_FLIGHTS").records(n))
    got = read_topic(bs, topic)
    start = got[0][0][1]  # record 0's timestamp: the schedule start
    schedule = Schedule(rate=rate)
    for q in range(P):
        assert [v for v, _, _ in got[q]] == [r.value for r in sent[q::P]], q
        assert [t for _, t, _ in got[q]] == [start + schedule.offset_ns(i, None) // 1_000_000
                                             for i in range(q, n, P)], q
    assert inspect_topic(bs, topic, n, P).state == "complete"
    # a complete topic: nothing sent again; more records than the replay: a clear error
    again = replay(get_dataset("NYC_FLIGHTS"), topic, bs, partitions=P, limit=n, rate=rate, resume=True,
                   progress=False, key_stats=False)
    assert again.ok and again.records == 0 and again.already_present == n
    with pytest.raises(ReplayMismatch, match=r"holds 12,000 of the replay's 11,000 records"):
        replay(get_dataset("NYC_FLIGHTS"), topic, bs, partitions=P, limit=11_000, resume=True, progress=False)
