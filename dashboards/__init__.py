"""Grafana dashboards as code (grafana-foundation-sdk): `python -m dashboards.build` writes `generated/*.json`.

The panels read the observer's InfluxDB measurements with InfluxQL, the query language that
InfluxDB 1.8, 2.x (v1 compatibility API) and 3.x share:

- `observer`, one point per observer tick; tags run_id, grouping, dataset, workers; fields are the
  columns of `metrics.parquet` (std_dev, dist_cost, throughput_ratio, latency_p50_ms, ...).
- `worker_load`, one point per worker per tick; the same tags plus `worker`; fields load, share_pct.
- `capacity_step`, one point per step of `make capacity` (`bench.capacity.step_point`); tags run_id
  (the step's run), grouping, dataset, cost_ms, repetition, experiment_id; fields rate, p50_ms,
  p99_ms, lag_slope, lag_growth, max_lag, hottest_share, held (bool), why.
"""
