"""Real-time mode: the tuple's path in Spark's Real-Time Mode, the aggregator in a micro-batch query
over its output (docs/topology.md, "Two execution modes").

    real-time query    spout -> splitter -> JVM grouping stage -> workers (-> worker state, with
                       `--worker-state` or a rescale: `bench.topology.worker_state`, and
                       a rescale's state transfers) -> worker windows,
                       `trigger(realTime=...)`, update mode, Kafka sink `<run>.partials`: each tuple
                       updates its worker window's partial, and the update is written at once
    aggregator query   micro-batch over `<run>.partials`, `foreachBatch` ->
                       `bench.topology.realtime_aggregator.RealtimeAggregator` (the latest partial
                       per (window, worker, key), the aggregator windows, the observer's figures,
                       `<run>.aggregates`)

Why two queries: Real-Time Mode has update mode only and refuses to chain the worker windows with
the aggregator windows at start ("Detected pattern of possible 'correctness' issue due to global
watermark", PySpark 4.3.0); its sinks are Kafka, `foreach`, console and memory, not `foreachBatch`;
and its observed metrics arrive at the end of a real-time batch, minutes apart. Storm's worker
bolts likewise emit their partials to the aggregator bolts.

Exactly-once totals from an at-least-once sink: Spark's Kafka sink writes at least once (a real-time
batch interrupted by a failure runs again from its checkpoint and writes its updates again). Every
update carries its partial's running values, so the latest partial per (window, worker, key), the
update with the most tuples, is the same whatever was written twice. Real-Time Mode emits one
update per tuple (measured: 30,000 updates for 30,000 tuples, each adding one), and each update
carries the moment its newest tuple was done and that tuple's Kafka timestamp: the aggregator takes
each tuple's processing latency once, from the first update that carries it.

Routing is replayed exactly because each splitter instance reads one Kafka partition in offset
order (P <= S, checked before the run) and the grouping clock is the Kafka timestamps': a real-time
batch run again routes every tuple as the first time did (`bench.run.preflight`).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from bench.topology import jvm_stage, spout, splitter, state_transfer, worker, worker_state
from bench.topology.config import TopologyConfig
from bench.topology.realtime_aggregator import END_OF_INPUT, GENERATION_START, RealtimeAggregator
from bench.topology.session import session_settings
from bench.topology.sink import AggregateSink, KafkaWriter

PARTIAL_SCHEMA = T.StructType([
    T.StructField("wstart_ms", T.LongType()),
    T.StructField("worker", T.IntegerType()),
    T.StructField("key", T.StringType()),
    T.StructField("count", T.LongType()),
    T.StructField("tuples", T.LongType()),
    T.StructField("first_ms", T.LongType()),
    T.StructField("last_ms", T.LongType()),
    T.StructField("ts_sum_ms", T.LongType()),
    T.StructField("done_us", T.LongType()),
    T.StructField("event_ms", T.LongType()),
    T.StructField("generation", T.IntegerType()),
])
"""An update of `<run>.partials` (JSON): its worker window (start, epoch ms), worker and key, the
partial's running values (`bench.topology.worker.PARTIAL_AGGREGATES`, times in epoch ms), its
newest tuple: when the worker was done with it (epoch µs) and its Kafka timestamp (epoch ms), and the
routing's generation that wrote it (the STOP_THE_WORLD events before the query's start:
`bench.topology.realtime_aggregator`, "Rescales")."""


CONTROL_FIELDS = (
    T.StructField(END_OF_INPUT, T.BooleanType()),
    T.StructField(GENERATION_START, T.IntegerType()),
    T.StructField("watermark_ms", T.LongType()),
)
"""The fields of the driver's records on `<run>.partials`: the end-of-input record (`end_of_input`
true) and a rescale's generation-start record (`bench.topology.realtime_aggregator`)."""


SINK_LINGER_MS = 20
"""`linger.ms` of the real-time query's Kafka sink, ms (kafka-clients' default: 0, a request per update)."""


def query_names(config: TopologyConfig) -> tuple[str, str]:
    """The names of the run's two queries: (real-time, aggregator)."""
    return f"{config.run_id}-realtime", f"{config.run_id}-aggregator"


