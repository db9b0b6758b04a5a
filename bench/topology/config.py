"""The configuration of one streaming run: every knob of the topology, validated before Spark starts.

Defaults are the reference's (dkg-reference.md §12) where it has one: 10 splitters, 10 aggregators,
1 ms of simulated cost per tuple, 15 s worker windows, 60 s aggregator windows.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path

GROUPING_CLOCKS = ("kafka", "processing")

TOPOLOGY_KNOBS = ("workers", "splitters", "aggregators", "cost_ms", "cost_every", "worker_window_s",
                  "aggregator_window_s", "watermark_delay_s", "max_offsets_per_trigger", "trigger_s",
                  "grouping_clock", "max_key_bytes", "worker_state")
"""The fields a user sets per run (`bench.run.RunOptions` carries them under the same names and
takes its defaults from here); the other fields are derived when the run starts."""


MAX_KEY_BYTES = 1024
"""Default bound on a key's UTF-8 length (`--max-key-bytes`): a record with a longer key is a dead
letter (`KEY_TOO_LONG`), so that no output record (`<run>.aggregates` is keyed by the key) can
exceed Kafka's message size."""

# Dead-letter reasons the topology gives before the dataset's own rule is asked (the simulator too).
NULL_VALUE = "null value"
INVALID_UTF8 = "invalid UTF-8"
KEY_TOO_LONG = "key too long"


@dataclass(frozen=True)
class TopologyConfig:
    """One run of the topology. Build it, call `validate()`, then hand it to `bench.topology.job`."""

    run_id: str
    grouping: str
    dataset: str
    topic: str
    bootstrap_servers: str
    checkpoint_dir: Path
    results_dir: Path
    grouping_params: dict = field(default_factory=dict)
    dataset_params: dict = field(default_factory=dict)
    workers: int = 10
    splitters: int = 10
    aggregators: int = 10
    cost_ms: float = 1.0
    cost_every: int = 1
    worker_window_s: int = 15
    aggregator_window_s: int = 60
    watermark_delay_s: int = 10
    max_offsets_per_trigger: int | None = None
    trigger_s: float = 1.0
    grouping_clock: str = "kafka"
    max_key_bytes: int = MAX_KEY_BYTES
    worker_state: bool = False
    """Each worker keeps its per-key state in Spark's state store (`bench.topology.worker_state`),
    and a completed run writes it to state.parquet. Off by default: the extra stateful stage made
    a paced run's micro-batches 1.75 -> 3.1 s (median) and its LAT p99 3.7 -> 5.6 s (make bench,
    2026-11-25); a rescale run turns it on (the state is what a rescale moves)."""
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
    rescale_protocol: str = ""
    """A rescale run's protocol ("": no rescale). STOP_THE_WORLD: the query reads the state-transfer
    channel `<run>.state` and is restarted with `switches`; SHARED_STATE, LEARNER and HANDOFF: it reads the
    rescale channel (`bench.topology.rescale_channel`, in `rescale_channel_dir`) and is never
    restarted."""

    @property
    def transfers(self) -> bool:
        """The query reads the state-transfer topic `<run>.state` (STOP_THE_WORLD)."""
        return self.rescale_protocol == "STOP_THE_WORLD"

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
        out["topics"] = {
            "input": self.topic,
            "aggregates": self.aggregates_topic,
            "dlq": self.dlq_topic,
            "distribution": self.distribution_topic,
            "control": self.control_topic,
        }
        return out
