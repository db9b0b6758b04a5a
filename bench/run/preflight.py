"""Every check before Spark starts: the grouping, the dataset, the options, the broker, the input
topic and the topology's configuration (`prepare`). A run that cannot start fails here, in seconds,
with a `RunError` that says why and what to do."""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

from bench.observer.influx import observer_points
from bench.rescale.setup import rescale_config
from bench.results.record import RESULTS_DIR, check_run_id, new_run_id
from bench.run.options import RunOptions
from bench.stack import Stack, StackConfig
from bench.topology import jvm_stage
from bench.topology.config import TopologyConfig, topology_settings
from datasets import get_dataset
from groupings import canonical_grouping, create_grouping
from producers import BrokerUnreachable, check_broker, expected_records, inspect_topic
from producers.broker import end_offsets


class RunError(RuntimeError):
    """A run cannot start or did not complete; the message says why and what to do."""


def default_master(workers: int, splitters: int, aggregators: int) -> str:
    """`local[N]`, N = max(W, S, A): every worker task of a micro-batch has a slot of its own whatever
    the core count. The simulated cost is a sleep, so W workers run in parallel as Storm's executor
    threads do; with fewer slots (local[*] on 2 cores) workers wait for a slot and a run measures
    the slots, not the grouping."""
    return f"local[{max(workers, splitters, aggregators)}]"


def default_topic(options: RunOptions, partitions: int) -> str:
    """The input topic a dataset replay goes to; the same options give the same topic (run-all)."""
    params = "".join(f".{k}-{v}" for k, v in sorted(options.dataset_params.items()))
    rate = "max" if options.rate is None else f"{options.rate:g}"
    name = f"in.{options.dataset.lower()}{params}.n{options.limit or 'all'}.r{rate}.p{partitions}"
    return "".join(c if c.isalnum() or c in "._-" else "_" for c in name)[:200]


@dataclass
class Prepared:
    """A run that passed every check: its options (grouping canonical, partitions and master
    resolved), its topology configuration and what the checks found on the way."""

    options: RunOptions
    config: TopologyConfig
    dataset: object
    splitter_sql: object
    run_id: str
    influx_url: str | None
    influx_database: str
    topic_exists: bool
    stack_started: bool = False
    replay_total: int | None = None
    """Records the replay puts in the topic (None: --no-replay, the topic is consumed as it is)."""


def prepare(options: RunOptions, *, ensure_stack: bool = True, log=print) -> Prepared:
    """Every check that can fail before Spark starts, in order: grouping, dataset, option values,
    run id, broker (starting the local stack if `ensure_stack` and no --bootstrap-servers), input
    topic, topology configuration, an earlier run's leftovers under the run id (in its Kafka topics
    and in InfluxDB). Raises RunError with a clear message."""
    grouping = _checked_grouping(options)
    dataset, splitter_sql = _checked_dataset(options)
    _check_values(options)
    run_id = options.run_id or new_run_id(grouping, dataset.name)
    try:
        check_run_id(run_id)
    except ValueError as e:
        raise RunError(str(e)) from None
    partitions = options.partitions or options.splitters
    topic = options.topic or default_topic(options, partitions) + (f".{run_id}" if options.own_topic else "")
    stack_config = StackConfig.from_env()
    bootstrap, stack_started = _bootstrap(options, stack_config, ensure_stack, log)
    topic_exists, replay_total = _input_topic(options, dataset, bootstrap, topic, partitions)
    config = _topology_config(options, grouping, dataset.name, run_id, topic, bootstrap, topic_exists)
    _check_fresh_run_id(config)
    _check_resumable(config)
    master = options.master or (f"local[{config.realtime_task_slots}]" if config.realtime else
                                default_master(options.workers, options.splitters, options.aggregators))
    if config.realtime:
        _check_realtime(config, options, master)
    influx_url = None if options.no_influx else (options.influx_url or stack_config.influx_url)
    influx_database = options.influx_database or stack_config.influx_database
    if influx_url is not None:
        check_fresh_influx(config, influx_url, influx_database)
    return Prepared(options=replace(options, grouping=grouping, partitions=partitions, master=master), config=config,
                    dataset=dataset, splitter_sql=splitter_sql, run_id=run_id, influx_url=influx_url,
                    influx_database=influx_database,
                    topic_exists=topic_exists, stack_started=stack_started, replay_total=replay_total)


def resumes(config: TopologyConfig) -> bool:
    """Whether the run resumes an earlier attempt: its query's checkpoint has a committed batch."""
    return (config.query_checkpoint / "commits").exists()


