"""Grafana dashboards as code (grafana-foundation-sdk): `python -m dashboards.build` writes `generated/*.json`.

The panels read the observer's InfluxDB measurements with InfluxQL, the query language that
InfluxDB 1.8, 2.x (v1 compatibility API) and 3.x share:

- `observer`, one point per observer tick; tags run_id, grouping, dataset, workers; fields are the
  columns of `metrics.parquet` (std_dev, dist_cost, throughput_ratio, latency_p50_ms, ...).
- `worker_load`, one point per worker per tick; the same tags plus `worker`; fields load, share_pct.
- `capacity_step`, one point per step of `make capacity` (`bench.capacity.step_point`); tags run_id
  (the step's run; a Storm step's topic), grouping, dataset, cost_ms, repetition, experiment_id,
  system (microbatch, realtime or storm[-b<N>]; harness on points written before 2026-11-29, none
  before 2026-11-28); fields rate, p50_ms, p99_ms, lag_slope, lag_growth, max_lag, hottest_share,
  held (bool), why.
- `rescale`, one point per rescale event (`bench.observer.influx_schema.rescale_point`), of
  `bench simulate --rescale` (at the event's start on the tuples' clock; tag mode=simulate) and of
  `bench run --rescale` (at the query's stop, wall clock); tags run_id, grouping, dataset (workers
  on Spark runs), protocol, routing, event; fields every number of the event in summary.json
  `rescale.events` (pause_ms, moved_keys, throughput_tps_before, ..., resumed_wall_ms), `step_<name>`
  and `description` (text). A rescale run's `observer` ticks also have `rescaling` (bool).
"""
