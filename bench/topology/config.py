"""The configuration of one streaming run: every knob of the topology, validated before Spark starts.

Defaults are the reference's (dkg-reference.md §12) where it has one: 10 splitters, 10 aggregators,
1 ms of simulated cost per tuple, 15 s worker windows, 60 s aggregator windows.

Each knob a user sets is declared once, as a field of `TopologySettings` whose metadata
(`bench.settings.setting`) says its help, unit and flag: the command line's flags (`bench/cli/run.py`),
`docs/settings.md` and the README's table of Makefile variables are made from these fields, and
`bench.run.RunOptions` and `TopologyConfig` inherit them.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

from bench.settings import setting
from bench.settings.input import DatasetSettings
from bench.topology import jvm_stage
from datasets.base import MAX_KEY_BYTES
from groupings import GROUPINGS

GROUPING_CLOCKS = ("kafka", "processing")
MODES = ("microbatch", "realtime")
"""The execution modes (docs/topology.md, "Two execution modes"): the whole topology in one
micro-batch query (`bench.topology.job`), or the tuple's path in Spark's Real-Time Mode and the
aggregator in a micro-batch query over its output (`bench.topology.realtime`)."""
MIN_REALTIME_BATCH_S = 5
"""Spark's `spark.sql.streaming.realTimeMode.minBatchDuration` (5,000 ms by default)."""


@dataclass(frozen=True, kw_only=True)
class TopologySettings(DatasetSettings):
    """The topology's knobs a user sets per run: the dataset (`DatasetSettings`) and the grouping,
    parallelism, cost, windows and trigger. `bench.run.RunOptions` adds the run's own settings, `TopologyConfig` the
    values derived when a run starts (its id, topic, folders)."""

    grouping: str = field(metadata=setting(" | ".join(GROUPINGS), cli_default="DYNAMIC_KEY", makefile="GROUPING",
                                           commands=("run",),
                                           details="or an installed plugin's name, or package.module:Class"))
    grouping_params: dict = field(default_factory=dict, metadata=setting(
        "grouping parameter, repeatable", flag="--param", metavar="K=V"))
    workers: int = field(default=10, metadata=setting("worker tasks W", makefile="WORKERS"))
    splitters: int = field(default=10, metadata=setting("splitter instances S = grouping instances",
                                                        makefile="SPLITTERS"))
    aggregators: int = field(default=10, metadata=setting("aggregator partitions A"))
    cost_ms: float = field(default=1.0, metadata=setting("simulated processing cost per tuple", "ms",
                                                         makefile="COST_MS"))
    cost_every: int = field(default=1, metadata=setting("sleep --cost-ms once every K tuples, the reference's xK"))
    worker_window_s: int = field(default=15, metadata=setting("worker tumbling window", "s"))
    aggregator_window_s: int = field(default=60, metadata=setting("aggregator tumbling window", "s"))
    watermark_delay_s: int = field(default=10, metadata=setting("event-time watermark delay", "s"))
    max_offsets_per_trigger: int | None = field(default=None, metadata=setting(
        "Kafka records per micro-batch at most"))
    trigger_s: float = field(default=1.0, metadata=setting(
        "micro-batch trigger interval", "s",
        details="real-time mode: the aggregator query runs every half observer tick instead"))
    mode: str = field(default="microbatch", metadata=setting(
        "execution mode", choices=MODES, makefile="MODE",
        details="realtime: spout to worker windows in Spark's Real-Time Mode, the aggregator in a micro-batch "
                "query over their output (docs/topology.md, \"Two execution modes\")"))
    realtime_batch_s: int = field(default=300, metadata=setting(
        "real-time mode: the real-time query's batch, its checkpoint interval", "s",
        details=f"at least {MIN_REALTIME_BATCH_S}; the query stalls for about a second at each batch boundary"))
    grouping_clock: str = field(default="kafka", metadata=setting(
        "grouping clock: the tuple's Kafka timestamp or wall time at the splitter", choices=GROUPING_CLOCKS,
        details="with kafka, the replay rate sets the time span the groupings see"))
    max_key_bytes: int = field(default=MAX_KEY_BYTES, metadata=setting(
        "longest key", "UTF-8 bytes", details="a record with a longer key is a dead letter, reason 'key too long'"))
    worker_state: bool = field(default=False, metadata=setting(
        "each worker keeps its per-key state in Spark's state store and the run writes it to state.parquet "
        "(one more stateful stage per batch; a --rescale run always keeps it)"))
    """Off by default: the extra stateful stage made a paced run's micro-batches 1.75 -> 3.1 s
    (median) and its LAT p99 3.7 -> 5.6 s (make bench, 2026-11-25); a rescale run turns it on (the
    state is what a rescale moves; `bench.topology.worker_state`)."""


