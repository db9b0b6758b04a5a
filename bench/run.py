"""Orchestration of a streaming run: validate, stack, topic, replay, topology, end of input, record.

    validate everything (grouping, dataset, options, broker, topic)     before Spark starts
    start the topology (one query), the dead-letter reader and the observer
    replay the dataset into the input topic (unless it already holds it)
    wait until every input offset is processed and its dead letters written
    write the end-of-input record to <run>.control (watermark past the last window)
    wait until the last worker and aggregator windows are closed and written
    final tick; run.json, summary.json, metrics.parquet; summary table

A run stopped in the middle (Ctrl-C, a killed driver) resumes from its checkpoint when started
again with the same run id: Spark replays the uncommitted batch, the sinks are idempotent per batch
id, and the observer reloads what it had journalled.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from pathlib import Path

from bench.logs import KAFKA_LOGGER
from bench.results.record import RESULTS_DIR, RunRecord, check_run_id, new_run_id
from bench.topology.config import TOPOLOGY_KNOBS, TopologyConfig


class RunError(RuntimeError):
    """A run cannot start or did not complete; the message says why and what to do."""


@dataclass
class RunOptions:
    grouping: str
    dataset: str
    dataset_params: dict = field(default_factory=dict)
    grouping_params: dict = field(default_factory=dict)
    workers: int = TopologyConfig.workers
    splitters: int = TopologyConfig.splitters
    aggregators: int = TopologyConfig.aggregators
    partitions: int | None = None
    cost_ms: float = TopologyConfig.cost_ms
    cost_every: int = TopologyConfig.cost_every
    rate: float | None = None
    limit: int | None = None
    run_id: str | None = None
    topic: str | None = None
    replay: bool = True
    own_topic: bool = False
    """The default topic name gets the run id: a paced run replays into a topic of its own while it
    consumes it, so every paced run (each grouping of a run-all, each repetition) sees a live input."""
    bootstrap_servers: str | None = None
    master: str | None = None
    """Spark master; default `default_master(...)`: one local task slot per worker (or splitter,
    aggregator partition, whichever is more), as Storm gives each executor its own thread."""
    influx_url: str | None = None
    influx_database: str | None = None
    influx_token: str = ""
    """InfluxDB 2.x: an API token; 1.8 (the local stack): empty, or `user:password`."""
    influx_org: str = "-"
    influx_bucket: str | None = None
    """Default `<database>/autogen`, the v2-API name of an InfluxDB 1.8 database."""
    no_influx: bool = False
    experiment_id: str | None = None
    """Groups repetitions and the runs of one run-all in the run records (default: the run id)."""
    observer_tick_s: float = 10.0
    latency_warmup_s: float = 10.0
    """The run's processing latency leaves out the batches that start within this many seconds of
    the first batch with data (Python workers' start-up: 6-9 s on the first batch)."""
    worker_window_s: int = TopologyConfig.worker_window_s
    aggregator_window_s: int = TopologyConfig.aggregator_window_s
    watermark_delay_s: int = TopologyConfig.watermark_delay_s
    max_offsets_per_trigger: int | None = TopologyConfig.max_offsets_per_trigger
    trigger_s: float = TopologyConfig.trigger_s
    grouping_clock: str = TopologyConfig.grouping_clock
    max_key_bytes: int = TopologyConfig.max_key_bytes
    worker_state: bool = TopologyConfig.worker_state
    """A record with a longer key (UTF-8 bytes) is a dead letter, reason `key too long`."""
    timeout_s: float = 1800.0
    results_dir: Path | None = None
    checkpoint_root: Path | None = None
    progress: bool = True
    stop_after_batches: int | None = None
    """Testing and fault drills: stop the query after this many committed data batches."""
    rescale: str | None = None
    """A rescale schedule (`60s:12`, groupings.rescaling.schedule), on the Kafka-timestamp clock."""
    protocol: str = "STOP_THE_WORLD"
    """The rescale protocol: STOP_THE_WORLD, SHARED_STATE, LEARNER or HANDOFF."""
    handoff_batch: int = 1
    """HANDOFF: units (key groups, vnodes) handed over per round."""


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
    """Every check that can fail before Spark starts. Raises RunError with a clear message."""
    from datasets import get_dataset
    from groupings import GROUPINGS, create_grouping

    grouping = options.grouping.strip().upper()
    if grouping not in GROUPINGS:
        raise RunError(f"unknown grouping {options.grouping!r}; known: {', '.join(GROUPINGS)}")
    try:
        create_grouping(grouping, options.workers, start_ms=0, **options.grouping_params)
    except (TypeError, ValueError) as e:
        raise RunError(f"grouping {grouping}: {e}") from None
    try:
        dataset = get_dataset(options.dataset, **options.dataset_params)
        splitter_sql = dataset.splitter_sql
    except (TypeError, ValueError) as e:
        raise RunError(str(e)) from None
    for name, value in (("--limit", options.limit), ("--rate", options.rate), ("--partitions", options.partitions)):
        if value is not None and value <= 0:
            raise RunError(f"{name} must be > 0, got {value}")
    if options.observer_tick_s <= 0:
        raise RunError(f"--observer-tick-s must be > 0, got {options.observer_tick_s}")
    run_id = options.run_id or new_run_id(grouping, dataset.name)
    try:
        check_run_id(run_id)
    except ValueError as e:
        raise RunError(str(e)) from None
    partitions = options.partitions or options.splitters
    topic = options.topic or default_topic(options, partitions) + (f".{run_id}" if options.own_topic else "")

    from bench.stack import Stack, StackConfig

    stack_config = StackConfig.from_env()
    stack_started = False
    bootstrap = options.bootstrap_servers
    if bootstrap is None:
        bootstrap = stack_config.bootstrap_servers
        if ensure_stack:
            stack = Stack(stack_config)
            if not all(s.running for s in stack.status()):
                log("starting the local stack (python -m bench.stack up) ...")
                stack.up(log=log)
                stack_started = True
    from producers import BrokerUnreachable, check_broker

    try:
        admin = check_broker(bootstrap, timeout_s=15)
    except BrokerUnreachable as e:
        raise RunError(str(e)) from None
    md = admin.list_topics(timeout=15)
    topic_exists = topic in md.topics and md.topics[topic].error is None
    if not topic_exists and not options.replay:
        raise RunError(f"topic {topic!r} does not exist on {bootstrap} (and --no-replay was given): "
                       "replay a dataset into it first, or drop --no-replay")
    if topic_exists and not options.replay:
        found = len(md.topics[topic].partitions)
        if options.partitions is not None and found != options.partitions:
            raise RunError(f"topic {topic!r} has {found} partitions, not {options.partitions}")
    replay_total = None
    if options.replay:
        # Complete, a prefix (resumed by run_stream) or something else (an error now, before Spark).
        from producers import expected_records, inspect_topic

        replay_total = expected_records(dataset, options.limit)
        state = inspect_topic(bootstrap, topic, replay_total, partitions, timeout_s=15)
        if state.state == "mismatch":
            raise RunError(str(state.mismatch_error(bootstrap))) from None
        topic_exists = state.state == "complete"  # else run_stream (or record_input) replays the rest

    results_dir = Path(options.results_dir or RESULTS_DIR) / run_id
    checkpoint_dir = Path(options.checkpoint_root) / run_id if options.checkpoint_root else results_dir / "checkpoint"
    config = TopologyConfig(
        run_id=run_id, grouping=grouping, dataset=dataset.name, topic=topic, bootstrap_servers=bootstrap,
        checkpoint_dir=checkpoint_dir,
        results_dir=results_dir, grouping_params=dict(options.grouping_params),
        dataset_params=dict(options.dataset_params), **{knob: getattr(options, knob) for knob in TOPOLOGY_KNOBS},
    )
    if options.rescale:
        from bench.rescale.setup import rescale_config

        try:
            config = rescale_config(options, config, topic_exists or bool(options.replay and not options.rate))
        except ValueError as e:
            raise RunError(str(e)) from None
    try:
        config.validate()
    except ValueError as e:
        raise RunError(str(e)) from None
    influx_url = None if options.no_influx else (options.influx_url or stack_config.influx_url)
    master = options.master or default_master(options.workers, options.splitters, options.aggregators)
    return Prepared(options=replace(options, grouping=grouping, partitions=partitions, master=master), config=config,
                    dataset=dataset, splitter_sql=splitter_sql, run_id=run_id, influx_url=influx_url,
                    influx_database=options.influx_database or stack_config.influx_database,
                    topic_exists=topic_exists, stack_started=stack_started, replay_total=replay_total)


def record_input(prepared: list[Prepared], log=print) -> None:
    """Unpaced runs read a recorded topic: replay each missing topic of `prepared` once, as fast as
    possible and before any run starts, then mark every run as reading it (no run competes with
    the replay, and every grouping reads the very same records). The producer's client logs go to
    the first reading run's `logs/driver.log` (`bench.logs.RunLogs`), as during a run: a broker
    that has just started makes librdkafka warn ("Coordinator load in progress: retrying")."""
    from bench.logs import RunLogs
    from producers import replay

    done: set[str] = set()
    for p in prepared:
        topic = p.config.topic
        if not p.topic_exists and topic not in done:
            log(f"recording {p.dataset.name} (limit {p.options.limit}) into {topic} before the runs ...")
            with RunLogs(p.config.results_dir / "logs", p.config.bootstrap_servers, log):
                summary = replay(p.dataset, topic, p.config.bootstrap_servers, partitions=p.options.partitions,
                                 rate=None, limit=p.options.limit, progress=p.options.progress, resume=True)
            if not summary.ok:
                raise RunError(f"the replay into {topic} did not complete: {summary.errors[:3]}")
            done.add(topic)
        p.topic_exists = True


WARM_UP_RECORDS = 50_000


def warm_up(spark, first: Prepared, log=print) -> dict:
    """Run the first grouping once, unmeasured and at cost 0, on the first WARM_UP_RECORDS records
    of the dataset (recorded into `<topic>.warmup`), in a temporary results folder and without
    InfluxDB.

    The first query of a session pays the start-up of the JVM's code paths and of a Python worker
    per task slot and stage: on two busy cores, 150 s more for whichever grouping a run-all ran
    first (NYC_FLIGHTS, 200,000 records, cost 1 ms: SHUFFLE 171 s first and KEY 55 s second, KEY
    258 s first and SHUFFLE 60 s second, 2026-11-25). A warm-up of 5,000 records removed most of
    that but not all: the first measured run's stages before the workers (read, split, grouping)
    still took 12.1-14.9 s for a 200,000-record batch against 5.7-6.1 s in the run after it (the
    JIT compiles the per-record paths only once they have run often). With WARM_UP_RECORDS read
    at cost 0 (the cost is a sleep, nothing to warm), every measured run starts with the same warm
    session. Returns the warm-up's summary (not reported)."""
    import tempfile

    topic = f"{first.config.topic}.warmup"[:249]
    with tempfile.TemporaryDirectory(prefix="bench-warmup-") as folder:
        options = replace(first.options, run_id=f"warmup-{first.run_id}"[:100], topic=topic, own_topic=False,
                          limit=WARM_UP_RECORDS, rate=None, cost_ms=0.0, no_influx=True, results_dir=Path(folder),
                          checkpoint_root=None, experiment_id=None, progress=False)
        prepared = prepare(options, ensure_stack=False, log=log)
        record_input([prepared], log=lambda *_: None)
        log(f"warming up the Spark session ({first.config.grouping}, {WARM_UP_RECORDS} records, not measured) ...")
        return run_stream(prepared, spark=spark, log=lambda *_: None)


def measures_latency(prepared: Prepared) -> bool:
    """Whether the run will report a processing latency: a first attempt (no checkpoint yet) that
    replays its input live at a rate. Such a run starts after `warm_up` when run alone: on two
    cores the session's first batches with data took 5-13 s each (Python workers and JIT starting,
    2026-11-25), and the backlog they left raised the run's LAT p99 from about 5 s (steady
    batches) to 16-21 s; after a warm-up, 12.6 s (one slow batch of 11 s under load)."""
    return bool(prepared.options.rate) and not prepared.topic_exists \
        and not (prepared.config.checkpoint_dir / "main").exists()


def input_conditions(prepared: Prepared) -> dict:
    """How a run gets its input: `live` (it replays the dataset at `rate` records/s while consuming it:
    paced, open loop), `live-unpaced` (it replays as fast as possible while consuming it), or
    `recorded` (it reads a topic recorded before it started, as fast as the topology can)."""
    if prepared.topic_exists:
        return {"mode": "recorded", "rate": None, "paced": False, "topic": prepared.config.topic}
    rate = prepared.options.rate
    return {"mode": "live" if rate else "live-unpaced", "rate": rate, "paced": bool(rate),
            "topic": prepared.config.topic}


def describe_input(conditions: dict | None) -> str:
    """`live 500 rec/s`, `live unpaced`, `recorded`, or `unknown` (a record from before this field)."""
    if not conditions:
        return "unknown"
    if conditions["mode"] == "live":
        return f"live {conditions['rate']:g} rec/s"
    return "live unpaced" if conditions["mode"] == "live-unpaced" else "recorded"


# -- Kafka helpers --------------------------------------------------------------------------------

def end_offsets(bootstrap: str, topic: str, timeout_s: float = 30) -> dict[int, int]:
    from confluent_kafka import Consumer, TopicPartition

    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"bench-offsets-{time.time_ns()}",
                  "enable.auto.commit": False, "log.connection.close": False}, logger=KAFKA_LOGGER)
    try:
        meta = c.list_topics(topic, timeout=timeout_s).topics[topic]
        return {p: c.get_watermark_offsets(TopicPartition(topic, p), timeout=timeout_s)[1] for p in meta.partitions}
    finally:
        c.close()