def _check_fresh_run_id(config: TopologyConfig) -> None:
    """RunError when the run starts afresh (no checkpoint to resume from) but its control topic holds
    records: an earlier run under this run id sent its end of input there, which the new query would
    read in its first batch, moving the watermark past every window and dropping the input as late
    (a run whose results folder was deleted and whose run id was reused dropped 1,600,010 of its
    2,000,000 records that way, 2026-11-27)."""
    if resumes(config):
        return  # the checkpoint holds the control topic's offset
    # In real-time mode the aggregator query would read an earlier run's partial updates.
    for topic in (config.control_topic, *([config.partials_topic] if config.realtime else [])):
        try:
            held = end_offsets(config.bootstrap_servers, topic) or {}
        except BrokerUnreachable as e:
            raise RunError(str(e)) from None
        if sum(held.values()):
            kind = "control" if topic == config.control_topic else "partials"
            raise RunError(f"run id {config.run_id!r} was used before: its {kind} topic {topic!r} holds "
                           f"{sum(held.values())} record(s) of an earlier run, and {config.checkpoint_dir} has no "
                           f"checkpoint to resume from; use another run id, or delete the topics {config.run_id}.* first")


def check_fresh_influx(config: TopologyConfig, influx_url: str, database: str) -> None:
    """RunError when InfluxDB holds observer ticks of `config.run_id` but the run has no record (no
    results folder): an earlier run under this run id wrote them and its record was deleted, so the
    new run's points would mix with the old ones on every dashboard and in every count (a `make
    nemesis` that reused a run id found 101 points for its 81 ticks, 2026-11-29). A run that resumes
    its record writes the same points again, which leaves one each. Nothing to check when InfluxDB
    does not answer."""
    if Path(config.results_dir).exists():
        return
    held = observer_points(influx_url, database, config.run_id)
    if held:
        raise RunError(f"run id {config.run_id!r} was used before: InfluxDB at {influx_url} (database {database!r}) "
                       f"holds {held} observer tick(s) of an earlier run whose record {config.results_dir} is gone; "
                       f"use another run id, or delete its points first: DROP SERIES WHERE run_id = '{config.run_id}'")


def _check_resumable(config: TopologyConfig) -> None:
    """RunError when the run resumes a checkpoint whose grouping stage or worker-state operator was
    written by another kind of operator (JVM or Python) than this version builds for it: a checkpoint
    of an earlier version (the Python worker state before 2026-11-28, a rescale or a run with
    `--param` on the Python grouping stage), which Spark could not restore into the new plan."""
    if not resumes(config) or config.realtime:
        return  # a real-time run has no Python operator
    builds = {"grouping": config.data_plane, "per_key": "jvm"}
    for variable, plane in jvm_stage.written_planes(config.checkpoint_dir / "main").items():
        if plane != builds[variable]:
            raise RunError(f"run {config.run_id!r} resumes a checkpoint whose {jvm_stage.STATE_VARIABLES[variable]} "
                           f"was written by the {plane} operator; this version builds the {builds[variable]} one. "
                           f"Resume it with the version that started it (run.json has its settings), or start "
                           f"a new run id")


REALTIME_REFUSES_PYTHON = ("the Python grouping stage (transformWithStateInPandas) fails its first real-time batch "
                           "with \"[STDS_FAILED_TO_READ_OPERATOR_METADATA] Failed to read the operator metadata for "
                           "checkpointLocation=... and batchId=0\" (PySpark 4.3.0)")
"""What Spark does with the Python grouping stage in Real-Time Mode (measured 2026-11-29; docs/topology.md,
"Two execution modes")."""
def _check_realtime(config: TopologyConfig, options: RunOptions, master: str) -> None:
    """RunError for what a real-time run cannot do exactly (docs/topology.md, "Two execution modes")."""
    if config.data_plane != "jvm":
        given = f" with --param {config.grouping_params}" if config.grouping_params else ""
        raise RunError(f"real-time mode routes in the JVM only, and {config.grouping}{given} has no Java implementation "
                       f"(the Java groupings: {', '.join(jvm_stage.JVM_GROUPINGS)}, with the integer parameters "
                       f"{jvm_stage.JVM_PARAMETERS}); in Real-Time Mode {REALTIME_REFUSES_PYTHON}. "
                       "Use --mode microbatch")
    if config.grouping_clock != "kafka":
        raise RunError("real-time mode needs --grouping-clock kafka: a real-time batch run again after a failure "
                       "must route every tuple as it did the first time, and wall time would route it anew")
    partitions = options.partitions or options.splitters
    if partitions > config.splitters:
        raise RunError(f"real-time mode needs P <= S ({partitions} partitions, {config.splitters} splitters): each "
                       "splitter instance must read one Kafka partition, in offset order, for the routing to be "
                       "replayed exactly after a failure")
    if master.startswith("local[") and master[6:-1].isdigit() and int(master[6:-1]) < config.realtime_task_slots:
        raise RunError(f"real-time mode needs {config.realtime_task_slots} task slots (the real-time query's "
                       f"{config.realtime_query_tasks} tasks run for its whole batch, and its input audit and "
                       f"aggregator run beside them); --master {master} has {master[6:-1]}")