def topology_settings(options: TopologySettings) -> dict[str, Any]:
    """The values of `options`' topology settings, by name (to build a `TopologyConfig`)."""
    return {f.name: getattr(options, f.name) for f in fields(TopologySettings)}


@dataclass(frozen=True, kw_only=True)
class TopologyConfig(TopologySettings):
    """One run of the topology. Build it, call `validate()`, then hand it to `bench.topology.job`."""

    run_id: str
    topic: str
    bootstrap_servers: str
    checkpoint_dir: Path
    results_dir: Path
    max_parallelism: int = 0
    """M: the worker ids the worker stage has partitions and state slots for (0: `workers`). A
    rescale run sizes it for the largest worker count of its schedule, so that a worker added later
    has its task; the observer's per-worker figures cover these ids."""
    state_partitions: int = 0
    """N: the state partitions of the query's stateful operators (0: `aggregators`, which fixes them
    when the checkpoint is created; `repartition` in a STOP_THE_WORLD rescale changes them)."""
    switches: tuple = ()
    """Rescales applied so far: `(switch batch, target)`, the first batch routed by the new routing
    and the schedule's target (a worker count or '+id'/'-id' changes), in order."""
    rescale_routings: tuple = ()
    """A rescale run's routings, decided by the control plane: the one in force after each event of
    its schedule, in order, as the JVM grouping stage installs them (`bench.rescale.plan.java_routing`:
    `{"workers": n}` for KEY, `{"owners": [...]}` for KEY_GROUP and VNODE)."""
    rescale_protocol: str = ""
    """A rescale run's protocol ("": no rescale). STOP_THE_WORLD: the query reads the state-transfer
    channel `<run>.state` and is restarted with `switches`; SHARED_STATE, LEARNER and HANDOFF: it reads the
    rescale channel (`bench.topology.rescale_channel`, in `rescale_channel_dir`) and is never
    restarted."""

    @property
    def transfers(self) -> bool:
        """The query reads the state-transfer topic `<run>.state` (STOP_THE_WORLD; a real-time query's
        SHARED_STATE and LEARNER too: Real-Time Mode refuses the rescale channel as a source)."""
        return self.rescale_protocol == "STOP_THE_WORLD" or (self.realtime and self.live_rescale)

    @property
    def data_plane(self) -> str:
        """Where the grouping stage routes: "jvm" (`bench.topology.jvm_stage`: a built-in grouping with
        parameters the Java port takes; every rescale run) or "python" (`bench.topology.grouping_stage`)."""
        return jvm_stage.data_plane(self.grouping, self.grouping_params)

    @property
    def live_rescale(self) -> bool:
        """The query reads the rescale channel (SHARED_STATE, LEARNER, HANDOFF)."""
        return self.rescale_protocol in ("SHARED_STATE", "LEARNER", "HANDOFF")

    @property
    def rescale_channel_dir(self) -> Path:
        return self.checkpoint_dir / "rescale-channel"

    @property
    def worker_space(self) -> int:
        """M, resolved: `max_parallelism` or W."""
        return self.max_parallelism or self.workers

    @property
    def partitions(self) -> int:
        """N, resolved: `state_partitions` or A."""
        return self.state_partitions or self.aggregators

    @property
    def realtime(self) -> bool:
        """The run's tuples go through Spark's Real-Time Mode (`--mode realtime`)."""
        return self.mode == "realtime"

    @property
    def realtime_query_tasks(self) -> int:
        """The tasks of the real-time query, all running for its whole batch (Real-Time Mode schedules
        its stages together): the spout and splitter (one per Kafka partition, at most S), the
        grouping stage, the worker windows and, with `--worker-state`, the worker-state operator (N
        state partitions each), the workers (M) and a rescale's state-transfer topic (one
        partition)."""
        stateful = 3 if self.worker_state else 2
        return self.splitters + stateful * self.partitions + self.worker_space + int(self.transfers)

    @property
    def realtime_task_slots(self) -> int:
        """The task slots a real-time run needs: the real-time query's tasks, which must all find a
        free slot at each batch's start ("[CONCURRENT_SCHEDULER_INSUFFICIENT_SLOT] Cannot run the
        pipelined stage group" otherwise), plus the other jobs that may run then: the input audit's
        (a task per partition read, at most S), the aggregator query's (one) and a live rescale's read
        of the workers' state while the query waits at its barrier (one)."""
        return self.realtime_query_tasks + self.splitters + 2 + int(self.live_rescale)

    @property
    def state_checkpoint(self) -> Path:
        """The checkpoint of the query whose operators hold the tuples' state (the grouping stage's,
        the workers'): the main query's, or in real-time mode the real-time query's."""
        return self.checkpoint_dir / ("realtime" if self.realtime else "main")

    @property
    def query_checkpoint(self) -> Path:
        """The checkpoint whose committed batches say the run has started before: the query's, or
        in real-time mode the aggregator query's."""
        return self.checkpoint_dir / ("aggregator" if self.realtime else "main")

    @property
    def partials_topic(self) -> str:
        """Real-time mode: the worker windows' partials, as the real-time query updates them."""
        return f"{self.run_id}.partials"

    @property
    def aggregates_topic(self) -> str:
        return f"{self.run_id}.aggregates"

    @property
    def dlq_topic(self) -> str:
        return f"{self.run_id}.dlq"

    @property
    def distribution_topic(self) -> str:
        return f"{self.run_id}.distribution"

    @property
    def control_topic(self) -> str:
        """Carries the end-of-input watermark record (see `bench.topology.spout`); never dataset data."""
        return f"{self.run_id}.control"

    @property
    def watermark_delay(self) -> str:
        """The event-time watermark's delay as `withWatermark` takes it ("10 seconds"): the query's one
        watermark, on the source's `kafka_ts` or after the grouping stage (`bench.topology.realtime`)."""
        return f"{self.watermark_delay_s} seconds"

    @property
    def close_horizon_ms(self) -> int:
        """How far past the last input timestamp the end-of-input record must lie so that the
        watermark closes the last worker window and the last aggregator window."""
        return 1000 * (self.worker_window_s + self.aggregator_window_s + self.watermark_delay_s + 1)

    def validate(self) -> "TopologyConfig":
        """Raises ValueError naming the first bad value."""
        checks = [
            (self.workers >= 1, f"--workers must be >= 1, got {self.workers}"),
            (self.splitters >= 1, f"--splitters must be >= 1, got {self.splitters}"),
            (self.aggregators >= 1, f"--aggregators must be >= 1, got {self.aggregators}"),
            (self.cost_ms >= 0, f"--cost-ms must be >= 0, got {self.cost_ms}"),
            (self.cost_every >= 1, f"--cost-every must be >= 1, got {self.cost_every}"),
            (self.worker_window_s >= 1, f"--worker-window-s must be >= 1, got {self.worker_window_s}"),
            (self.aggregator_window_s >= self.worker_window_s,
             f"--aggregator-window-s ({self.aggregator_window_s}) must be >= --worker-window-s ({self.worker_window_s})"),
            (self.aggregator_window_s % self.worker_window_s == 0,
             f"--aggregator-window-s ({self.aggregator_window_s}) must be a multiple of --worker-window-s "
             f"({self.worker_window_s}) so that every worker window falls in one aggregator window"),
            (self.watermark_delay_s >= 0, f"--watermark-delay-s must be >= 0, got {self.watermark_delay_s}"),
            (self.max_offsets_per_trigger is None or self.max_offsets_per_trigger >= 1,
             f"--max-offsets-per-trigger must be >= 1, got {self.max_offsets_per_trigger}"),
            (self.trigger_s >= 0, f"--trigger-s must be >= 0, got {self.trigger_s}"),
            (self.grouping_clock in GROUPING_CLOCKS,
             f"--grouping-clock must be one of {', '.join(GROUPING_CLOCKS)}, got {self.grouping_clock!r}"),
            (bool(self.topic), "--topic must not be empty"),
            (self.max_key_bytes >= 1, f"--max-key-bytes must be >= 1, got {self.max_key_bytes}"),
            (self.max_parallelism == 0 or self.max_parallelism >= self.workers,
             f"max parallelism {self.max_parallelism} is below --workers {self.workers}"),
            (self.mode in MODES, f"--mode must be one of {', '.join(MODES)}, got {self.mode!r}"),
            (self.realtime_batch_s >= MIN_REALTIME_BATCH_S,
             f"--realtime-batch-s must be >= {MIN_REALTIME_BATCH_S} (Spark's minimum), got {self.realtime_batch_s}"),
        ]
        for ok, message in checks:
            if not ok:
                raise ValueError(message)
        return self

    def to_dict(self) -> dict:
        out = asdict(self)
        out["checkpoint_dir"] = str(self.checkpoint_dir)
        out["results_dir"] = str(self.results_dir)
        out["switches"] = [list(s) for s in self.switches]
        out["rescale_routings"] = list(self.rescale_routings)
        out["topics"] = {
            "input": self.topic,
            "aggregates": self.aggregates_topic,
            "dlq": self.dlq_topic,
            "distribution": self.distribution_topic,
            "control": self.control_topic,
            **({"partials": self.partials_topic} if self.realtime else {}),
        }
        return out