def ensure_topics(bootstrap: str, topics: dict[str, int]) -> None:
    from producers import check_broker, ensure_topic

    admin = check_broker(bootstrap, timeout_s=15)
    for topic, partitions in topics.items():
        ensure_topic(admin, topic, partitions)


def send_end_of_input(bootstrap: str, topic: str, timestamp_ms: int) -> None:
    from bench.topology.sink import KafkaWriter

    w = KafkaWriter(bootstrap)
    w.producer.produce(topic, key=b"end-of-input", value=b"end-of-input", timestamp=timestamp_ms)
    if w.producer.flush(30):
        raise RunError(f"could not write the end-of-input record to {topic}")


def consumed(progress: dict | None, topic: str, ends: dict[int, int]) -> bool:
    """Whether the batch of `progress` read `topic` up to `ends` (next offset per partition)."""
    from bench.topology.spout import batch_offsets

    got = batch_offsets(progress, topic, "endOffset")
    return all(got.get(p, 0) >= end for p, end in ends.items() if end > 0)


def _watermark_ms(progress: dict | None) -> int:
    wm = ((progress or {}).get("eventTime") or {}).get("watermark")
    return int(datetime.fromisoformat(wm.replace("Z", "+00:00")).timestamp() * 1000) if wm else 0


# -- the run --------------------------------------------------------------------------------------