def _checked_grouping(options: RunOptions) -> str:
    """The grouping's canonical name (`groupings.canonical_grouping`: a built-in name in any case, a
    plugin's entry-point name, `package.module:Class`), built once with the run's parameters."""
    try:
        grouping = canonical_grouping(options.grouping)
    except ValueError as e:
        raise RunError(str(e)) from None
    try:
        create_grouping(grouping, options.workers, start_ms=0, **options.grouping_params)
    except (TypeError, ValueError) as e:
        raise RunError(f"grouping {grouping}: {e}") from None
    return grouping


def _checked_dataset(options: RunOptions) -> tuple[object, object]:
    """(dataset, its splitter's SQL); RunError for an unknown dataset or a bad parameter."""
    try:
        dataset = get_dataset(options.dataset, **options.dataset_params)
        return dataset, dataset.splitter_sql
    except (TypeError, ValueError) as e:
        raise RunError(str(e)) from None


def _check_values(options: RunOptions) -> None:
    for name, value in (("--limit", options.limit), ("--rate", options.rate), ("--partitions", options.partitions)):
        if value is not None and value <= 0:
            raise RunError(f"{name} must be > 0, got {value}")
    if options.observer_tick_s <= 0:
        raise RunError(f"--observer-tick-s must be > 0, got {options.observer_tick_s}")
    partitions = options.partitions or options.splitters
    if not 1 <= options.producers <= partitions:
        raise RunError(f"--producers must be 1..{partitions} (the input's partitions P), got {options.producers}")


def _bootstrap(options: RunOptions, stack_config: StackConfig, ensure_stack: bool, log) -> tuple[str, bool]:
    """(Kafka's bootstrap servers, whether this call started the local stack)."""
    if options.bootstrap_servers is not None:
        return options.bootstrap_servers, False
    if ensure_stack:
        stack = Stack(stack_config)
        if not all(s.running for s in stack.status()):
            log("starting the local stack (python -m bench.stack up) ...")
            stack.up(log=log)
            return stack_config.bootstrap_servers, True
    return stack_config.bootstrap_servers, False


def _input_topic(options: RunOptions, dataset, bootstrap: str, topic: str, partitions: int) -> tuple[bool, int | None]:
    """(whether the input topic already holds the whole input, records the replay puts in it or
    None for --no-replay). RunError: broker unreachable, topic missing or of another shape."""
    try:
        admin = check_broker(bootstrap, timeout_s=15)
    except BrokerUnreachable as e:
        raise RunError(str(e)) from None
    md = admin.list_topics(timeout=15)
    topic_exists = topic in md.topics and md.topics[topic].error is None
    if not options.replay:
        if not topic_exists:
            raise RunError(f"topic {topic!r} does not exist on {bootstrap} (and --no-replay was given): "
                           "replay a dataset into it first, or drop --no-replay")
        found = len(md.topics[topic].partitions)
        if options.partitions is not None and found != options.partitions:
            raise RunError(f"topic {topic!r} has {found} partitions, not {options.partitions}")
        return True, None
    # Complete, a prefix (resumed by run_stream) or something else (an error now, before Spark).
    replay_total = expected_records(dataset, options.limit)
    state = inspect_topic(bootstrap, topic, replay_total, partitions, timeout_s=15)
    if state.state == "mismatch":
        raise RunError(str(state.mismatch_error(bootstrap))) from None
    return state.state == "complete", replay_total  # else run_stream (or record_input) replays the rest


def _topology_config(options: RunOptions, grouping: str, dataset: str, run_id: str, topic: str, bootstrap: str,
                     topic_exists: bool) -> TopologyConfig:
    """The run's `TopologyConfig`, with a rescale run's changes (`bench.rescale.setup`), validated."""
    results_dir = Path(options.results_dir or RESULTS_DIR) / run_id
    checkpoint_dir = Path(options.checkpoint_root) / run_id if options.checkpoint_root else results_dir / "checkpoint"
    settings = {**topology_settings(options), "grouping": grouping, "dataset": dataset,
                "grouping_params": dict(options.grouping_params), "dataset_params": dict(options.dataset_params)}
    config = TopologyConfig(**settings, run_id=run_id, topic=topic, bootstrap_servers=bootstrap,
                            checkpoint_dir=checkpoint_dir, results_dir=results_dir)
    try:
        if options.rescale:
            config = rescale_config(options, config, topic_exists or bool(options.replay and not options.rate))
        return config.validate()
    except ValueError as e:
        raise RunError(str(e)) from None
