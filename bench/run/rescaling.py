"""A --rescale run, as the run's driver sees it: the protocol's driver that follows the schedule
(`rescaler_for`), the pauses the observer marks its ticks with (`RescaleSpans`), and the
summary's `rescale` block (`rescale_record`). The protocols themselves are `bench.rescale`'s."""

from __future__ import annotations

from bench.rescale.figures import rescale_spans, write_influx
from bench.rescale.handoff import Handoff
from bench.rescale.handoff_realtime import RealtimeHandoff
from bench.rescale.journal import HANDOFF_PHASES, LEARNER_PHASES, SHARED_STATE_PHASES, Journal
from bench.rescale.learner import Learner
from bench.rescale.learner_realtime import RealtimeLearner
from bench.rescale.setup import rescale_summary
from bench.rescale.shared_state import SharedState
from bench.rescale.shared_state_realtime import RealtimeSharedState
from bench.rescale.stop_the_world import StopTheWorld
from bench.rescale.stop_the_world_realtime import RealtimeStopTheWorld
from bench.run.options import RunOptions
from bench.topology.config import TopologyConfig
from groupings.rescaling import parse_schedule


def rescaler_for(config: TopologyConfig, options: RunOptions, log=print):
    """The driver of `options.rescale`'s schedule under `config.rescale_protocol`: StopTheWorld (the
    query stops for each event; RealtimeStopTheWorld in real-time mode), or a live protocol's driver
    (SHARED_STATE, LEARNER, HANDOFF: the query reads the rescale channel, reopened here for this
    attempt; RealtimeSharedState, RealtimeLearner and RealtimeHandoff in real-time mode, whose routers
    read it)."""
    events = parse_schedule(options.rescale)
    if config.realtime and not config.live_rescale:
        return RealtimeStopTheWorld(config, events, Journal(config.results_dir))
    if not config.live_rescale:
        return StopTheWorld(config, events, Journal(config.results_dir))
    if config.rescale_protocol == "HANDOFF":
        kind = RealtimeHandoff if config.realtime else Handoff
        rescaler = kind(config, events, Journal(config.results_dir, HANDOFF_PHASES), batch=options.handoff_batch)
        if config.watermark_delay_s != options.watermark_delay_s:
            log(f"HANDOFF: watermark delay {options.watermark_delay_s} s -> {config.watermark_delay_s} s (held tuples "
                "keep their event time; docs/rescaling.md, \"HANDOFF on Spark\")")
    else:
        if config.rescale_protocol == "LEARNER":
            kind, phases = RealtimeLearner if config.realtime else Learner, LEARNER_PHASES
        else:
            kind, phases = RealtimeSharedState if config.realtime else SharedState, SHARED_STATE_PHASES
        rescaler = kind(config, events, Journal(config.results_dir, phases))
    rescaler.channel.reopen()
    return rescaler


class RescaleSpans:
    """The observer's source of a rescale run's pauses, for its ticks: `(stop, resumed)` wall-clock
    spans, epoch ms, of the journalled events (`bench.rescale.figures.rescale_spans`), and the
    pause the driver has begun but not journalled yet (a query's stop can take seconds before the
    journal has the event: a tick meanwhile is in it)."""

    def __init__(self, rescaler, batches):
        """`batches()`: the observer's batch figures by batch id."""
        self.rescaler = rescaler
        self.batches = batches
        self.stopping_since: int | None = None
        """Wall ms at which the driver began a rescale it has not journalled yet (set and cleared by
        the driver thread, read by the observer's)."""

    def __call__(self) -> list[tuple[int, int | None]]:
        journalled = rescale_spans(self.rescaler.journal.events, self.batches())
        began = self.stopping_since  # read once: the driver thread may clear it meanwhile
        if began is not None and all((e.get("stop_wall_ms") or 0) < began for e in list(self.rescaler.journal.events)):
            return journalled + [(began, None)]
        return journalled


def rescale_record(rescaler, observer, options: RunOptions, tags: dict, influx_url: str | None,
                   influx_database: str) -> dict:
    """summary.json's `rescale` block (`bench.rescale.setup.rescale_summary`); with InfluxDB, the
    events' points written too (its `influx` entry says how that went)."""
    record = rescale_summary(rescaler, observer, options.protocol)
    if influx_url and record["events"]:
        record["influx"] = write_influx(record["events"], tags, influx_url, influx_database,
                                        token=options.influx_token, org=options.influx_org, bucket=options.influx_bucket)
    return record
