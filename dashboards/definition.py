"""The "Stream groupings" dashboard: load balance, cost, throughput, latency and capacity of runs.

Built with grafana-foundation-sdk (Grafana Labs' dashboards-as-code SDK); the InfluxQL targets
are `dashboards.influxql.InfluxQL` (the SDK has no InfluxDB query builder). Every panel query
filters on the three template variables (multi-value, "All" included), so one dashboard compares
runs, groupings and datasets side by side.
"""

from __future__ import annotations

from grafana_foundation_sdk.builders import bargauge, common, stat, table, timeseries
from grafana_foundation_sdk.builders import dashboard as sdk
from grafana_foundation_sdk.models.common import BarGaugeDisplayMode, VizOrientation
from grafana_foundation_sdk.models.dashboard import (DataSourceRef, GridPos, VariableOption, VariableRefresh,
                                                     VariableSort)

from bench.capacity.decision import CAPACITY_STEP
from bench.observer.influx_schema import RESCALE
from dashboards.influxql import InfluxQL, InfluxQLAnnotation

DATASOURCE = DataSourceRef(type_val="influxdb", uid="stream-groupings-influxdb")
"""The InfluxQL data source the provisioning files create (dashboards/provisioning)."""

FILTER = '"run_id" =~ /^$run_id$/ AND "grouping" =~ /^$grouping$/ AND "dataset" =~ /^$dataset$/'
ALIAS = "$tag_grouping $tag_run_id"


def influxql(query: str, ref_id: str, alias: str | None = None, result_format: str = "time_series") -> InfluxQL:
    """A raw InfluxQL target on the provisioned data source (`alias` names time series only)."""
    target = InfluxQL(query).ref_id(ref_id).datasource(DATASOURCE).result_format(result_format)
    return target.alias(alias) if alias is not None else target


def latest(field: str, alias: str, ref_id: str, measurement: str = "observer", by: str = '"run_id"',
           name: str | None = None) -> InfluxQL:
    """The last value of one field per `by` group in the time range (bar gauges, stats)."""
    return influxql(f'SELECT last("{field}") AS "{name or field}" FROM "{measurement}" WHERE $timeFilter AND {FILTER} '
                    f"GROUP BY {by}", ref_id, alias)


def series(field: str, alias: str, agg: str = "last", measurement: str = "observer", by: str = '"grouping", "run_id"',
           ref_id: str | None = None) -> InfluxQL:
    """A time series of one field per (grouping, run), aggregated per `$__interval`."""
    return influxql(f'SELECT {agg}("{field}") AS "{field}" FROM "{measurement}" WHERE $timeFilter AND {FILTER} '
                    f"GROUP BY time($__interval), {by} fill(none)", ref_id or field[:8].upper(), alias)


def variable(tag: str, label: str) -> sdk.QueryVariable:
    """A multi-value variable over the values of one tag of `observer`, "All" selected."""
    return (sdk.QueryVariable(tag).label(label).datasource(DATASOURCE)
            .query(f'SHOW TAG VALUES FROM "observer" WITH KEY = "{tag}"')
            .include_all(True).multi(True).refresh(VariableRefresh.ON_TIME_RANGE_CHANGED)
            .sort(VariableSort.ALPHABETICAL_ASC)
            .current(VariableOption(selected=True, text=["All"], value=["$__all"])))


