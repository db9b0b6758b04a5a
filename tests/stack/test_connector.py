"""Spark's Kafka connector as `bench.stack.connector` provides it (the official artifact at pyspark's
version, or the one built from the official sources): a run records which ran, the session loads it,
and it reads and writes Kafka in both execution modes, a micro-batch query and a Real-Time Mode one."""

from __future__ import annotations

import json
import tempfile
import time

import pytest
from pyspark.sql import functions as F

from bench.results.environment import versions
from bench.run.input import ensure_topics
from bench.stack import connector
from bench.stack.artifacts import artifact_id, pyspark_version
from bench.topology.sink import KafkaWriter, read_aggregates

pytestmark = [pytest.mark.integration, pytest.mark.spark]


def test_the_connector_is_for_the_installed_spark_and_a_run_records_it(spark):
    installed = connector.cached()
    assert installed is not None and installed.version == pyspark_version() == spark.version
    assert installed.origin in ("official", "built")
    if installed.origin == "built":
        assert installed.built_from.endswith(":sources") and installed.compiler.startswith("scala-compiler-")
    assert sum(artifact_id(jar) == "spark-sql-kafka-0-10_2.13" for jar in installed.jars) == 1
    assert connector.cached_record() == installed.record() == versions(connector.cached_record())["kafka_connector"]
    loaded = spark.sparkContext.getConf().get("spark.jars")
    assert all(str(jar) in loaded for jar in installed.jars)


def copy_query(spark, stack, source: str, target: str):
    """A query that reads `source` with Spark's Kafka source and writes each record to `target` with
    Spark's Kafka sink."""
    return (spark.readStream.format("kafka").option("kafka.bootstrap.servers", stack.bootstrap_servers)
            .option("subscribe", source).option("startingOffsets", "earliest").load()
            .select("key", "value")
            .writeStream.format("kafka").option("kafka.bootstrap.servers", stack.bootstrap_servers)
            .option("topic", target).option("checkpointLocation", tempfile.mkdtemp(prefix="connector-")))


@pytest.mark.parametrize("mode", ["microbatch", "realtime"])
def test_the_connector_reads_and_writes_kafka_in_both_modes(spark, stack, mode):
    source, target = f"connector.in.{mode}.{time.time_ns()}", f"connector.out.{mode}.{time.time_ns()}"
    ensure_topics(stack.bootstrap_servers, {source: 1, target: 1})  # one partition: one real-time task
    writer = KafkaWriter(stack.bootstrap_servers)
    writer.send(source, [(f"k{i}".encode(), json.dumps({"key": f"k{i}", "i": i}).encode()) for i in range(50)])
    writer.close()
    query = copy_query(spark, stack, source, target)
    query = (query.trigger(availableNow=True) if mode == "microbatch" else
             query.outputMode("update").trigger(realTime="5 seconds")).start()
    try:
        deadline = time.monotonic() + 120
        copied: dict = {}
        while len(copied) < 50 and time.monotonic() < deadline and query.exception() is None:
            time.sleep(1)
            copied = read_aggregates(stack.bootstrap_servers, target, timeout_s=10)
        assert query.exception() is None, query.exception()
    finally:
        query.stop()
    assert {k: v["i"] for k, v in copied.items()} == {f"k{i}": i for i in range(50)}