def worker_windows(spark: SparkSession, config: TopologyConfig, splitter_sql) -> DataFrame:
    """The real-time query's DataFrame (no sink): every update of a worker window's partial, with
    PARTIAL_SCHEMA's columns."""
    # without a rescale the grouping stage runs with no time mode (GroupingStage.apply): the query's one
    # watermark is defined after it, not on the source
    watermark_after_stage = not config.transfers
    source = spout.read_kafka(spark, config, watermark=not watermark_after_stage)
    tuples = splitter.split(source, config, splitter_sql)
    rescale = jvm_stage.rescale_spec(config.rescale_routings, config.switches, config.worker_space,
                                     handoff=config.rescale_protocol == "HANDOFF",
                                     channel=config.rescale_channel_dir if config.live_rescale else None)
    transfers = None
    if config.transfers:
        transfers = state_transfer.read_controls(spark, config.bootstrap_servers, config.run_id,
                                                 jvm_stage.control_schema(spark), jvm_stage.control_column(spark),
                                                 spout.REALTIME_CONSUMER_OPTIONS)
    routed = jvm_stage.apply_grouping(tuples, config.grouping, config.workers, config.grouping_clock,
                                      config.grouping_params, rescale, transfers, real_time=True)
    if watermark_after_stage:
        routed = routed.withWatermark("event_ts", config.watermark_delay)
    # the routing summary's column carries the state-transfer records here (GroupingStage.OUTPUT)
    routed = routed.withColumnRenamed(jvm_stage.routed_column(spark), state_transfer.TRANSFER_COLUMN)
    worked = worker.placed_and_worked(routed, config.worker_space, config.cost_ms, config.cost_every)
    if config.worker_state:
        worked = worker_state.keep_state(worked, config.worker_space, config.partitions)
    partials = worker.window_partials(
        worked, config.worker_window_s,
        done_us=F.max(worker.DONE_COLUMN),
        event_ms=F.max_by(F.unix_millis("event_ts"), worker.DONE_COLUMN))
    return partials.select(
        F.unix_millis(F.col("wwin.start")).alias("wstart_ms"), "worker", "key", "count", "tuples",
        F.unix_millis("first_ts").alias("first_ms"), F.unix_millis("last_ts").alias("last_ms"), "ts_sum_ms",
        "done_us", "event_ms", F.lit(len(config.switches)).alias("generation"))


REALTIME_RETENTION = {
    "spark.sql.streaming.minBatchesToRetain": "2",
    "spark.sql.streaming.stateStore.minDeltasForSnapshot": "1",
}
"""The real-time query's checkpoint retention: its last 2 batches, with a state store snapshot at
each. Spark's defaults (100 batches, a snapshot every 10 versions) suit seconds-long micro-batches;
a real-time batch lasts minutes and its state stores' changelogs take every tuple's update (16 bytes
a tuple), so with them the checkpoint grew all run long: 6 -> 74 MiB over the 25 minutes of a
3,000,000-record soak at 2,000 records/s, 45 MiB of it the worker windows' changelogs (2026-11-29).
A query takes its session's settings when it starts (Spark clones the session for it), so these
hold for the real-time query alone; the aggregator's micro-batches keep Spark's defaults."""

LIVE_RESCALE_READ_S = 60
"""How long a committed batch of a live rescale run's real-time query stays readable at least (s).
The rescale driver reads the worker state at a committed batch while the query goes on (HANDOFF at
each round's hold batch, SHARED_STATE at its barrier batch, LEARNER at its warm-up batch), and Spark
deletes a batch's commit and state versions once `minBatchesToRetain` newer batches have committed.
With 2 batches of 5 s kept, under the test suite on 2 cores (a state read took 5.9 s there), a
HANDOFF round's read found its hold batch gone: `STDS_COMMITTED_BATCH_UNAVAILABLE` (a fresh-clone
`make test` of 1c4e4da, 2026-12-08)."""


def realtime_retention(config: TopologyConfig) -> dict[str, str]:
    """REALTIME_RETENTION, keeping the batches of the last LIVE_RESCALE_READ_S too in a live rescale
    run (`TopologyConfig.live_rescale`): 13 batches of 5 s, 2 of the default 300 s."""
    if not config.live_rescale:
        return REALTIME_RETENTION
    kept = math.ceil(LIVE_RESCALE_READ_S / config.realtime_batch_s) + 1  # >= 2: the batch read and the next
    return {**REALTIME_RETENTION, "spark.sql.streaming.minBatchesToRetain": str(kept)}


def start_realtime(spark: SparkSession, config: TopologyConfig, splitter_sql):
    """Start the real-time query (checkpoint `<checkpoint_dir>/realtime`, batches of
    `realtime_batch_s`, `realtime_retention`, N state partitions: a rescale run's N = max(A, M) is not
    the session's A). Raises pyspark's errors when Real-Time Mode refuses the query."""
    partials = worker_windows(spark, config, splitter_sql)
    with session_settings(spark, {**realtime_retention(config), "spark.sql.shuffle.partitions": str(config.partitions)}):
        return _start_realtime(partials, config)