def panel_grid(index: int, width: int = 12, height: int = 8) -> GridPos:
    """Position of the `index`-th panel: two per row, 12 of Grafana's 24 columns wide, 8 rows high."""
    return GridPos(h=height, w=width, x=(index % 2) * width, y=(index // 2) * height)


def last_not_null() -> common.ReduceDataOptions:
    """Reduce each series to its last non-null value (bar gauges and stats of the last tick)."""
    return common.ReduceDataOptions().calcs(["lastNotNull"]).values(False)


def time_series(title: str, description: str, targets: list[InfluxQL], unit: str = "none") -> timeseries.Panel:
    """A time-series panel on the provisioned data source; `unit` is Grafana's unit id (ms, rps, ...)."""
    return (timeseries.Panel().title(title).description(description).datasource(DATASOURCE)
            .targets(targets).unit(unit))


def worker_share_gauge() -> bargauge.Panel:
    """Each worker's share of the run's weighted count at the last tick (`worker_load` points)."""
    return (bargauge.Panel().title("Per-worker load share (%), last tick")
            .description("Each worker's share of the weighted tuple count of the run.").datasource(DATASOURCE)
            .targets([latest("share_pct", "$tag_run_id w$tag_worker", "SHARE", measurement="worker_load",
                             by='"run_id", "worker"', name="share")])
            .orientation(VizOrientation.HORIZONTAL).display_mode(BarGaugeDisplayMode.LCD)
            .reduce_options(last_not_null()).unit("percent").min(0).max(100))


def capacity_gauge() -> bargauge.Panel:
    """The highest input rate a `make capacity` step held, per grouping and cost (`capacity_step` points)."""
    return (bargauge.Panel().title("Capacity: highest input rate held (records/s)")
            .description("`make capacity` steps the input rate (open loop); a step holds if its processing p99 and "
                         "its consumer-lag growth stay under the thresholds (bench/capacity/decision.py). The highest rate any "
                         "repetition held, per system (the harness in micro-batch or real-time mode, or the Storm peer of `make capacity PEERS=storm`), grouping and "
                         "cost; the median over repetitions, with its spread, is in "
                         "results/capacity/<stamp>/capacity.txt.").datasource(DATASOURCE)
            .targets([influxql(f'SELECT max("rate") AS "held_rate" FROM "{CAPACITY_STEP}" WHERE $timeFilter AND '
                               f'{FILTER} AND "held" = true GROUP BY "system", "grouping", "cost_ms"', "CAP",
                               "$tag_system $tag_grouping cost $tag_cost_ms ms")])
            .orientation(VizOrientation.HORIZONTAL).display_mode(BarGaugeDisplayMode.BASIC)
            .reduce_options(common.ReduceDataOptions().calcs(["max"]).values(False)).unit("rps").min(0))


def capacity_steps_table() -> table.Panel:
    """One row per `make capacity` step: rate, latency, lag growth, held and why, and for the
    harness its median batch and Spark's floor beside it."""
    return (table.Panel().title("Capacity steps: rate, processing p99, lag growth, held")
            .description("One row per step of `make capacity`: the input rate, the processing latency p50/p99 after "
                         "the warm-up, the consumer-lag growth as a fraction of the rate, whether the step held "
                         "(and why not), and for the harness its median batch and Spark's floor (the empty query at "
                         "that batch size), ms.").datasource(DATASOURCE)
            .targets([influxql(f'SELECT "rate", "p50_ms", "p99_ms", "lag_growth", "held", "why", "batch_p50_ms", '
                               f'"spark_floor_ms" FROM "{CAPACITY_STEP}" WHERE $timeFilter AND {FILTER} '
                               f'GROUP BY "system", "grouping", "cost_ms", "repetition"', "STEPS", result_format="table")]))


def dead_letters_stat() -> stat.Panel:
    """The run's count of malformed records (the splitter's dead letters)."""
    return (stat.Panel().title("Dead letters (malformed records)")
            .description("Records the splitter could not parse; they are in the <run>.dlq topic.").datasource(DATASOURCE)
            .targets([latest("malformed", "$tag_run_id", "DLQ")]).reduce_options(last_not_null()))


def panels() -> list:
    """The panels in reading order (two per row); `dashboard()` numbers and places them."""
    return [
        time_series("STD_DEV: load imbalance (percentage points, cumulative)",
                    "Population standard deviation of the workers' shares of the weighted count, idle "
                    "workers at 0 % (reference STD_DEV). 0 is a perfect balance.",
                    [series("std_dev", ALIAS)]),
        worker_share_gauge(),
        time_series("DIST_COST: workers per key",
                    "Distinct key-worker pairs over distinct keys (reference DIST_COST): the aggregation "
                    "(memory) cost of key splitting. KEY is 1.",
                    [series("dist_cost", ALIAS)]),
        time_series("Throughput (records/s)",
                    "THROUGHPUT_RATIO = weighted total / whole seconds since the observer's first input "
                    "(reference), beside Spark's processed rows per second of the last batch.",
                    [series("throughput_ratio", f"THROUGHPUT_RATIO {ALIAS}"),
                     series("processed_rows_per_s", f"Spark rows/s {ALIAS}")], unit="rps"),
        time_series("Processing latency (ms), per tick: p50, p99, p99.9, max",
                    "The headline latency. Per tuple, from its Kafka timestamp (the producer's intended send "
                    "time: no coordinated omission) to the end of its worker's processing, over the tuples of "
                    "the batches since the previous tick (HDR histograms merged over workers, bench/latency.py). "
                    "Runs that replay their input live only.",
                    [series("latency_p50_ms", f"p50 {ALIAS}", ref_id="P50"),
                     series("latency_p99_ms", f"p99 {ALIAS}", ref_id="P99"),
                     series("latency_p999_ms", f"p99.9 {ALIAS}", ref_id="P999"),
                     series("latency_max_ms", f"max {ALIAS}", ref_id="MAX")], unit="ms"),
        time_series("Window output latency (ms): p50, p99, max",
                    "Time of the aggregator's output minus the records' Kafka timestamps: mostly the "
                    "aggregation window a tuple waits for, not the processing latency (the panel beside).",
                    [series("window_latency_p50_ms", f"p50 {ALIAS}", ref_id="WP50"),
                     series("window_latency_p99_ms", f"p99 {ALIAS}", ref_id="WP99"),
                     series("window_latency_max_ms", f"max {ALIAS}", ref_id="WMAX")], unit="ms"),
        time_series("Spark micro-batches: duration (ms) and input rate (rows/s)",
                    "From Spark's StreamingQueryProgress of the main query.",
                    [series("batch_duration_ms", f"batch ms {ALIAS}"),
                     series("processed_rows_per_s", f"rows/s {ALIAS}")]),
        time_series("Max/mean imbalance",
                    "Most loaded worker's count over the mean count (1 is a perfect balance).",
                    [series("max_mean_imbalance", ALIAS)]),
        capacity_gauge(),
        capacity_steps_table(),
        dead_letters_stat(),
    ]


RESCALE_TABLE_FIELDS = ("pause_ms", "moved_keys", "moved_groups", "groups", "state_entries_read", "state_bytes_read",
                        "throughput_tps_before", "throughput_tps_during", "throughput_tps_after",
                        "latency_ms_p99_before", "latency_ms_p99_during", "latency_ms_p99_after",
                        "std_dev_before", "std_dev_after", "ownership_violations")
"""Fields of the `rescale` measurement in the "Rescale events" table (docs/rescaling.md, "Figures of a rescale")."""


def rescale_annotation() -> InfluxQLAnnotation:
    """Each rescale event of the selected runs as an annotation on every time-series panel: from the
    point's time (a Spark run: the stop) to `resumed_wall_ms` (the end of the switch batch, so the
    pause is a region; the simulator's points have no end and show as a line)."""
    return (InfluxQLAnnotation("Rescales", f'SELECT "description", "resumed_wall_ms", "protocol", "routing", "run_id" '
                                           f'FROM "{RESCALE}" WHERE $timeFilter AND {FILTER}')
            .datasource(DATASOURCE).icon_color("orange")
            .columns(text="description", tags="protocol,routing,run_id", time_end="resumed_wall_ms"))


def rescaling_panels() -> list[tuple[object, GridPos]]:
    """The panels of the "Rescaling" row with their positions relative to the row (y = 0 is the
    line under its header)."""
    return [
        (time_series("Per-worker load across a rescale (weighted tuples/s per worker)",
                     "Each worker's routed weighted load per second (the derivative of its cumulative load, "
                     "measurement worker_load); the rescale annotation marks the pause, from the stop to the end "
                     "of the first batch under the new routing. Workers added by a rescale start at 0.",
                     [influxql(f'SELECT non_negative_derivative(last("load"), 1s) AS "load_per_s" FROM "worker_load" '
                               f"WHERE $timeFilter AND {FILTER} GROUP BY time($__interval), \"run_id\", \"worker\" "
                               "fill(none)", "WLOAD", "$tag_run_id w$tag_worker")], unit="rps"),
         GridPos(h=8, w=24, x=0, y=0)),
        (stat.Panel().title("Rescale pause (ms)")
         .description("pause_ms: on Spark, wall time from the query's stop to the end of the first batch under the "
                      "new routing (STOP_THE_WORLD); in the simulator, the time every router was stopped.")
         .datasource(DATASOURCE)
         .targets([latest("pause_ms", "$tag_run_id $tag_event", "PAUSE", measurement=RESCALE,
                          by='"run_id", "event"')]).reduce_options(last_not_null()).unit("ms"),
         GridPos(h=5, w=12, x=0, y=8)),
        (stat.Panel().title("State moved: keys and units (vnodes, key groups, keys)")
         .description("moved_keys: keys with state whose worker changed (their entries went through <run>.state); "
                      "moved_groups: routing units whose owner changed.").datasource(DATASOURCE)
         .targets([latest("moved_keys", "keys $tag_run_id $tag_event", "MKEYS", measurement=RESCALE,
                          by='"run_id", "event"'),
                   latest("moved_groups", "units $tag_run_id $tag_event", "MUNITS", measurement=RESCALE,
                          by='"run_id", "event"')]).reduce_options(last_not_null()),
         GridPos(h=5, w=12, x=12, y=8)),
        (table.Panel().title("Rescale events: pause, moved state, throughput and p99 before / during / after")
         .description("One row per rescale event (measurement rescale, one point per event): pause (ms), moved keys "
                      "and units, state read (entries, bytes), tuples/s and processing p99 (ms) in the 30 s before "
                      "the stop, during the pause and 30 s after it, STD_DEV before and after (pp), ownership "
                      "violations (must be 0).").datasource(DATASOURCE)
         .targets([influxql("SELECT " + ", ".join(f'"{f}"' for f in RESCALE_TABLE_FIELDS) + f' FROM "{RESCALE}" '
                            f'WHERE $timeFilter AND {FILTER} GROUP BY "run_id", "event", "protocol", "routing"',
                            "EVENTS", result_format="table")]),
         GridPos(h=8, w=24, x=0, y=13)),
    ]


def dashboard() -> sdk.Dashboard:
    """The dashboard builder (grafana-foundation-sdk); `dashboards.build` serialises what it builds."""
    board = (sdk.Dashboard("Stream groupings").uid("stream-groupings")
             .description("Load balance, replication cost, throughput, latency and capacity of stream-grouping "
                          "runs (observer of the stream-groupings benchmark harness).")
             .tags(["stream-groupings", "spark", "kafka"]).timezone("utc").time("now-1h", "now").refresh("10s")
             .editable()
             .with_variable(variable("run_id", "run")).with_variable(variable("grouping", "grouping"))
             .with_variable(variable("dataset", "dataset"))
             .annotation(rescale_annotation()))
    main = panels()
    for index, panel in enumerate(main):
        board.with_panel(panel.id(index + 1).grid_pos(panel_grid(index)))
    row_y = panel_grid(len(main) - 1).y + 8
    board.with_row(sdk.Row("Rescaling").id(len(main) + 1).grid_pos(GridPos(h=1, w=24, x=0, y=row_y)))
    for index, (panel, pos) in enumerate(rescaling_panels()):
        pos.y += row_y + 1
        board.with_panel(panel.id(len(main) + 2 + index).grid_pos(pos))
    return board
