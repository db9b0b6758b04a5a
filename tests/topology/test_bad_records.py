"""Every bad record is a dead letter, never a failed run (issue 27): a topic mixing valid records
with every kind of bad record, through the whole topology on the real stack (tests/conftest.py)."""

from __future__ import annotations

import base64
import json
import time
from collections import Counter

import pytest

from bench.run.stream import run_stream
from bench.run.preflight import RunError, prepare
from datasets.base import INVALID_UTF8, KEY_TOO_LONG, NULL_VALUE
from bench.results.batches import read_batches
from bench.topology.sink import DLQ_VALUE_MAX_CHARS, read_aggregates
from datasets import get_dataset
from producers import replay
from tests.conftest import E2E_DATASET, E2E_PARTITIONS, e2e_options

pytestmark = [pytest.mark.integration, pytest.mark.spark]

VALID = 1000
MAX_KEY = 64
BAD = [  # (value, reason)
    (b"not json", "invalid json"),
    (b"", "invalid json"),
    (None, NULL_VALUE),
    (b'{"origin":"JFK"}', "missing field 'dest'"),
    (b'{"origin":"JFK","dest":null}', "missing field 'dest'"),
    (b'{"origin":"JFK","dest":{"a":1}}', "field 'dest' is not a string"),
    (b'{"origin":"JFK","dest":[1]}', "field 'dest' is not a string"),
    (b'{"origin":"JFK","dest":7}', "field 'dest' is not a string"),
    (b'{"origin":"JFK","de', "invalid json"),
    (b"[1,2]", "invalid json"),
    (b"\xff\xfe\xfd", INVALID_UTF8),
    (b'{"origin":"JFK","dest":"L\xc3"}', INVALID_UTF8),  # truncated multi-byte character
    (b'{"origin":"JFK","dest":"\xed\xa0\x80"}', INVALID_UTF8),  # an encoded surrogate
    (b'{"origin":"JFK","dest":"' + b"A" * (MAX_KEY + 1) + b'"}', KEY_TOO_LONG),
    (b'{"origin":"JFK","dest":"' + "é".encode() * (MAX_KEY // 2 + 1) + b'"}', KEY_TOO_LONG),  # bytes, not characters
    (b'{"origin":"JFK","dest":"' + b"X" * 900_000 + b'"}', KEY_TOO_LONG),  # broke the output producer before
]
AT_THE_BOUND = b'{"origin":"JFK","dest":"' + b"B" * MAX_KEY + b'"}'  # a valid record: key of exactly the bound


def test_a_topic_of_every_bad_kind_completes_with_every_bad_record_a_dead_letter(stack, spark, tmp_path):
    from confluent_kafka import Producer

    topic = f"bad-records.{int(time.time())}"
    summary = replay(get_dataset(E2E_DATASET), topic, stack.bootstrap_servers, partitions=E2E_PARTITIONS,
                     limit=VALID, progress=False, key_stats=False)
    producer = Producer({"bootstrap.servers": stack.bootstrap_servers, "message.max.bytes": 2_000_000})
    for i, (value, _) in enumerate(BAD + [(AT_THE_BOUND, None)]):
        producer.produce(topic, value=value, partition=i % E2E_PARTITIONS, timestamp=summary.last_timestamp_ms)
    assert producer.flush(30) == 0

    run_id = f"bad-records-{int(time.time())}"
    s = run_stream(prepare(e2e_options(stack, tmp_path, topic, "KEY", run_id, max_key_bytes=MAX_KEY)),
                   spark=spark, log=lambda *_: None)
    assert s["status"] == "completed", s["error"]
    stats = get_dataset(E2E_DATASET).key_stats(VALID)
    assert s["exact"]["total_count"] == stats.weight + 1  # the record at the bound counts
    assert s["records"] == VALID + len(BAD) + 1 == s["exact"]["total_count"] + s["dead_letters"]
    assert s["dead_letters_by_reason"] == dict(Counter(reason for _, reason in BAD))
    aggregates = read_aggregates(stack.bootstrap_servers, f"{run_id}.aggregates")
    assert sum(v["count"] for v in aggregates.values()) == stats.weight + 1
    assert any(v["key"] == "B" * MAX_KEY for v in aggregates.values())

    letters = {(v["partition"], v["offset"]): v for v in read_aggregates(stack.bootstrap_servers, f"{run_id}.dlq").values()}
    assert len(letters) == len(BAD) == len(read_batches(tmp_path / run_id / "dlq"))
    by_bytes = {}
    for letter in letters.values():
        if letter["reason"] == INVALID_UTF8:
            assert letter["value"] is None
            by_bytes[base64.b64decode(letter["value_base64"])] = letter
    assert set(by_bytes) == {v for v, reason in BAD if reason == INVALID_UTF8}
    (huge,) = [v for v in letters.values() if v["value_bytes"] > 800_000]
    assert huge["value_truncated"] and len(huge["value"]) == DLQ_VALUE_MAX_CHARS and huge["reason"] == KEY_TOO_LONG
    assert json.loads(json.dumps(s))  # the summary stays JSON


def test_a_fresh_run_under_a_used_run_id_is_refused_before_spark(stack, tmp_path):
    """The control topic of `run_id` holds an earlier run's end of input and no checkpoint is there:
    the new run would drop its input as late data, so `prepare` refuses it and names the topic."""
    from bench.run.input import ensure_topics, send_end_of_input

    run_id = f"used-{int(time.time())}"
    options = e2e_options(stack, tmp_path, None, "KEY", run_id, limit=10)
    assert prepare(options).config.control_topic == f"{run_id}.control"  # fresh: accepted
    ensure_topics(stack.bootstrap_servers, {f"{run_id}.control": 1})
    send_end_of_input(stack.bootstrap_servers, f"{run_id}.control", 1_800_000_000_000)
    with pytest.raises(RunError, match=f"run id '{run_id}' was used before: its control topic '{run_id}.control' "
                                       "holds 1 record"):
        prepare(options)


def test_a_fresh_run_under_a_run_id_with_influx_points_is_refused_before_spark(stack, tmp_path):
    """InfluxDB holds an observer tick of `run_id` and the run has no record: the new run's ticks
    would mix with the old ones, so `prepare` refuses it and says how to delete them; once the run
    has a record (a resume), its points are its own and the run is accepted."""
    import urllib.request

    run_id = f"influx-used-{int(time.time())}"
    options = e2e_options(stack, tmp_path, None, "KEY", run_id, limit=10)
    prepare(options)  # fresh: accepted
    line = f"observer,run_id={run_id},grouping=KEY time_ms=1800000000000i,std_dev=1.5 1800000000000".encode()
    request = urllib.request.Request(f"{stack.influx_url}/write?db={stack.influx_database}&precision=ms", data=line)
    with urllib.request.urlopen(request, timeout=10) as response:
        assert response.status == 204
    with pytest.raises(RunError, match=f"run id '{run_id}' was used before: InfluxDB .* holds 1 observer tick.*"
                                       f"DROP SERIES WHERE run_id = '{run_id}'"):
        prepare(options)
    (tmp_path / run_id).mkdir()
    prepare(options)  # the run's own record: a resume
