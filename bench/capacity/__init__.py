"""Maximum sustainable throughput per grouping, as ShuffleBench and Theodolite measure it.

For each grouping and simulated cost, step the input rate up (open loop: the producer replays at
the step's rate whatever the topology does, and stamps each record with its intended send time).
Each step is one paced live run (`bench.run`) of `step_s` seconds of input. After the warm-up, the
step holds if
- the consumer lag does not grow: the slope of (records produced by t) - (records the query has
  read by t), over the step's batches, is at most `max_lag_growth` of the rate (records/s per
  record/s), and
- the processing latency p99 (Kafka timestamp to the worker's processing, `bench.latency`) is at
  most `max_p99_ms`.
The capacity of a repetition is the highest rate that held (the ladder stops at the first step that
does not); the reported figure is the median over the repetitions, with their spread.
The harness's steps run with the trigger and aggregator partitions of the options (the reference's
1 s and A = 10 by default; a tighter latency bound on a small machine needs others), and the output
states them.
Before a grouping's first repetition at a cost, the harness runs the ladder's first step once and
does not count it (`ladder.warm_up_step`: the Spark session's JIT warms up on the query it measures;
capacity.json keeps it under `warm_up_steps`).

The arithmetic (`lag_series`, `lag_slope`, `step_holds`, `capacity_of`) is pure and unit-tested;
`run_ladder` drives the real runs. Each step's decision is also written to InfluxDB (measurement
`capacity_step`, `step_point`) beside the step run's own observer points, for the dashboards;
capacity.json stays the record.

Three modules: `decision` (the thresholds and the pure arithmetic of a step and a ladder, no I/O),
`ladder` (the real runs, their records and InfluxDB points, the table and the figure) and `storm`
(the Storm peer's steps on the same records, for `--peers storm`, decided by the same rule).
"""
