"""Assembles the topology into Spark queries and starts them.

Two queries share the Kafka input:
- `main`: spout -> splitter -> grouping -> workers -> aggregator -> foreachBatch sink
  (`<run>.aggregates`, run record, observer). Its one checkpoint holds the Kafka offsets, the
  grouping instances and the window states: a restart with the same run id resumes exactly.
- `dlq`: spout -> malformed records -> `<run>.dlq` (stateless, its own checkpoint). Dead letters
  are not on the main path, so the main query's single sink stays the aggregates.
"""

from __future__ import annotations

from dataclasses import dataclass

from pyspark.sql import DataFrame, SparkSession

from bench.topology import aggregator, grouping_stage, spout, splitter, worker
from bench.topology.config import TopologyConfig
from bench.topology.sink import AggregateSink, DeadLetterSink


def build_main(spark: SparkSession, config: TopologyConfig, splitter_sql) -> DataFrame:
    """The main query's DataFrame up to the aggregator (no sink): final totals per (window, key)."""
    raw = spout.read_kafka(spark, config)
    tuples = splitter.split(raw, config, splitter_sql)
    routed = grouping_stage.apply_grouping(tuples, config.grouping, config.workers, config.grouping_params,
                                           config.grouping_clock)
    partials = worker.work(routed, config.workers, config.cost_ms, config.cost_every, config.worker_window_s)
    return aggregator.aggregate(partials, config.aggregator_window_s)


def build_dead_letters(spark: SparkSession, config: TopologyConfig, splitter_sql) -> DataFrame:
    return splitter.dead_letters(spout.read_kafka(spark, config, with_control=False), config, splitter_sql)


@dataclass
class RunningTopology:
    main: object  # StreamingQuery
    dlq: object
    sinks: tuple = ()

    def stop(self) -> None:
        for q in (self.main, self.dlq):
            try:
                q.stop()
            except Exception:
                pass
        for sink in self.sinks:
            sink.close()

    def exception(self):
        for q in (self.main, self.dlq):
            e = q.exception()
            if e is not None:
                return e
        return None


def main_query_name(config: TopologyConfig) -> str:
    return f"{config.run_id}-main"


def start(spark: SparkSession, config: TopologyConfig, splitter_sql, observer=None) -> RunningTopology:
    """Start both queries (checkpoints under `config.checkpoint_dir`)."""
    # Fixed per checkpoint at its first batch (a restart keeps the stored value): A partitions.
    spark.conf.set("spark.sql.shuffle.partitions", str(config.aggregators))
    trigger = {"processingTime": f"{config.trigger_s} seconds"}
    dlq_sink = DeadLetterSink(config.run_id, config.results_dir, config.bootstrap_servers, config.dlq_topic)
    main_sink = AggregateSink(config.run_id, config.results_dir, config.bootstrap_servers, config.aggregates_topic,
                              observer)
    dlq = (
        build_dead_letters(spark, config, splitter_sql).writeStream
        .queryName(f"{config.run_id}-dlq")
        .option("checkpointLocation", str(config.checkpoint_dir / "dlq"))
        .foreachBatch(dlq_sink)
        .trigger(**trigger)
        .start()
    )
    main = (
        build_main(spark, config, splitter_sql).writeStream
        .queryName(main_query_name(config))
        .outputMode("append")
        .option("checkpointLocation", str(config.checkpoint_dir / "main"))
        .foreachBatch(main_sink)
        .trigger(**trigger)
        .start()
    )
    return RunningTopology(main=main, dlq=dlq, sinks=(main_sink, dlq_sink))
