"""Maximum sustainable throughput per grouping, as ShuffleBench and Theodolite measure it, for three
systems on the same records: the harness in micro-batch mode, the harness in real-time mode (Spark's
Real-Time Mode), and the Storm peer (`--peers storm`).

For each grouping and simulated cost, step the input rate up (open loop: the producer replays at
the step's rate whatever the topology does, and stamps each record with its intended send time).
Each step is one paced live run (`bench.run`) of `step_s` seconds of input. After the warm-up, the
step holds if
- the consumer lag does not grow: the slope of (records produced by t) - (records the query has
  processed by t), over the step's batches, is at most `max_lag_growth` of the rate (records/s per
  record/s); a step with fewer than 3 lag samples after its warm-up is run again with a longer
  input, and is never passed on its p99 alone; and
- the processing latency p99 (Kafka timestamp to the worker's processing, `bench.latency`) is within
  the bound.
A ladder climbs under the loosest of the p99 bounds (200 ms, 1 s and 5 s by default) and stops at
the first step that does not hold; its capacity under each bound is the highest rate before the
first step that does not hold under that bound (`capacity_under`), so the three tables come from the
same steps. The reported figure is the median over the repetitions, with their spread.

Fairness: every system runs the same records at the same rates; per grouping and cost each harness
mode runs the ladder's first step once, uncounted, in the session it measures (`ladder.warm_up_step`),
and each Storm step runs that warm-up step in its own JVM before its records; the systems' order
rotates from one repetition to the next; Storm's worker bolt pays the cost with the harness's paced
sleep (`groupings.PacedCost`); CPU per record is given for every system. The harness's steps run with
the trigger, aggregator partitions and real-time batch of the options, and the output states them.

The arithmetic (`lag_series`, `lag_slope`, `step_holds`, `capacity_of`) is pure and unit-tested;
`run_ladder` drives the real runs. Each step's decision is also written to InfluxDB (measurement
`capacity_step`, `step_point`) beside the step run's own observer points, for the dashboards;
capacity.json stays the record.

Three modules: `decision` (the thresholds and the pure arithmetic of a step and a ladder, no I/O),
`ladder` (the real runs, their records and InfluxDB points, the table and the figure) and `storm`
(the Storm peer's steps on the same records, for `--peers storm`, decided by the same rule).
"""
