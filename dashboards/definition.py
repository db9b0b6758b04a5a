"""The "Stream groupings" dashboard: load balance, cost, throughput and latency of runs.

Every panel query filters on the three template variables (multi-value, "All" included), so one
dashboard compares runs, groupings and datasets side by side.
"""

from __future__ import annotations

from grafanalib.core import (
    BarGauge,
    Dashboard,
    GridPos,
    Stat,
    Template,
    Templating,
    Time,
    TimeSeries,
)
from grafanalib.influxdb import InfluxDBTarget

DATASOURCE = {"type": "influxdb", "uid": "stream-groupings-influxdb"}
"""The InfluxQL data source the provisioning files create (dashboards/provisioning)."""

FILTER = '"run_id" =~ /^$run_id$/ AND "grouping" =~ /^$grouping$/ AND "dataset" =~ /^$dataset$/'


def latest(field: str, alias: str, ref_id: str, measurement: str = "observer", by: str = '"run_id"',
           name: str | None = None, **options) -> InfluxDBTarget:
    """The last value of one field per `by` group in the time range (bar gauges, stats)."""
    return InfluxDBTarget(
        datasource=DATASOURCE,
        query=f'SELECT last("{field}") AS "{name or field}" FROM "{measurement}" WHERE $timeFilter AND {FILTER} '
              f"GROUP BY {by}",
        alias=alias, refId=ref_id, **options,
    )


def series(field: str, alias: str, agg: str = "last", measurement: str = "observer", by: str = '"grouping", "run_id"',
           ref_id: str | None = None) -> InfluxDBTarget:
    """A time series of one observer field per (grouping, run), aggregated per `$__interval`."""
    return InfluxDBTarget(
        datasource=DATASOURCE,
        query=f'SELECT {agg}("{field}") AS "{field}" FROM "{measurement}" WHERE $timeFilter AND {FILTER} '
              f"GROUP BY time($__interval), {by} fill(none)",
        alias=alias,
        refId=ref_id or field[:8].upper(),
    )


def variable(tag: str, label: str) -> Template:
    return Template(
        name=tag, label=label, dataSource=DATASOURCE, type="query",
        query=f'SHOW TAG VALUES FROM "observer" WITH KEY = "{tag}"',
        includeAll=True, multi=True, default="$__all", refresh=2, sort=1,
    )


def panel_grid(index: int, width: int = 12, height: int = 8) -> GridPos:
    return GridPos(h=height, w=width, x=(index % 2) * width, y=(index // 2) * height)


def dashboard() -> Dashboard:
    """The dashboard object (grafanalib); `dashboards.build` serialises it."""
    alias = "$tag_grouping $tag_run_id"
    panels = [
        TimeSeries(
            title="STD_DEV: load imbalance (percentage points, cumulative)",
            description="Population standard deviation of the workers' shares of the weighted count, idle "
                        "workers at 0 % (reference STD_DEV). 0 is a perfect balance.",
            targets=[series("std_dev", alias)], unit="none", gridPos=panel_grid(0),
        ),
        BarGauge(
            title="Per-worker load share (%), last tick",
            description="Each worker's share of the weighted tuple count of the run.",
            targets=[latest("share_pct", "$tag_run_id w$tag_worker", "SHARE", measurement="worker_load",
                            by='"run_id", "worker"', name="share", format="table")],
            orientation="horizontal", calc="lastNotNull", format="percent", max=100, min=0,
            gridPos=panel_grid(1),
        ),
        TimeSeries(
            title="DIST_COST: workers per key",
            description="Distinct key-worker pairs over distinct keys (reference DIST_COST): the aggregation "
                        "(memory) cost of key splitting. KEY is 1.",
            targets=[series("dist_cost", alias)], unit="none", gridPos=panel_grid(2),
        ),
        TimeSeries(
            title="Throughput (records/s)",
            description="THROUGHPUT_RATIO = weighted total / whole seconds since the observer's first input "
                        "(reference), beside Spark's processed rows per second of the last batch.",
            targets=[series("throughput_ratio", f"THROUGHPUT_RATIO {alias}"),
                     series("processed_rows_per_s", f"Spark rows/s {alias}")],
            unit="rps", gridPos=panel_grid(3),
        ),
        TimeSeries(
            title="Processing latency (ms), per tick",
            description="Per tuple, from its Kafka timestamp (the producer's intended send time) to the end of "
                        "its worker's processing, over the tuples of the batches since the previous tick (HDR "
                        "histograms merged over workers). Runs that replay their input live only.",
            targets=[series("latency_p50_ms", f"p50 {alias}", ref_id="P50"),
                     series("latency_p99_ms", f"p99 {alias}", ref_id="P99"),
                     series("latency_p999_ms", f"p99.9 {alias}", ref_id="P999"),
                     series("latency_max_ms", f"max {alias}", ref_id="MAX")],
            unit="ms", gridPos=panel_grid(4),
        ),
        TimeSeries(
            title="Spark micro-batches: duration (ms) and input rate (rows/s)",
            description="From Spark's StreamingQueryProgress of the main query.",
            targets=[series("batch_duration_ms", f"batch ms {alias}"),
                     series("processed_rows_per_s", f"rows/s {alias}")],
            unit="none", gridPos=panel_grid(5),
        ),
        Stat(
            title="Dead letters (malformed records)",
            description="Records the splitter could not parse; they are in the <run>.dlq topic.",
            targets=[latest("malformed", "$tag_run_id", "DLQ")],
            reduceCalc="lastNotNull", gridPos=panel_grid(6),
        ),
        TimeSeries(
            title="Max/mean imbalance",
            description="Most loaded worker's count over the mean count (1 is a perfect balance).",
            targets=[series("max_mean_imbalance", alias)], unit="none", gridPos=panel_grid(7),
        ),
        TimeSeries(
            title="Window output latency (ms)",
            description="Time of the aggregator's output minus the records' Kafka timestamps (p50, p99): "
                        "mostly the aggregation window a tuple waits for, not the processing latency.",
            targets=[series("window_latency_p50_ms", f"p50 {alias}", ref_id="WP50"),
                     series("window_latency_p99_ms", f"p99 {alias}", ref_id="WP99")],
            unit="ms", gridPos=panel_grid(8),
        ),
    ]
    return Dashboard(
        title="Stream groupings",
        uid="stream-groupings",
        description="Load balance, replication cost, throughput and latency of stream-grouping runs "
                    "(observer of the stream-groupings benchmark harness).",
        tags=["stream-groupings", "spark", "kafka"],
        timezone="utc",
        time=Time("now-1h", "now"),
        refresh="10s",
        templating=Templating([
            variable("run_id", "run"), variable("grouping", "grouping"), variable("dataset", "dataset"),
        ]),
        panels=panels,
    ).auto_panel_ids()