def run_stream(prepared: Prepared, *, spark=None, log=print) -> dict:
    """Run one grouping to the end (or to `stop_after_batches`). Returns the summary dict.

    Spark's, PySpark's workers' and the clients' logs go to `results/<run_id>/logs/` (`bench.logs`);
    the summary's `logs` block counts their lines; a Kafka outage is two console lines."""
    from bench.logs import RunLogs

    config = prepared.config
    with RunLogs(config.results_dir / "logs", config.bootstrap_servers, log) as logs:
        return _run_stream(prepared, spark=spark, log=log, logs=logs)


def _run_stream(prepared: Prepared, *, spark, log, logs) -> dict:
    from bench.observer.distribution_topic import DistributionTopic
    from bench.observer.influx import InfluxWriter
    from bench.observer.listener import ProgressListener
    from bench.observer.observer import Observer
    from bench.topology import job
    from bench.topology.dead_letters import DeadLetters
    from bench.topology.session import build_session

    o, config = prepared.options, prepared.config
    experiment_id = o.experiment_id or prepared.run_id
    record = RunRecord(prepared.run_id, root=config.results_dir.parent)
    resumed = (config.checkpoint_dir / "main" / "commits").exists()
    tags = {"run_id": prepared.run_id, "grouping": config.grouping, "dataset": config.dataset,
            "workers": str(config.workers)}
    base_run = {"kind": "stream", "master": o.master, "rate": o.rate, "limit": o.limit,
                "partitions": o.partitions, "observer_tick_s": o.observer_tick_s,
                "influx_url": prepared.influx_url, **config.to_dict()}
    base_run["input"] = input_conditions(prepared)
    dataset_info = {"name": prepared.dataset.name, "fingerprint": prepared.dataset.fingerprint()}
    attempts = _previous_attempts(record) if resumed else []
    attempt = {"attempt": len(attempts) + 1, "started_utc": datetime.now(timezone.utc).isoformat(timespec="seconds"),
               "topic_state": None, "records_in_topic_before": None, "records_replayed": 0}
    # records_replayed stays as written if this attempt is killed; the next attempt's
    # records_in_topic_before tells how far it got.
    attempts.append(attempt)

    def write_run_json() -> None:
        # Written as soon as each fact is known, so that a killed attempt leaves what it had.
        record.write_run("stream", base_run, dataset_info, {"resumed": resumed, "experiment_id": experiment_id,
                                                            "attempts": attempts})

    write_run_json()

    topics = {config.topic: o.partitions, config.control_topic: 1, config.aggregates_topic: 1,
              config.dlq_topic: 1, config.distribution_topic: 1}
    if config.transfers:
        from bench.topology import state_transfer

        topics[state_transfer.topic(config.run_id)] = 1
    ensure_topics(config.bootstrap_servers, topics)
    outputs = []
    influx = None
    if prepared.influx_url:
        influx = InfluxWriter(prepared.influx_url, prepared.influx_database, tags, token=o.influx_token,
                              org=o.influx_org, bucket=o.influx_bucket)
        if not influx.reachable():
            log(f"warning: InfluxDB at {prepared.influx_url} is unreachable; the run goes on and its "
                "figures go to the run record (failed writes are counted in summary.json)")

        last_try = [0.0]
        announced = [False]

        def to_influx(row):
            influx.write_row(row)
            # Writes failed (InfluxDB down): one console line; once it answers again, write every
            # tick so far again from the run record.
            if influx.pending_backfill and not announced[0]:
                announced[0] = True
                log(f"InfluxDB at {prepared.influx_url} unreachable ({influx.last_error}); its points are "
                    "kept in metrics.parquet and written when it answers")
            if influx.pending_backfill and time.monotonic() - last_try[0] > 5:
                last_try[0] = time.monotonic()
                if influx.reachable():
                    n = influx.backfill(list(observer.rows))
                    announced[0] = False
                    log(f"InfluxDB at {prepared.influx_url} reachable again: {n:,} points of "
                        f"{len(observer.rows)} ticks written again from the run record")
        outputs.append(to_influx)
    distribution = DistributionTopic(config.bootstrap_servers, config.distribution_topic, prepared.run_id)
    outputs.append(lambda row: distribution.send({**tags, **row}))
    state = None
    if prepared.replay_total is not None:
        from producers import inspect_topic

        state = inspect_topic(config.bootstrap_servers, config.topic, prepared.replay_total, o.partitions)
        attempt.update(topic_state=state.state, records_in_topic_before=state.present)
        write_run_json()
    # Latency is meaningful only when this attempt replays the whole topic while consuming it (a
    # resumed replay stamps the first attempt's intended times).
    live_input = state is not None and state.state in ("absent", "empty")
    rescaler = None
    rescale_spans_now = None  # the observer's source of a rescale run's pauses, for its ticks
    if o.rescale:
        from bench.rescale.figures import rescale_spans
        from bench.rescale.journal import HANDOFF_PHASES, LEARNER_PHASES, SHARED_STATE_PHASES, Journal
        from groupings.rescaling import parse_schedule

        if config.live_rescale:
            from bench.rescale.handoff import Handoff
            from bench.rescale.learner import Learner
            from bench.rescale.shared_state import SharedState

            events = parse_schedule(o.rescale)
            if config.rescale_protocol == "HANDOFF":
                rescaler = Handoff(config, events, Journal(config.results_dir, HANDOFF_PHASES), batch=o.handoff_batch)
                if config.watermark_delay_s != o.watermark_delay_s:
                    log(f"HANDOFF: watermark delay {o.watermark_delay_s} s -> {config.watermark_delay_s} s (held tuples "
                        "keep their event time; docs/rescaling.md, \"HANDOFF on Spark\")")
            else:
                kind, phases = (Learner, LEARNER_PHASES) if config.rescale_protocol == "LEARNER" else \
                    (SharedState, SHARED_STATE_PHASES)
                rescaler = kind(config, events, Journal(config.results_dir, phases))
            rescaler.channel.reopen()
        else:
            from bench.rescale.stop_the_world import StopTheWorld

            rescaler = StopTheWorld(config, parse_schedule(o.rescale), Journal(config.results_dir))
        stopping: list[int] = []  # wall ms at which the driver began a rescale it has not journalled yet

        def rescale_spans_now():
            journalled = rescale_spans(rescaler.journal.events, observer.batches)
            # the query's stop can take seconds before the journal has the event: a tick meanwhile is in it
            began = list(stopping)  # the driver thread may clear it meanwhile
            if began and all((e.get("stop_wall_ms") or 0) < began[0] for e in list(rescaler.journal.events)):
                return journalled + [(began[0], None)]
            return journalled

        def run_event(topology):
            stopping[:] = [int(time.time() * 1000)]
            try:
                return rescaler.run_event(spark, topology, start_query, observer, log)
            finally:
                stopping.clear()

    observer = Observer(prepared.run_id, config.worker_space, config.results_dir, tags=tags, live_input=live_input,
                        outputs=tuple(outputs), record=record, latency_warmup_s=o.latency_warmup_s,
                        rescale_spans=rescale_spans_now)

    own_session = spark is None
    if own_session:
        log(f"starting Spark ({o.master}) ...")
        spark = build_session(o.master, config.aggregators)
    slots = task_slots(spark)
    if slots < config.workers:
        log(f"warning: {slots} Spark task slots for {config.workers} workers ({spark.sparkContext.master}): workers "
            "wait for a slot, so the run measures the slots, not the grouping (the default master gives each "
            "worker a slot)")
    base_run["task_slots"] = slots
    write_run_json()
    dead_letters = DeadLetters(spark, config, prepared.splitter_sql)
    listener = ProgressListener((observer.on_progress, dead_letters.on_progress), job.main_query_name(config))
    listener.attach(spark)
    topology = None
    replay_summary = None
    status = "completed"
    error = None

    def start_query(cfg, once=False):
        return job.start(spark, cfg, prepared.splitter_sql, observer, once=once)

    drove = False  # the driver loop returned (no exception on its way out)
    replaying: BackgroundReplay | None = None  # a rescale run's live replay, beside the driver loop
    ends: dict[int, int] | None = None
    try:
        if rescaler is not None and not rescaler.live and rescaler.next_index() is not None \
                and rescaler.journal.event(rescaler.next_index()):
            # a driver killed in the middle of a rescale: finish it before the query runs again
            rescaler.anchor_clock()
            topology = run_event(None)
            config = rescaler.config
        else:
            topology = start_query(config)
        observer.start(o.observer_tick_s)
        if state is not None and state.state == "mismatch":
            raise RunError(str(state.mismatch_error(config.bootstrap_servers)))
        if state is not None and state.state != "complete":
            from producers import replay

            if state.state == "prefix":
                log(f"{state.describe()}: resuming the replay with the {state.missing:,} missing records "
                    "(same partitions and intended timestamps; idempotent producer)")
            else:
                # A live replay starts once the query has run its first (empty) micro-batch: its
                # start-up (state stores, Python workers: 6-35 s on two busy cores) is not a latency
                # of the records.
                _wait_first_batch(topology, listener, o.timeout_s)
                log(f"replaying {prepared.dataset.name} (limit {o.limit}, rate {o.rate or 'max'}) into {config.topic} ...")
            replay_args = (prepared.dataset, config.topic, config.bootstrap_servers)
            replay_kwargs = dict(partitions=o.partitions, rate=o.rate, limit=o.limit, progress=o.progress,
                                 resume=True)
            if rescaler is None:
                replay_summary = _replayed(replay(*replay_args, **replay_kwargs), config.topic, attempt)
            else:
                # A rescale's time is on the input's clock, and a live input does not wait for a
                # rescale: the driver follows the batches, and stops the query, while the records arrive.
                replaying = BackgroundReplay(replay, *replay_args, **replay_kwargs)

        def input_ends() -> dict[int, int] | None:
            """The input topic's end offsets, once the replay (if any) has handed over every record."""
            nonlocal ends, replay_summary
            if ends is None:
                if replaying is not None:
                    if not replaying.done():
                        return None
                    replay_summary = _replayed(replaying.result(), config.topic, attempt)
                ends = end_offsets(config.bootstrap_servers, config.topic)
            return ends

        def advance():
            rescaler.advance(spark, observer, log)

        status = _drive(topology, listener, dead_letters, observer, config, o, input_ends, log, logs.outage, rescaler,
                        advance)
        while status == "rescale":
            topology = run_event(topology)
            config = rescaler.config
            status = _drive(topology, listener, dead_letters, observer, config, o, input_ends, log, logs.outage,
                            rescaler)
        drove = True
    except KeyboardInterrupt:
        status = "interrupted"
        log(f"interrupted: resume with --run-id {prepared.run_id}")
    except RunError as e:
        status, error = "failed", str(e)
    finally:
        observer.stop()
        if rescaler is not None and rescaler.live:
            rescaler.channel.abort()  # a query paused at a barrier would wait for the channel
        if topology is not None:
            failure = topology.exception()
            topology.stop()
            if failure is not None and error is None:
                status, error = "failed", f"{type(failure).__name__}: {failure}"
        _drain_listener(observer, config)
        listener.detach(spark)
        dead_letters.close()
        if dead_letters.error is not None and error is None:
            status, error = "failed", f"dead letters: {type(dead_letters.error).__name__}: {dead_letters.error}"
        observer.tick()
        if influx is not None:
            backfilled = influx.finish(list(observer.rows))
            if backfilled:
                log(f"InfluxDB: {backfilled:,} points written again from the run record after failed writes")
        distribution.close()
        state_record = None
        if status == "completed" and drove and config.worker_state:
            state_record = _write_worker_state(spark, config, record)
        if own_session:
            spark.stop()

    attempt["status"] = status
    summary = summarize(prepared, observer, replay_summary, status, error, influx, distribution, resumed)
    summary["attempts"] = attempts
    summary["logs"] = logs.summary()
    summary["task_slots"] = slots
    if state_record is not None:
        summary["worker_state"] = state_record
    if rescaler is not None:
        from bench.rescale.setup import rescale_summary

        summary["rescale"] = rescale_summary(rescaler, observer, o.protocol)
        if prepared.influx_url and summary["rescale"]["events"]:
            from bench.rescale.figures import write_influx

            summary["rescale"]["influx"] = write_influx(
                summary["rescale"]["events"], tags, prepared.influx_url, prepared.influx_database,
                token=o.influx_token, org=o.influx_org, bucket=o.influx_bucket)
    record.write_run("stream", base_run, {**dataset_info, "replay": replay_summary.to_dict() if replay_summary else None},
                     {"resumed": resumed, "status": status, "experiment_id": experiment_id,
                      "attempts": attempts})
    record.write_summary(summary)
    return summary


