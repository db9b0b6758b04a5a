"""The Storm topology of the DKG experiments as one Spark Structured Streaming query.

One module per Storm stage: `spout` (Kafka source), `splitter` (Spark SQL parse), `grouping_stage`
(one grouping instance per splitter in the state store), `worker` (repartitionById + simulated
cost + worker windows), `aggregator` (merge per window and key), `sink` (foreachBatch: aggregates
topic and run record); `job` assembles them. See docs/topology.md.
"""
