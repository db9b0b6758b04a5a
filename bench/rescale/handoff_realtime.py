"""HANDOFF in real-time mode: the rounds of bench/rescale/handoff.py, with the routers of the running
real-time query applying each step at the start of a real-time batch (docs/rescaling.md, "HANDOFF
in real-time mode").

What differs from the micro-batch protocol:

- Real-Time Mode refuses the rescale channel's Python source, so the routers read the channel
  themselves (`ChannelBarrier.java`): a router call of real-time batch X that finds a published step
  with no barrier claims batch S = X + 1 for it, and every router call of S or later applies it
  first. Nothing waits: the step is in the channel before its claim. The driver follows each
  publication with a wake record, which reaches a router at once, tuples or not.
- Round j's state is final at the old owners once batch S_j - 1 has committed (the routers hold the
  round's units from S_j on), so the driver reads it there, at once, rather than at S_j's end.
- The moved state goes to `<run>.state`, which the real-time query reads as the grouping stage's
  control rows, as every transfer of a real-time query does; the channel's epoch carries the step.
- Once S_j - 1 has committed, a wake record for every splitter instance reaches every router in S_j
  or later: a router with no tuple left (the input's end) still applies the step and releases the
  tuples it held.
- The event is done once its last step's batch has committed and a committed batch has read every
  record of `<run>.state` (those wakes included): every router has released what it held.
- The observer's batches are the aggregator's, which do not line up with the real-time batches
  when nothing pauses: an aggregator batch may hold partials of the real-time batches on both sides
  of a step. So the ownership check knows three spans: up to the aggregator's last batch before
  the scale-up (`barrier_batch`, the routing before), from its first batch after the event was done
  (`switch_batch`, the routing after), and between them a moved key at its old or its new owner
  (`ownership.HandingOver`). The held tuples and their delay are not measured: the routing summary
  that counts them is the micro-batch grouping stage's.

Steps of one event, each journalled before the next (HANDOFF_PHASES): scaleup (the rounds, from the
last committed real-time batch's state), handing_over (each published step), done. A driver
killed at any step goes on from the journal: a published step is never rewritten, its state is
read again at the same committed batch, and the wake records are written again.
"""

from __future__ import annotations

from dataclasses import dataclass

from bench.rescale import plan as move_plan
from bench.rescale.handoff import Handoff
from bench.rescale.ownership import HandingOver
from bench.topology import state_transfer
from bench.topology.checkpoint_log import has_read
from producers.broker import end_offsets

HOLD_FIGURES = ("held_tuples", "hold_delay_ms_p50", "hold_delay_ms_p99", "hold_delay_ms_max")
"""summary.json's figures of a HANDOFF event that real-time mode does not measure (module text)."""


@dataclass
class RealtimeHandoff(Handoff):
    """HANDOFF's events on a real-time run (module text); the run's loop calls `advance` after every
    poll."""

    def due(self, observer) -> bool:
        """Whether the next event is `reached`: the previous one is done already once its last step's
        batch has committed (`_done`). Not the aggregator's switch batch too: with the input all
        read, none comes before the end-of-input record, which waits for this event."""
        return self.next_index() is not None and self.reached(observer)

    def _barrier_batch(self, scaleup_batch: int) -> int:
        """The aggregator's last committed batch: every aggregator batch up to it routed by the
        routing before."""
        return self._aggregator_batch()

    def _deliver(self, epoch: int, records: list, switch: tuple | None, control: dict) -> None:
        """The moved state to `<run>.state` (once: a resumed driver finds the epoch written), then
        the step into the channel, then a wake record: a router claims the next real-time batch for
        the step.

        Raises RuntimeError: a record was not acknowledged by Kafka."""
        c = self.config
        if records and epoch not in state_transfer.written_epochs(c.bootstrap_servers, c.run_id):
            state_transfer.write(c.bootstrap_servers, c.run_id, records, epoch)
        self.channel.publish(epoch, [], switch=switch, handoff=control)
        self._wake(epoch, "claim", 1)

    def _hold_batch(self, entry: dict, step: int) -> int | None:
        """S_j - 1 for step j's switch batch S_j, once it has committed (module text), the release
        wakes written; None before."""
        epoch = entry["first_epoch"] + step
        switch = self._switch_batch(epoch)
        if switch is None:
            return None
        self._wake(epoch, "release", self.config.splitters)
        return switch - 1

    def _switch_batch(self, epoch: int) -> int | None:
        """The real-time batch whose routers apply step `epoch`, once the batch before it has
        committed; None before."""
        barrier = self.channel.barrier(epoch)
        if barrier is None or self._committed() < barrier["switch_batch"] - 1:
            return None
        return barrier["switch_batch"]

    def _done(self, index: int, entry: dict) -> dict | None:
        """Done once the last step's batch has committed and a committed batch has read every record
        of `<run>.state` (module text); the switch batch is the aggregator's next one, once it has
        read every update on `<run>.partials` written before."""
        c = self.config
        last = entry["first_epoch"] + len(entry["rounds"])
        if self._hold_batch(entry, len(entry["rounds"])) is None or self._committed() < self._switch_batch(last):
            return None
        topic = state_transfer.topic(c.run_id)
        if not has_read(self.checkpoint, topic, self._ends(topic, index)):  # read after the last release wakes
            return None
        if "done_partials" not in entry:  # read once, after every release: later updates route by the new routing
            ends = end_offsets(c.bootstrap_servers, c.partials_topic)
            if not ends:
                return None
            entry = self.journal.record(index, done_partials=ends)
        if not has_read(c.query_checkpoint, c.partials_topic, entry["done_partials"]):
            return None
        steps = [self._switch_batch(entry["first_epoch"] + j) for j in range(len(entry["rounds"]) + 1)]
        # the commit of the real-time batch that read the last release (`rescale_ms` ends there)
        done_wall_ms = int(1000 * (self.checkpoint / "commits" / str(self._committed())).stat().st_mtime)
        return self.journal.record(index, phase="done", switch_batch=self._aggregator_batch() + 1,
                                   query_step_batches=steps, query_switch_batch=steps[-1], done_wall_ms=done_wall_ms)

    def ownership_switches(self) -> list[tuple[int, object, int]]:
        """(aggregator batch, routing in force from it, event index): per event, `HandingOver` from
        the batch after its barrier batch, and the routing after it from its switch batch (module
        text)."""
        c = self.config
        out, targets = [], []
        for entry in self.journal.events:
            before = move_plan.routing_at(c.grouping, c.workers, c.grouping_params, targets)
            targets = targets + [entry["target"]]
            after = move_plan.routing_at(c.grouping, c.workers, c.grouping_params, targets)
            out.append((entry["barrier_batch"] + 1, HandingOver(before, after), entry["index"]))
            if entry.get("switch_batch") is not None:
                out.append((entry["switch_batch"], after, entry["index"]))
        return out

    def event_records(self, observer, violations_of) -> list[dict]:
        """The base's figures, without the held tuples and their delay (not measured here), and with
        `rescale_ms` from the scale-up to the commit of the real-time batch that read the last
        release (`done_wall_ms`): the aggregator's switch batch may come only with the end-of-input
        record, which waits for every event."""
        records = super().event_records(observer, violations_of)
        for record in records:
            record.update(dict.fromkeys(HOLD_FIGURES))
            if record.get("done_wall_ms") is not None:
                record["rescale_ms"] = record["done_wall_ms"] - record["stop_wall_ms"]
        return records