def _write_worker_state(spark, config: TopologyConfig, record: RunRecord) -> dict:
    """`results/<run_id>/state.parquet`: the workers' per-key state at the last committed batch,
    read from the checkpoint with Spark's state data source. Returns its size (rows, keys)."""
    from bench.topology.state_layout import slot_table
    from bench.topology.worker_state import read_final_state

    slots = slot_table(config.worker_space, config.partitions)
    state = read_final_state(spark, str(config.checkpoint_dir / "main"), {s: w for w, s in enumerate(slots)})
    record.write_state(state)
    return {"rows": len(state), "keys": int(state["key"].nunique()), "state_partitions": config.partitions}


def _previous_attempts(record: RunRecord) -> list[dict]:
    """The `attempts` of an earlier run.json of this run (a resume), oldest first."""
    import json

    try:
        return list(json.loads((record.path / "run.json").read_text()).get("attempts") or [])
    except (OSError, ValueError):
        return []


def task_slots(spark) -> int:
    """Tasks the session runs at once: Spark's default parallelism (local[N]: N; a cluster: its cores)."""
    return int(spark.sparkContext.defaultParallelism)


def _wait_first_batch(topology, listener, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while listener.latest is None:
        if topology.exception() is not None:
            raise RunError(f"the query failed: {topology.exception()}")
        if time.monotonic() > deadline:
            raise RunError(f"the query ran no micro-batch within --timeout-s {timeout_s:g}")
        time.sleep(0.2)


def _replayed(summary, topic: str, attempt: dict):
    """The replay's summary, recorded in the attempt; RunError if a record was not delivered."""
    attempt["records_replayed"] = summary.records
    if not summary.ok:
        raise RunError(f"the replay into {topic} did not complete: {summary.errors[:3]}")
    return summary


class BackgroundReplay:
    """`producers.replay(*args, **kwargs)` in a daemon thread: a rescale run's live input, replayed
    while the driver loop follows the batches. A driver that ends meanwhile (Ctrl-C, a failure) does
    not wait for it; the replay is idempotent and resumable, so the run's next attempt sends only
    the records that are missing (`resume=True`)."""

    def __init__(self, replay, *args, **kwargs):
        import threading

        self._result = None
        self._error: BaseException | None = None

        def run():
            try:
                self._result = replay(*args, **kwargs)
            except BaseException as e:  # noqa: BLE001 - handed to the driver by result()
                self._error = e

        self._thread = threading.Thread(target=run, name="replay", daemon=True)
        self._thread.start()

    def done(self) -> bool:
        return not self._thread.is_alive()

    def result(self):
        """The ReplaySummary; raises what the replay raised. Call once `done()`."""
        self._thread.join()
        if self._error is not None:
            raise self._error
        return self._result


def _drive(topology, listener, dead_letters, observer, config: TopologyConfig, o: RunOptions,
           input_ends, log, outage=None, rescaler=None, advance=None) -> str:
    """Wait for: all input processed and its dead letters written -> end-of-input record -> last
    windows closed. Returns "rescale" when a committed batch reaches the next rescale's time of a
    protocol that stops the query; a live protocol's rescale goes on with `advance()` after every
    poll. `input_ends()`: the input topic's end offsets per partition, or None while records are
    still being replayed into it."""
    deadline = time.monotonic() + o.timeout_s
    end_sent_at: int | None = None
    while True:
        if outage is not None:
            outage.check()
        if topology.exception() is not None:
            raise RunError(f"the query failed: {topology.exception()}")
        if dead_letters.error is not None:
            raise RunError(f"writing dead letters failed: {type(dead_letters.error).__name__}: {dead_letters.error}")
        if time.monotonic() > deadline:
            raise RunError(f"the run did not finish within --timeout-s {o.timeout_s:g}")
        progress = listener.latest
        data_batches = sum(1 for b in observer.batches.values() if b["rows"] > 0)
        if o.stop_after_batches is not None and data_batches >= o.stop_after_batches:
            return "stopped"
        if rescaler is not None and rescaler.next_index() is not None and data_batches:
            rescaler.anchor_clock()
            if rescaler.live:
                advance()
            elif rescaler.due(observer):
                return "rescale"
        if end_sent_at is None:
            ends = input_ends()
            rescale_waits = rescaler is not None and rescaler.reached(observer)
            if ends is not None and not rescale_waits and consumed(progress, config.topic, ends) \
                    and dead_letters.covers(ends):
                max_ts = max((b.get("max_ts_ms") or 0 for b in observer.batches.values()), default=0)
                if max_ts == 0 and any(ends.values()):
                    time.sleep(0.5)  # the listener has not delivered the batches yet
                    continue
                end_sent_at = max_ts + config.close_horizon_ms
                log(f"input consumed ({sum(ends.values())} records); closing the last windows ...")
                observer.tick()
                send_end_of_input(config.bootstrap_servers, config.control_topic, end_sent_at)
        else:
            closed = (consumed(progress, config.control_topic, {0: 1})
                      and _watermark_ms(progress) >= end_sent_at - 1000 * config.watermark_delay_s
                      and progress is not None and progress.get("numInputRows", 1) == 0
                      and _window_state_rows(progress) == 0)
            if closed:
                return "completed"
        time.sleep(0.5)


def _window_state_rows(progress: dict) -> int:
    return sum(int(op.get("numRowsTotal") or 0) for op in progress.get("stateOperators") or []
               if "transformWithState" not in str(op.get("operatorName")))


def _drain_listener(observer, config: TopologyConfig, timeout_s: float = 15.0) -> None:
    """Wait until the observer has the progress of the last committed batch (events are asynchronous)."""
    commits = config.checkpoint_dir / "main" / "commits"
    ids = [int(p.name) for p in commits.glob("[0-9]*")] if commits.exists() else []
    if not ids:
        return
    last = max(ids)
    deadline = time.monotonic() + timeout_s
    while observer.last_committed_batch() < last and time.monotonic() < deadline:
        time.sleep(0.2)


def missed_batches(config: TopologyConfig, observer, offline: set[int] = frozenset()) -> list[int]:
    """Batch ids committed in the checkpoint whose progress the observer never received (`offline`:
    batches that `repartition` wrote, which read no input and send no progress)."""
    commits = config.checkpoint_dir / "main" / "commits"
    ids = {int(p.name) for p in commits.glob("[0-9]*")} if commits.exists() else set()
    return sorted(ids - set(observer.batches) - set(offline))


def summarize(prepared: Prepared, observer, replay_summary, status, error, influx, distribution, resumed) -> dict:
    from bench.observer.observer import exact_worker_figures, hottest_keys, window_latency_figures
    from bench.topology.sink import read_batches

    config = prepared.config
    agg = observer.final_aggregates()
    exact = exact_worker_figures(agg, config.worker_space)
    last = observer.rows[-1] if observer.rows else {}
    dlq = read_batches(config.results_dir / "dlq")
    dlq = dlq.drop_duplicates(["partition", "offset"]) if len(dlq) else dlq
    dead_letters = int(len(dlq))
    by_reason = ({str(k): int(v) for k, v in dlq["reason"].value_counts().sort_index().items()}
                 if len(dlq) else {})
    batches = observer.batches.values()
    split_weight = sum(b["split_weight"] for b in batches)
    expected = None
    if replay_summary is not None and replay_summary.key_distribution:
        kd = replay_summary.key_distribution
        expected = (kd.get("weighted") or {}).get("total", kd.get("tuples"))
    # A driver killed after Spark committed a batch and before the observer journalled its progress
    # event: Spark does not run that batch again, so its observed figures (split weight, per-worker
    # loads) are gone. The two checks that sum them cannot be evaluated (None); the exact figures
    # come from the aggregates whatever happened.
    from bench.rescale.journal import Journal

    missed = missed_batches(config, observer, Journal(config.results_dir).offline_batches())
    checks = {
        "aggregated_equals_split": None if missed else exact["total_count"] == split_weight,
        "aggregated_equals_produced": None if expected is None else exact["total_count"] == expected,
        "observer_equals_aggregated": None if missed else int(sum(observer.loads())) == exact["total_count"],
        "no_rows_dropped_by_watermark": (last.get("dropped_by_watermark") or 0) == 0,
    }
    return {
        "status": status,
        "mode": "stream",
        "input": input_conditions(prepared),
        "error": error,
        "resumed": resumed,
        "grouping": config.grouping,
        "dataset": config.dataset,
        "workers": config.workers,
        "splitters": config.splitters,
        "topic": config.topic,
        "reference": {k: last.get(k) for k in ("std_dev", "dist_cost", "throughput_ratio", "total_count", "duration_ms")},
        "exact": exact,
        # Latency only when the run consumed its input while replaying it: on a recorded topic,
        # a time minus the Kafka timestamp is the topic's age. `latency`: processing latency (Kafka
        # timestamp to the worker's processing, HDR histograms); `window_latency`: aggregator output.
        "latency": observer.run_latency(),
        # First to last tuple processed by the workers (their clocks), and each worker's busy span.
        "processing": observer.processing_span(),
        "window_latency": window_latency_figures(agg) if len(agg) and observer.live_input else {},
        "hottest_keys": hottest_keys(agg),
        "records": sum(b["records"] for b in batches),
        "malformed": sum(b["malformed"] for b in batches),
        "dead_letters": dead_letters,
        "dead_letters_by_reason": by_reason,
        "split_weight": split_weight,
        "produced_weight": expected,
        "checks": checks,
        "batches": len(observer.batches),
        "ticks": len(observer.rows),
        "influx": influx.status() if influx is not None else None,
        "distribution_topic": distribution.status(),
        "output_errors": observer.output_errors[:5],
        "observer_missed_batches": missed,
        "results": str(config.results_dir),
    }


# -- printing -------------------------------------------------------------------------------------

COLUMNS = [("grouping", "GROUPING"), ("total", "TOTAL COUNT"), ("duration", "DURATION (ms)"),
           ("std_dev", "STD DEV"), ("dist_cost", "DIST COST"), ("throughput", "THROUGHPUT (rec/sec)"),
           ("imbalance", "MAX/MEAN"), ("proc", "PROC TIME (ms)"), ("proc_rate", "PROC RATE (rec/sec)"),
           ("p99", "LAT p99 (ms)"), ("p999", "LAT p99.9 (ms)"),
           ("window_p99", "WINDOW LAT p99 (ms)"), ("status", "STATUS")]
"""PROC TIME: first to last tuple processed by the workers; PROC RATE: tuples / PROC TIME (the worker
stage's own rate, without the micro-batch's other stages and the first batch's start-up). LAT:
processing latency (Kafka timestamp to the worker's processing of the tuple); WINDOW LAT:
aggregator output time minus Kafka timestamp (mostly the aggregation window)."""


def summary_row(s: dict) -> dict:
    ref, ex, lat, wlat = s["reference"], s["exact"], s.get("latency") or {}, s.get("window_latency") or {}
    proc = (s.get("processing") or {}).get("duration_ms")
    proc_rate = ex["total_count"] * 1000.0 / proc if proc and ex.get("total_count") else None

    def f(v, fmt):
        return "-" if v is None else (fmt % v if isinstance(v, int | float) else str(v))
    ok = s["status"] == "completed" and all(v is not False for v in s["checks"].values())
    return {
        "grouping": s["grouping"], "total": f(ex["total_count"], "%d"), "duration": f(ref.get("duration_ms"), "%d"),
        "std_dev": f(ex["std_dev"], "%.4f"), "dist_cost": f(ex["dist_cost"], "%.4f"),
        "throughput": f(ref.get("throughput_ratio"), "%.0f"), "imbalance": f(ex["max_mean_imbalance"], "%.3f"),
        "proc": f(proc, "%d"), "proc_rate": f(proc_rate, "%.0f"),
        "p99": f(lat.get("latency_p99_ms"), "%.1f"), "p999": f(lat.get("latency_p999_ms"), "%.1f"),
        "window_p99": f(wlat.get("window_latency_p99_ms"), "%.0f"),
        "status": s["status"] if ok else f"{s['status']} (checks failed)" if s["status"] == "completed" else s["status"],
    }


def input_header(summaries: list[dict]) -> tuple[str, bool]:
    """The table's first line, stating the runs' input conditions, and whether they differ."""
    conditions = sorted({describe_input(s.get("input")) for s in summaries})
    if len(conditions) > 1:
        return (f"input: MIXED ({', '.join(conditions)}): these rows ran under different input conditions and "
                "are not comparable (see the INPUT column)", True)
    what = conditions[0]
    if what.startswith("live ") and what != "live unpaced":
        return (f"input: {what}, every run replays the same records while it consumes them (paced, open loop; "
                "LAT = processing latency from the intended send time)", False)
    if what == "recorded":
        return ("input: recorded topic, every run reads the same records as fast as it can (THROUGHPUT is its "
                "capacity; no latency: a record's age is not a latency)", False)
    return f"input: {what}", False


def format_table(summaries: list[dict]) -> str:
    header, mixed = input_header(summaries)
    columns = COLUMNS[:-1] + [("input", "INPUT"), COLUMNS[-1]] if mixed else COLUMNS
    rows = [{**summary_row(s), "input": describe_input(s.get("input"))} for s in summaries]
    widths = {k: max(len(h), *(len(r[k]) for r in rows)) for k, h in columns}
    lines = [header, "  ".join(h.ljust(widths[k]) for k, h in columns)]
    lines += ["  ".join(r[k].ljust(widths[k]) for k, _ in columns) for r in rows]
    for s in summaries:
        if s.get("task_slots") is not None and s["task_slots"] < s["workers"]:
            lines.append(f"note: {s['grouping']} ran {s['workers']} workers on {s['task_slots']} task slots: workers "
                         "waited for a slot (its figures measure the slots, not the grouping)")
    return "\n".join(lines)
