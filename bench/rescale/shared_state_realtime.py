"""SHARED_STATE in real-time mode: the routers of the running real-time query wait at the start of
a real-time batch while the driver reads the workers' committed state, moves the keys that change
owner and publishes the new routing; no stop, no restart (docs/rescaling.md, "SHARED_STATE in
real-time mode").

What differs from the micro-batch protocol (bench/rescale/shared_state.py):

- Real-Time Mode refuses the rescale channel's Python source, so the routers keep the barrier
  themselves (`ChannelBarrier.java`): a router call of real-time batch X that finds the epoch
  requested claims batch S = X + 1 for it, and every router call of S waits until the epoch is
  published. The driver follows its request with a wake record on `<run>.state`, which reaches a
  router at once, tuples or not. The driver reads the workers' state of batch B = S - 1 once B commits; S's tasks hold
  their task slots meanwhile, so a run has one more for the read (`TopologyConfig.realtime_task_slots`).
- The moved state goes to `<run>.state`, which the real-time query reads as the grouping stage's
  control rows, as STOP_THE_WORLD's in real-time mode does; the channel's epoch carries the switch.
- The observer's batches are the aggregator's. The barrier batch is the last aggregator batch
  before the publication, once the aggregator has read every update on `<run>.partials` (B's last
  ones included: the routers of S route nothing before the publication); the switch batch is the
  next one.

Steps of one event, each journalled before the next (SHARED_STATE_PHASES): requested (the request
in the channel), savepoint (batch B committed and read, the moved entries in `<run>.state`),
published (the epoch in the channel), switched (real-time batch S committed, and a committed batch
has read the moved entries, `RescaleDriver.transfers_read`: they are in the workers' state). A
driver killed at any step goes on from the journal: the routers of S wait for the publication
whichever attempt makes it, and a published epoch is never rewritten.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from bench.rescale.driver import elapsed_ms, hang_after
from bench.rescale.shared_state import SharedState
from bench.topology import state_transfer
from bench.topology.checkpoint_log import has_read


@dataclass
class RealtimeSharedState(SharedState):
    """SHARED_STATE's events on a real-time run (module text); the run's loop calls `advance` after
    every poll."""

    def _request(self, index: int) -> None:
        """The request, and once per attempt a wake record: the routers read the request now.

        Raises RuntimeError: the wake record was not acknowledged by Kafka."""
        epoch = self.switch_epoch(index)
        self.channel.request(epoch)
        self._wake(epoch, "request")

    def _step(self, spark, observer, index: int, entry: dict, log) -> None:
        """The steps after the request that the query allows now (never blocks on it).

        Raises RuntimeError: a state-transfer record was not acknowledged by Kafka."""
        if entry["phase"] == "requested":
            barrier = self.channel.barrier(self.switch_epoch(index))
            if barrier is None or self._committed() < barrier["switch_batch"] - 1:
                return  # no router has claimed a batch yet, or the batch before it runs
            entry = self._savepoint_realtime(spark, index, barrier["switch_batch"], log)
            hang_after("savepoint", index)
        if entry["phase"] == "savepoint":
            if not self._aggregator_caught_up(index):
                return
            entry = self._publish_realtime(index)
        # not the aggregator's switch batch too: with the input all read, none comes before the
        # end-of-input record, which waits for this event (a resumed run, 2026-12-06)
        if (entry["phase"] == "published" and self._committed() >= entry["query_switch_batch"]
                and self.transfers_read(entry.get("transfer_ends"))):
            self.journal.record(index, phase="switched")

    def _savepoint_realtime(self, spark, index: int, switch: int, log) -> dict:
        """2. Batch B = S - 1 has committed and S waits: read B's state, plan the move and write the
        moved entries to `<run>.state` (once: a resumed driver finds the epoch written)."""
        c, epoch = self.config, self.switch_epoch(index)
        barrier = switch - 1
        move, before, after, savepoint_ms = self._plan(spark, index, barrier)
        t = time.monotonic()
        records, transfer_figures = self._transfers(index, epoch, move)
        if epoch not in state_transfer.written_epochs(c.bootstrap_servers, c.run_id):
            state_transfer.write(c.bootstrap_servers, c.run_id, records, epoch)
        transfer_ends = self.transfer_ends()
        entry = self.journal.event(index)
        # the routers of S began to wait when B committed
        stop_wall_ms = int(1000 * (self.checkpoint / "commits" / str(barrier)).stat().st_mtime)
        steps = {**(entry.get("steps") or {}), "barrier_wait_ms": max(0, stop_wall_ms - entry["requested_wall_ms"]),
                 "savepoint_ms": savepoint_ms, "transfer_ms": elapsed_ms(t)}
        log(f"rescale {self.events[index].label()} ({self.PROTOCOL}, real-time): real-time batches up to {barrier} "
            f"by the old routing, from {switch} by the new one; {move.moved_keys} keys moved")
        return self.journal.record(index, phase="savepoint", stop_wall_ms=stop_wall_ms, query_barrier_batch=barrier,
                                   query_switch_batch=switch, partitions_before=c.partitions,
                                   partitions_after=c.partitions, steps=steps, transfer_ends=transfer_ends,
                                   **transfer_figures,
                                   **self._figures(move, before, after))

    def _aggregator_caught_up(self, index: int) -> bool:
        """Whether the aggregator has read every update on `<run>.partials` that came before event
        `index`'s barrier."""
        c = self.config
        return has_read(c.query_checkpoint, c.partials_topic, self._ends(c.partials_topic, index))

    def _publish_realtime(self, index: int) -> dict:
        """3. The barrier and switch batches fixed on the aggregator's batches, then the epoch's
        switch in the channel: the routers of S go on."""
        entry = self.journal.event(index)
        t = time.monotonic()
        if "switch_batch" not in entry:
            barrier = self._aggregator_batch()
            entry = self.journal.record(index, barrier_batch=barrier, switch_batch=barrier + 1)
        self.channel.publish(self.switch_epoch(index), [], switch=(index + 1, entry["target"]))
        entry = self.journal.record(index, phase="published", steps={**entry["steps"], "publish_ms": elapsed_ms(t)})
        hang_after("published", index)
        return entry
