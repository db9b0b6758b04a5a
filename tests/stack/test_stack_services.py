"""The real stack: Kafka and InfluxDB started by the project's own code, used with the real clients."""

from __future__ import annotations

import collections
import time
import uuid

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient, NewTopic
from influxdb_client import InfluxDBClient, Point, WritePrecision
from influxdb_client.client.write_api import SYNCHRONOUS

from bench.stack.influxdb import InfluxService

pytestmark = pytest.mark.integration


def test_kafka_round_trip_of_10000_messages_on_4_partitions(stack):
    topic = f"roundtrip-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": stack.bootstrap_servers})
    admin.create_topics([NewTopic(topic, num_partitions=4, replication_factor=1)])[topic].result(timeout=30)
    assert len(admin.list_topics(topic, timeout=10).topics[topic].partitions) == 4

    payloads = [f"record-{i % 997}-{i}".encode() for i in range(10_000)]
    payloads += [b"duplicate"] * 17  # a multiset, not a set: duplicates must survive too
    producer = Producer({"bootstrap.servers": stack.bootstrap_servers, "enable.idempotence": True})
    failures = []
    for i, payload in enumerate(payloads):
        producer.produce(topic, payload, partition=i % 4, on_delivery=lambda err, _m: err and failures.append(err))
        producer.poll(0)
    assert producer.flush(30) == 0
    assert failures == []

    consumer = Consumer({
        "bootstrap.servers": stack.bootstrap_servers, "group.id": topic,
        "auto.offset.reset": "earliest", "enable.auto.commit": False,
    })
    consumer.subscribe([topic])
    received = []
    deadline = time.monotonic() + 60
    while len(received) < len(payloads) and time.monotonic() < deadline:
        for msg in consumer.consume(num_messages=1000, timeout=1):
            assert msg.error() is None, msg.error()
            received.append(msg.value())
    consumer.close()
    assert collections.Counter(received) == collections.Counter(payloads)


def test_influxdb_round_trip_of_1000_points(stack):
    measurement = f"roundtrip_{uuid.uuid4().hex[:8]}"
    base_ns = 1_700_000_000_000_000_000
    with InfluxDBClient(url=stack.influx_url, token="", org="-") as client:
        write = client.write_api(write_options=SYNCHRONOUS)
        points = [
            Point(measurement).tag("worker", str(i % 10)).field("load", i * 0.5).field("tuples", i)
            .time(base_ns + i * 1_000_000, WritePrecision.NS)
            for i in range(1000)
        ]
        write.write(bucket=stack.influx_bucket, record=points)

    body = InfluxService(stack).query(
        f'SELECT "load", "tuples", "worker" FROM "{measurement}"', database=stack.influx_database
    )
    rows = body["results"][0]["series"][0]["values"]
    assert len(rows) == 1000
    assert sorted((r[1], r[2], r[3]) for r in rows) == sorted((i * 0.5, i, str(i % 10)) for i in range(1000))
