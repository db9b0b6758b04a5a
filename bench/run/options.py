"""The settings of a streaming run, each declared once: the topology's (`TopologySettings`), the
run's own (`RunOptions`) and the `bench run` / `bench run-all` command's (`CommandSettings`).

A field's metadata (`bench.settings.setting`) carries its help, unit, flag and Makefile
variable. From these fields come the command line's flags and their reading back into options
(`bench/cli/run.py`), `docs/settings.md` and the README's table of Makefile variables
(`bench.run.settings_doc`), and run.json's config block (`TopologyConfig.to_dict`). A new setting
is one field here (or in `TopologySettings` when the topology reads it, in `bench.settings.input`
when the producer takes it too).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from bench.settings import setting
from bench.settings.input import ReplaySettings
from bench.topology.config import TopologySettings
from groupings import GROUPINGS


@dataclass(frozen=True, kw_only=True)
class RunOptions(ReplaySettings, TopologySettings):
    """One streaming run as asked for: the topology's settings, the input's replay (`ReplaySettings`),
    then the services, the observer and the run's limits. `bench.run.prepare` checks them and
    derives a `TopologyConfig`."""

    producers: int = field(default=1, metadata=setting(
        "producer processes sharing the replay",
        details="process j sends the partitions p with p mod N = j, at one process's intended times; more than "
                "one where one process cannot send the rate (about 120,000 records/s on 2 cores)"))
    run_id: str | None = field(default=None, metadata=setting(
        "name of the run; the same id resumes a stopped run from its checkpoint", makefile="RUN_ID",
        command_help=(("run-all", "prefix of the runs' ids (each run is <prefix>-<grouping>)"),)))
    replay: bool = field(default=True, metadata=setting("consume an existing topic; fail if it is missing"))
    own_topic: bool = field(default=False, metadata=setting(
        "the default topic name gets the run id", flag=None,
        details="the command line sets it for a paced run that replays into the derived topic"))
    """A paced run replays into a topic of its own while it consumes it, so every paced run (each
    grouping of a run-all, each repetition) sees a live input."""
    master: str | None = field(default=None, metadata=setting(
        "Spark master", default_text="local[N], N = max(workers, splitters, aggregators): one task slot per worker "
                                     "whatever the core count; any master works"))
    """`default_master(...)`: one local task slot per worker (or splitter, aggregator partition,
    whichever is more), as Storm gives each executor its own thread."""
    influx_url: str | None = field(default=None, metadata=setting("InfluxDB URL", default_text="the local stack's"))
    influx_database: str | None = field(default=None, metadata=setting(
        "InfluxDB database", default_text="the local stack's, groupings"))
    influx_token: str = field(default="", metadata=setting(
        "InfluxDB 2.x API token", details="1.8 (the local stack): empty or user:password"))
    influx_org: str = field(default="-", metadata=setting("InfluxDB 2.x organisation"))
    influx_bucket: str | None = field(default=None, metadata=setting(
        "InfluxDB bucket", default_text="<database>/autogen, the 1.8 name"))
    no_influx: bool = field(default=False, metadata=setting("do not write to InfluxDB"))
    experiment_id: str | None = field(default=None, metadata=setting(
        "groups the runs in the records", default_text="the run id prefix"))
    """Groups repetitions and the runs of one run-all in the run records (default: the run id)."""
    observer_tick_s: float = field(default=10.0, metadata=setting("observer tick", "s"))
    latency_warmup_s: float = field(default=10.0, metadata=setting(
        "warm-up left out of the run's processing latency", "s",
        details="the batches that start within this many s of the first batch with data (Python workers' "
                "start-up: 6-9 s on the first batch); per-tick figures keep them"))
    timeout_s: float = field(default=1800.0, metadata=setting("give up after this long", "s"))
    results_dir: Path | None = field(default=None, metadata=setting("results folder", default_text="results/"))
    checkpoint_root: Path | None = field(default=None, metadata=setting(
        "checkpoints under ROOT/<run_id>", default_text="results/<run_id>/checkpoint"))
    stop_after_batches: int | None = field(default=None, metadata=setting(
        "stop the query after this many committed data batches", flag=None, details="testing and fault drills"))
    rescale: str | None = field(default=None, metadata=setting(
        "rescale the stateful workers while the stream runs: '60s:12' (time since the input's first Kafka "
        "timestamp : new worker count), as bench simulate --rescale", metavar="SCHEDULE", makefile="RESCALE"))
    """A rescale schedule (groupings.rescaling.schedule), on the Kafka-timestamp clock."""
    protocol: str = field(default="STOP_THE_WORLD", metadata=setting(
        "rescale protocol: STOP_THE_WORLD, SHARED_STATE, LEARNER or HANDOFF", makefile="PROTOCOL",
        details="docs/rescaling.md"))
    handoff_batch: int = field(default=1, metadata=setting("HANDOFF: units (key groups, vnodes) handed over per round"))


@dataclass(frozen=True, kw_only=True)
class CommandSettings:
    """The `bench run` / `bench run-all` command's own flags, beside a run's settings: which runs
    and how many, and what it prints."""

    groupings: str = field(default=",".join(GROUPINGS), metadata=setting(
        "comma-separated list", default_text="all", makefile="GROUPINGS", commands=("run-all",)))
    repeat: int = field(default=1, metadata=setting("repetitions under one experiment id", makefile="REPEAT"))
    json: bool = field(default=False, metadata=setting("print the summary as JSON too"))
