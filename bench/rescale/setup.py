"""A rescale run's configuration and summary (bench run --rescale): the glue between the driver
(bench/run/) and the protocols on Spark (bench/rescale/stop_the_world.py, shared_state.py,
learner.py, handoff.py)."""

from __future__ import annotations

from dataclasses import replace

from bench.rescale import ownership
from bench.rescale.driver import batch_ids, checkpoint_partitions
from bench.rescale.figures import add_event_figures
from bench.rescale.handoff import HANDOFF_MIN_WATERMARK_DELAY_S
from bench.rescale.journal import Journal
from bench.rescale.kafka_clock import topic_span_ms
from bench.rescale.plan import java_routing, routing_at
from bench.topology.config import TopologyConfig
from bench.topology.jvm_stage import JVM_PARAMETERS
from groupings.rescaling import PROTOCOLS, check_rescalable, check_schedule, parse_schedule

SPARK_PROTOCOLS = ("STOP_THE_WORLD", "SHARED_STATE", "LEARNER", "HANDOFF")
"""The rescale protocols the Spark topology runs (docs/rescaling.md, "On Spark"): all four."""
LIVE_PROTOCOLS = ("SHARED_STATE", "LEARNER", "HANDOFF")
"""The protocols that rescale inside the running query (the rescale channel), never restarting it."""


def rescale_config(options, config: TopologyConfig, topic_complete: bool) -> TopologyConfig:
    """The config of a rescale run: schedule and protocol checked (the simulator's checks, and the
    input's event-time span when the topic holds it), max parallelism M = the largest worker count
    of the schedule, and the protocol's channels. STOP_THE_WORLD: the state-transfer topic, and the
    switches a resumed run already made (the restarted query's plan carries them); N starts at A
    (in real-time mode it is max(A, M) for the whole run).
    SHARED_STATE, LEARNER and HANDOFF: the rescale channel; the layout is fixed for the run at N =
    max(A, M), so that a worker added later already has its state partition. Every protocol: the
    routing after each event (`rescale_routings`, for the JVM grouping stage). HANDOFF also raises the
    watermark delay to `HANDOFF_MIN_WATERMARK_DELAY_S` (held tuples keep their event time).

    Args: options: `bench.run.RunOptions` (`rescale`, `protocol`, `handoff_batch`); topic_complete:
        the input topic holds the whole input (its span is checked).
    Raises: ValueError, one clear message each: a grouping parameter the JVM stage does not take (the
        Python stage does not rescale), an unknown protocol, `--handoff-batch` below 1 or
        with another protocol, HANDOFF with KEY (its units are the input's keys, which a streaming
        run does not know in advance), and the simulator's checks of the schedule.
    """
    protocol = options.protocol.strip().upper()
    events = parse_schedule(options.rescale)
    check_rescalable(config.grouping)
    if config.data_plane != "jvm":
        raise ValueError(f"a rescale run routes in the JVM grouping stage, where {config.grouping} takes the integer "
                         f"parameters {', '.join(JVM_PARAMETERS.get(config.grouping, ())) or '(none)'}; "
                         f"got --param {config.grouping_params}")
    if protocol not in PROTOCOLS:
        raise ValueError(f"unknown protocol {options.protocol!r}; valid: {', '.join(PROTOCOLS)}")
    batch = getattr(options, "handoff_batch", 1)
    if isinstance(batch, bool) or not isinstance(batch, int) or batch < 1:
        raise ValueError(f"--handoff-batch must be an integer >= 1 (units per round), got {batch!r}")
    if batch != 1 and protocol != "HANDOFF":
        raise ValueError(f"--handoff-batch applies to HANDOFF only, not {protocol}")
    if protocol == "HANDOFF" and config.grouping.upper() == "KEY":
        raise ValueError("HANDOFF on Spark hands over key groups or vnodes (KEY_GROUP, VNODE): KEY's units are "
                         "the input's keys, which a streaming run does not know before they arrive; "
                         "bench simulate runs HANDOFF with KEY")
    span = topic_span_ms(config.bootstrap_servers, config.topic) if topic_complete else None
    check_schedule(events, span if span is not None else 2**62,
                   routing_at(config.grouping, config.workers, config.grouping_params, []))
    sizes, routing = [config.workers], routing_at(config.grouping, config.workers, config.grouping_params, [])
    routings = []
    for e in events:
        routing.reschedule(e.target)
        sizes.append(max(routing.workers) + 1)
        routings.append(java_routing(routing))
    checkpoint = config.state_checkpoint
    partitions = checkpoint_partitions(checkpoint) if batch_ids(checkpoint / "offsets") else 0
    if protocol in LIVE_PROTOCOLS:
        delay = config.watermark_delay_s
        if protocol == "HANDOFF":  # a held tuple keeps its event time until its release, a round later
            rounds_s = 3 * config.realtime_batch_s if config.realtime else 0  # a real-time round: a batch or two
            delay = max(delay, HANDOFF_MIN_WATERMARK_DELAY_S, rounds_s)
        return replace(config, max_parallelism=max(sizes), rescale_protocol=protocol, watermark_delay_s=delay,
                       rescale_routings=tuple(routings),
                       state_partitions=partitions or max(config.aggregators, max(sizes)), worker_state=True)
    switches = tuple(Journal(config.results_dir).switches())
    if config.realtime and not partitions:
        partitions = max(config.aggregators, max(sizes))  # no repartition in real-time mode (stop_the_world_realtime)
    return replace(config, max_parallelism=max(sizes), rescale_protocol=protocol, switches=switches,
                   rescale_routings=tuple(routings),
                   state_partitions=partitions, worker_state=True)


def rescale_summary(rescaler, observer, protocol: str) -> dict:
    """summary.json `rescale`: the schedule, the protocol, each event's figures and the ownership
    check over every batch's routed (worker, key) pairs (bench/rescale/ownership.py), and the
    throughput, latency and imbalance around each event (bench/rescale/figures.py)."""
    c = rescaler.config
    switches = rescaler.ownership_switches()
    batches = observer.batch_details()  # with each batch's pairs and latency, which the observer folds
    bad = ownership.violations(batches, [(b, routing) for b, routing, _ in switches],
                               routing_at(c.grouping, c.workers, c.grouping_params, []))
    first = {}  # event index -> its first switch batch
    for b, _, index in switches:
        first.setdefault(index, b)
    bounds = [first.get(i, 10**18) for i in range(len(rescaler.events))] + [10**18]

    def per_event(index: int) -> int:
        return sum(1 for b, _, _ in bad if bounds[index] <= b < bounds[index + 1])

    # The schedule's clock: an attempt resumed after the last event never needed it (a SIGKILLed
    # driver's resume crashed here at the run's end, make nemesis 2026-11-29).
    rescaler.anchor_clock()
    events = rescaler.event_records(observer, per_event)
    add_event_figures(events, batches, observer.live_input)
    return {"schedule": [e.label() for e in rescaler.events], "protocol": protocol.strip().upper(),
            **({"handoff_batch": rescaler.batch} if protocol.strip().upper() == "HANDOFF" else {}),
            "worker_id_space": c.worker_space, "ownership_violations": len(bad),
            "ownership_violations_unit": "routed (batch, worker, key) pairs", "events": events}