def _start_realtime(partials: DataFrame, config: TopologyConfig):
    return (
        partials.select(F.to_json(F.struct(*partials.columns)).alias("value")).writeStream
        .queryName(query_names(config)[0])
        .format("kafka")
        .option("kafka.bootstrap.servers", config.bootstrap_servers)
        .option("topic", config.partials_topic)
        # The partials' producer sends every SINK_LINGER_MS instead of one request per update: the
        # aggregator reads them seconds apart, and a tuple's latency ends when its worker is done.
        .option("kafka.linger.ms", str(SINK_LINGER_MS))
        .option("checkpointLocation", str(config.state_checkpoint))
        .outputMode("update")
        .trigger(realTime=f"{config.realtime_batch_s} seconds")
        .start()
    )


def read_partials(spark: SparkSession, config: TopologyConfig) -> DataFrame:
    """The aggregator query's source: `<run>.partials` from its first offset, PARTIAL_SCHEMA's columns
    and CONTROL_FIELDS' (NULL on every update)."""
    value = F.col("value").cast("string")
    return (
        spark.readStream.format("kafka")
        .option("kafka.bootstrap.servers", config.bootstrap_servers)
        .option("subscribe", config.partials_topic)
        .option("startingOffsets", "earliest")
        .option("failOnDataLoss", "true")
        .options(**spout.CONSUMER_OPTIONS)
        .load()
        .select(F.from_json(value, T.StructType([*PARTIAL_SCHEMA.fields, *CONTROL_FIELDS])).alias("u"))
        .select("u.*")
    )


def start_aggregator(spark: SparkSession, config: TopologyConfig, sink, trigger_s: float) -> object:
    """Start the aggregator query (checkpoint `<checkpoint_dir>/aggregator`, a micro-batch every
    `trigger_s`) with `sink` as its `foreachBatch` (`RealtimeAggregator`)."""
    return (
        read_partials(spark, config).writeStream
        .queryName(query_names(config)[1])
        .option("checkpointLocation", str(config.checkpoint_dir / "aggregator"))
        .foreachBatch(sink)
        .trigger(processingTime=f"{trigger_s:g} seconds")
        .start()
    )



@dataclass
class RunningRealtime:
    """The run's two queries and the aggregator behind the second (`start`). A STOP_THE_WORLD stops
    and starts the real-time query alone (`stop_realtime`, `start_realtime`): the aggregator reads
    on."""

    realtime: object | None  # StreamingQuery; None while a rescale has it stopped
    aggregator_query: object  # StreamingQuery
    aggregator: RealtimeAggregator

    def start_realtime(self, spark: SparkSession, config: TopologyConfig, splitter_sql) -> None:
        self.realtime = start_realtime(spark, config, splitter_sql)

    def stop_realtime(self) -> None:
        if self.realtime is not None:
            try:
                self.realtime.stop()
            except Exception:  # a query that failed has stopped already
                pass
            self.realtime = None

    def stop(self) -> None:
        self.stop_realtime()
        try:
            self.aggregator_query.stop()
        except Exception:  # a query that failed has stopped already
            pass
        self.aggregator.sink.close()

    def exception(self):
        """The first query's failure, or None."""
        return (self.realtime.exception() if self.realtime is not None else None) or self.aggregator_query.exception()

    def send_generation_start(self, generation: int, watermark_ms: int) -> None:
        """A rescale's generation-start record on `<run>.partials` (`generation_start_record`).

        Raises: RuntimeError: Kafka did not acknowledge it."""
        writer = KafkaWriter(self.aggregator.config.bootstrap_servers)
        try:
            writer.send(self.aggregator.config.partials_topic,
                        [(b"generation-start", generation_start_record(generation, watermark_ms))])
        finally:
            writer.close()


def start(spark: SparkSession, config: TopologyConfig, splitter_sql, observer, trigger_s: float,
          with_realtime: bool = True) -> RunningRealtime:
    """Start the aggregator query (a micro-batch every `trigger_s`), then the real-time query (module
    text; not with `with_realtime` False: a driver resumed in the middle of a STOP_THE_WORLD starts it
    when the rescale is done). Raises pyspark's errors when Spark refuses either."""
    sink = AggregateSink(config.run_id, config.results_dir, config.bootstrap_servers, config.aggregates_topic,
                         observer)
    aggregator = RealtimeAggregator(config, observer, sink)
    aggregator_query = start_aggregator(spark, config, aggregator, trigger_s)
    running = RunningRealtime(None, aggregator_query, aggregator)
    if with_realtime:
        try:
            running.start_realtime(spark, config, splitter_sql)
        except Exception:
            aggregator_query.stop()
            sink.close()
            raise
    return running


def end_of_input_record() -> bytes:
    """The value of the driver's end-of-input record on `<run>.partials`."""
    return json.dumps({END_OF_INPUT: True}).encode()


def generation_start_record(generation: int, watermark_ms: int) -> bytes:
    """The value of a rescale's generation-start record on `<run>.partials`
    (`bench.topology.realtime_aggregator`, "Rescales")."""
    return json.dumps({GENERATION_START: generation, "watermark_ms": watermark_ms}).encode()
