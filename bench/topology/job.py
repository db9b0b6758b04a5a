"""Assembles the topology into its Spark query and starts it.

One query: spout -> splitter -> grouping -> workers -> aggregator -> foreachBatch sink
(`<run>.aggregates`, run record, observer). Its one checkpoint holds the Kafka offsets, the
grouping instances and the window states: a restart with the same run id resumes exactly. The
splitter's malformed records are not on this path: `bench.topology.dead_letters` reads the few
batches that have some once more and writes them to `<run>.dlq`, so the aggregates stay the
query's single sink and the input topic is read once.
"""

from __future__ import annotations

from dataclasses import dataclass

from pyspark.sql import DataFrame, SparkSession

from bench.topology import (aggregator, grouping_stage, jvm_stage, rescale_channel, spout, splitter, state_transfer,
                            worker, worker_state)
from bench.topology.config import TopologyConfig
from bench.topology.sink import AggregateSink


def build_main(spark: SparkSession, config: TopologyConfig, splitter_sql) -> DataFrame:
    """The main query's DataFrame up to the aggregator (no sink): final totals per (window, key)."""
    raw = spout.read_kafka(spark, config)
    tuples = splitter.split(raw, config, splitter_sql)
    transfers = controls = None
    if config.transfers:
        transfers = state_transfer.read(spark, config.bootstrap_servers, config.run_id,
                                         worker_state.input_schema(spark))
    if config.live_rescale:
        channel = rescale_channel.read(spark, config.rescale_channel_dir)
        controls = rescale_channel.switch_rows(channel, config.splitters, jvm_stage.control_schema(spark),
                                               jvm_stage.control_column(spark))
        transfers = rescale_channel.transfer_rows(channel, worker_state.input_schema(spark),
                                                  state_transfer.TRANSFER_COLUMN)
    if config.data_plane == "jvm":
        rescale = jvm_stage.rescale_spec(config.rescale_routings, config.switches, config.worker_space,
                                         handoff=config.rescale_protocol == "HANDOFF")
        routed = jvm_stage.apply_grouping(tuples, config.grouping, config.workers, config.grouping_clock,
                                           config.grouping_params, rescale, controls)
    else:
        routed = grouping_stage.apply_grouping(tuples, config.grouping, config.workers, config.grouping_params,
                                               config.grouping_clock)
    partials = worker.work(routed, config.worker_space, config.cost_ms, config.cost_every, config.worker_window_s,
                           config.partitions if config.worker_state else None, transfers)
    return aggregator.aggregate(partials, config.aggregator_window_s)


@dataclass
class RunningTopology:
    main: object  # StreamingQuery
    sink: AggregateSink

    def stop(self) -> None:
        try:
            self.main.stop()
        except Exception:
            pass
        self.sink.close()

    def exception(self):
        return self.main.exception()


def main_query_name(config: TopologyConfig) -> str:
    return f"{config.run_id}-main"


def start(spark: SparkSession, config: TopologyConfig, splitter_sql, observer=None, once: bool = False) -> RunningTopology:
    """Start the query (checkpoint `config.checkpoint_dir / "main"`); `once`: one trigger, then stop
    (STOP_THE_WORLD finishes a batch its stop interrupted this way)."""
    # Fixed per checkpoint at its first batch (a restart keeps the stored value): N partitions,
    # A unless a rescale run sizes them for its max parallelism.
    spark.conf.set("spark.sql.shuffle.partitions", str(config.partitions))
    sink = AggregateSink(config.run_id, config.results_dir, config.bootstrap_servers, config.aggregates_topic,
                         observer)
    writer = (
        build_main(spark, config, splitter_sql).writeStream
        .queryName(main_query_name(config))
        .outputMode("append")
        .option("checkpointLocation", str(config.checkpoint_dir / "main"))
        .foreachBatch(sink)
    )
    main = (writer.trigger(once=True) if once else writer.trigger(processingTime=f"{config.trigger_s} seconds")).start()
    return RunningTopology(main=main, sink=sink)
