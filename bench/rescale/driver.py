"""What every rescale protocol's driver on Spark shares: the schedule on the Kafka clock, one event
at a time, the journal, and the figures of each event (docs/rescaling.md, "On Spark").

The protocols: bench/rescale/stop_the_world.py (stop, repartition, restart),
bench/rescale/shared_state.py and learner.py (a pause between two batches of the running query) and
handoff.py (rounds of held units, no pause).
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path

from bench.rescale.journal import Journal
from bench.rescale.kafka_clock import first_timestamp
from bench.rescale.plan import routing_at
from bench.topology import state_transfer
from bench.topology.checkpoint_log import batch_ids, has_read, last_batch
from bench.topology.config import TopologyConfig
from bench.topology.rescale_channel import Channel
from bench.topology.state_layout import slot_table
from bench.topology.worker_state import read_final_state
from producers.broker import end_offsets

HANG_AFTER = "BENCH_FAULT_RESCALE_HANG_AFTER"
"""Tests only: `<phase>` or `<phase>@<event index>` (0 for the first event). The driver stops moving
(sleeps) once it has journalled this phase, of any event or of that event only, so that a test can
SIGKILL it in the middle of a rescale (tests/topology/test_rescale_*.py)."""


def hang_after(phase: str, index: int) -> None:
    if os.environ.get(HANG_AFTER) in (phase, f"{phase}@{index}"):
        while True:
            time.sleep(1)


def elapsed_ms(since: float) -> float:
    """Milliseconds (0.1 ms) from `since`, a `time.monotonic()` reading, to now."""
    return round(1000 * (time.monotonic() - since), 1)


def checkpoint_partitions(checkpoint: Path) -> int:
    """N: the state partitions a checkpoint's operators have (`spark.sql.shuffle.partitions` in the
    conf of its last offset-log entry)."""
    last = batch_ids(checkpoint / "offsets")[-1]
    conf = json.loads((checkpoint / "offsets" / str(last)).read_text().splitlines()[1])["conf"]
    return int(conf["spark.sql.shuffle.partitions"])


@dataclass
class RescaleDriver:
    """The events of a schedule on one run. Subclasses say when an event is done (`DONE`, the last
    of their journal's phases) and how it runs."""

    config: TopologyConfig
    events: list          # groupings.rescaling.RescaleEvent
    journal: Journal
    t_first_ms: int | None = None

    DONE = ""
    live = False
    """Whether the event runs inside the running query (the driver loop calls `advance`) or stops it
    (the driver loop returns "rescale" and calls `run_event`)."""

    @property
    def checkpoint(self) -> Path:
        """The checkpoint whose operators hold the workers' state (`TopologyConfig.state_checkpoint`)."""
        return self.config.state_checkpoint

    def next_index(self) -> int | None:
        """The first event that is not done."""
        for index in range(len(self.events)):
            if not self.journal.reached(index, self.DONE):
                return index
        return None

    def reached(self, observer) -> bool:
        """Whether a committed batch has reached the next event's time on the Kafka clock (largest
        Kafka timestamp processed, minus the input's first). The driver must not close the input
        (its end-of-input record) while such an event waits: the event's barrier would include the
        end-of-input record and the windows would never close after the switch."""
        index = self.next_index()
        if index is None or self.t_first_ms is None:
            return False
        max_ts = max((b.get("max_ts_ms") or 0 for b in observer.batches.values()), default=0)
        return max_ts > 0 and max_ts - self.t_first_ms >= self.events[index].at_ms

    def due(self, observer) -> bool:
        """Whether the next event is `reached` and the previous event is done: its switch batch
        committed. Events run one at a time, as in the simulator (an event requested while the
        previous one is under way starts when it is done)."""
        index = self.next_index()
        if index is None or not self.reached(observer):
            return False
        if index > 0:
            # Without this, an event whose time the previous barrier already passed would take its
            # savepoint before the switch batch ran: the previous event's moved keys would still be
            # at their old owners, and both switches would fall on the same batch.
            switch = self.journal.event(index - 1)["switch_batch"]
            if not any(b >= switch for b in observer.batches):
                return False
        return True

    def anchor_clock(self) -> None:
        """Set `t_first_ms`, the zero of the schedule's clock: the input topic's first Kafka
        timestamp (read once; None while the topic is empty)."""
        if self.t_first_ms is None:
            self.t_first_ms = first_timestamp(self.config.bootstrap_servers, self.config.topic)

    def targets(self) -> list:
        return [target for _, target in self.journal.switches()]

    def transfer_ends(self) -> dict[int, int]:
        """`<run>.state`'s end offsets now (partition -> next offset): read once an event's records are
        in it, the event's `transfer_ends` in the journal (`transfers_read`).

        Raises RuntimeError: the topic is gone from Kafka."""
        topic = state_transfer.topic(self.config.run_id)
        ends = end_offsets(self.config.bootstrap_servers, topic)
        if not ends:
            raise RuntimeError(f"the state-transfer topic {topic!r} is gone from Kafka")
        return ends

    def transfers_read(self, ends: dict | None) -> bool:
        """Real-time mode: whether a committed real-time batch has read `<run>.state` up to `ends`
        (`transfer_ends`, as an event journalled them; False for None), so that the workers' committed
        state holds the moved keys at their new owners. A committed batch after the switch is not
        enough: a real-time batch reads `<run>.state` beside the input and can end before its
        source task has reached records written before the batch began (CI, 2026-12-07: the
        second event's savepoint found a key of the first at its old owner, on a loaded machine)."""
        return has_read(self.checkpoint, state_transfer.topic(self.config.run_id), ends)

    def ownership_switches(self) -> list[tuple[int, object, int]]:
        """(batch, routing in force from it, event index), ascending: each event's switch batch and
        the routing after it (bench/rescale/ownership.py)."""
        c = self.config
        out, targets = [], []
        for entry in self.journal.events:
            if entry.get("switch_batch") is None:
                continue
            targets.append(entry["target"])
            out.append((entry["switch_batch"], routing_at(c.grouping, c.workers, c.grouping_params, targets),
                        entry["index"]))
        return out

    def started_ms(self, observer) -> int | None:
        """The event's start on the Kafka clock: the largest timestamp processed so far."""
        max_ts = max((b.get("max_ts_ms") or 0 for b in observer.batches.values()), default=0)
        return max_ts - self.t_first_ms if max_ts and self.t_first_ms is not None else None

    def event_records(self, observer, violations_of) -> list[dict]:
        """summary.json `rescale.events`: the journal's figures plus the ones measured after the
        switch (pause: from `stop_wall_ms` to the end of the switch batch; the switch batch's time on
        the Kafka clock; ownership violations)."""
        out = []
        for entry in self.journal.events:
            rec = {k: v for k, v in entry.items() if k not in ("phase", "target")}
            switch = entry.get("switch_batch")
            after = sorted(b for b in observer.batches if switch is not None and b >= switch)
            if after and entry.get("stop_wall_ms") is not None:
                first = observer.batches[after[0]]
                rec["pause_ms"] = first["end_ms"] - entry["stop_wall_ms"]
                rec["done_ms"] = (first.get("max_ts_ms") or 0) - self.t_first_ms if first.get("max_ts_ms") else None
            rec["ownership_violations"] = violations_of(entry["index"])
            out.append(rec)
        return out


@dataclass
class LiveRescaleDriver(RescaleDriver):
    """A protocol that rescales inside the running query (SHARED_STATE, LEARNER, HANDOFF): its
    steps reach the query through the rescale channel (bench/topology/rescale_channel.py), and it
    reads the workers' committed state with Spark's state data source."""

    live = True
    woken: set = field(default_factory=set)
    """Real-time mode: (epoch, kind) of the wake records this attempt has written (`_wake`)."""
    ends_read: dict = field(default_factory=dict)
    """Real-time mode: (topic, event index) -> the topic's end offsets, as `_ends` read them."""

    @property
    def channel(self):
        return Channel(self.config.rescale_channel_dir)

    def _wake(self, epoch: int, kind: str, splitters: int = 1) -> None:
        """Real-time mode: epoch `epoch`'s wake records for splitters 0 to `splitters` - 1
        (`state_transfer.wake`), once per attempt and `kind` (a request, a claim, a release).

        Raises RuntimeError: they were not acknowledged by Kafka."""
        if (epoch, kind) not in self.woken:
            state_transfer.wake(self.config.bootstrap_servers, self.config.run_id, epoch, splitters)
            self.woken.add((epoch, kind))

    def _ends(self, topic: str, index: int) -> dict[int, int] | None:
        """`topic`'s end offsets, read once per event (a Kafka consumer each): while the event waits
        on them, the routers route nothing and the driver writes nothing more to it. None while the
        topic has none."""
        key = (topic, index)
        if key not in self.ends_read:
            ends = end_offsets(self.config.bootstrap_servers, topic)
            if not ends:
                return None
            self.ends_read[key] = ends
        return self.ends_read[key]

    def _committed(self) -> int:
        """The real-time query's last committed batch (-1 before one)."""
        return last_batch(self.checkpoint / "commits")

    def _aggregator_batch(self) -> int:
        """The aggregator's last committed batch (-1 before one)."""
        return last_batch(self.config.query_checkpoint / "commits")

    def _records(self, epoch: int, extracts: dict, installs: dict) -> list[tuple[str, str]]:
        """`state_transfer.records` of an epoch; in real-time mode each names its slot's worker, to
        which the real-time query routes it (`GroupingStage.OUTPUT`)."""
        c = self.config
        slot_workers = {s: w for w, s in enumerate(slot_table(c.worker_space, c.partitions))} if c.realtime else None
        return state_transfer.records(epoch, extracts, installs, slot_workers)

    def read_state(self, spark, batch_id: int | None = None):
        """Every worker's entries at the last committed batch, or at committed batch `batch_id`
        (`worker_state.STATE_COLUMNS`)."""
        c = self.config
        slots = slot_table(c.worker_space, c.partitions)
        return read_final_state(spark, str(self.checkpoint), {s: w for w, s in enumerate(slots)}, batch_id)
