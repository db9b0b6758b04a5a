"""SHARED_STATE on Spark, inside the running query (docs/rescaling.md, "SHARED_STATE on Spark").

As in RisingWave (a barrier carrying the new vnode mapping, workers loading the vnodes they gain
from shared storage) and Volley: the query pauses between two micro-batches, the driver loads the
gained units' state from the query's checkpoint (the shared storage), and the next batch carries
the new routing to every router and the state to the workers that gain it. No restart, no
`repartition`: the state layout is fixed for the run at N = max(A, M) partitions.

Steps of one event, each journalled (bench/rescale/journal.py, SHARED_STATE_PHASES) before the next:

1. requested: the event's time is reached (as in STOP_THE_WORLD); the driver asks the rescale
   channel (bench/topology/rescale_channel.py) for a barrier.
2. savepoint: the channel's source paused the query after its last committed batch B (the
   barrier; `stop_wall_ms` is when the pause began). The driver reads every worker's entries of
   batch B with Spark's state data source and plans the move with the simulator's routings; the
   switch batch is S = B + 1.
3. published: the epoch's records (the switch for the routers, extracts and installs for the
   workers) are in the channel; the query goes on, and batch S applies them before its tuples.
4. switched: batch S committed.

A driver killed at any step and started again with the same run id goes on from the journal: the
paused query cannot pass the barrier before the epoch is published, and a published epoch is never
rewritten, so batch S reads the same records whichever attempt wrote them.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from bench.rescale import plan as move_plan
from bench.rescale.driver import LiveRescaleDriver, batch_ids, elapsed_ms, hang_after


@dataclass
class SharedState(LiveRescaleDriver):
    """The driver loop calls `advance` after every poll while the query runs."""

    DONE = "switched"
    PROTOCOL = "SHARED_STATE"

    def switch_epoch(self, index: int) -> int:
        """The channel epoch that carries event `index`'s switch."""
        return index + 1

    def advance(self, spark, observer, log) -> None:
        """Take the next event one step further, as far as the query allows now (never blocks on it)."""
        under_way = self._under_way(observer)
        if under_way is None:
            return
        index, entry = under_way
        if entry["phase"] == "requested":
            self._request(index)
            hang_after("requested", index)
        self._step(spark, observer, index, entry, log)

    def _request(self, index: int) -> None:
        """Ask the query for the barrier of event `index` (again, on every poll until it has one)."""
        self.channel.request(self.switch_epoch(index))

    def _step(self, spark, observer, index: int, entry: dict, log) -> None:
        """The steps after the request that the query allows now (2. to 4.)."""
        epoch = self.switch_epoch(index)
        if entry["phase"] == "requested":
            barrier_ms = self.channel.barrier_wall_ms(epoch)
            if barrier_ms is None:
                return  # the query has not reached the barrier yet
            records = self._savepoint(spark, index, barrier_ms, log)
            hang_after("savepoint", index)
            self._publish(index, records)
        elif entry["phase"] == "savepoint":
            # a resumed driver: the query still waits at the same barrier (it cannot pass it before
            # the epoch is published), so the state read again is the same
            self._publish(index, None if self.channel.published(epoch) else self._move(spark, index, epoch)[0])
        entry = self.journal.event(index)
        if entry["phase"] == "published" and any(b >= entry["switch_batch"] for b in observer.batches):
            self.journal.record(index, phase="switched")

    def _under_way(self, observer) -> tuple[int, dict] | None:
        """The next event and its journal entry, journalled as requested once it is due (1.); None
        while no event is under way or due."""
        index = self.next_index()
        if index is None:
            return None
        entry = self.journal.event(index)
        if entry is None:
            if not self.due(observer):
                return None
            event = self.events[index]
            entry = self.journal.record(index, event=event.label(), at_ms=event.at_ms, target=event.target,
                                        phase="requested", requested_wall_ms=int(time.time() * 1000),
                                        started_ms=self.started_ms(observer))
        return index, entry

    def _plan(self, spark, index: int, batch_id: int | None = None):
        """Read the committed state (the last committed batch, or `batch_id`) and plan the move of
        event `index`. Returns (move, the routings before and after, the read's duration in ms)."""
        c = self.config
        t = time.monotonic()
        state = self.read_state(spark, batch_id)
        read_ms = elapsed_ms(t)
        prior = self.targets()[:index]
        before = move_plan.routing_at(c.grouping, c.workers, c.grouping_params, prior)
        after = move_plan.routing_at(c.grouping, c.workers, c.grouping_params, prior + [self.events[index].target])
        move = move_plan.plan_move(self._held(state, index, before), before, after, c.worker_space, c.partitions,
                                   c.partitions)
        return move, before, after, read_ms

    def _held(self, state, index: int, before):
        """The entries the event moves from: every worker's (a hook for LEARNER's warm-up copies)."""
        return state

    def _transfers(self, index: int, epoch: int, move) -> tuple[list, dict]:
        """The switch epoch's transfer records and their figures: every moved entry."""
        return (self._records(epoch, move.extracts, move.installs),
                {"transfer_records": sum(len(v) for v in move.installs.values())})

    def _move(self, spark, index: int, epoch: int) -> tuple[list, dict, float]:
        """Read the committed state and plan the move of event `index`: the channel's transfer
        records of `epoch`, the event's figures, and the state read's duration (ms)."""
        move, before, after, savepoint_ms = self._plan(spark, index)
        records, transfer_figures = self._transfers(index, epoch, move)
        return records, {**self._figures(move, before, after), **transfer_figures}, savepoint_ms

    def _figures(self, move, before, after) -> dict:
        """The event's figures of its move (summary.json `rescale.events`)."""
        c = self.config
        return {
            "protocol": self.PROTOCOL, "routing": c.grouping,
            "workers_before": len(before.workers), "workers_after": len(after.workers),
            "worker_ids_before": list(before.workers), "worker_ids_after": list(after.workers),
            "moved_groups": move.moved_groups, "groups": move.groups,
            "units": "keys" if c.grouping == "KEY" else "groups",
            "moved_keys": move.moved_keys, "state_entries_moved": move.moved_keys,
            "state_entries_read": move.state_entries, "state_bytes_read": move.state_bytes,
        }

    def _savepoint(self, spark, index: int, barrier_ms: int, log) -> list:
        """2. The query waits after batch B: read B's state, plan the move, fix S = B + 1. Returns
        the channel's transfer records."""
        c = self.config
        barrier = batch_ids(self.checkpoint / "commits")[-1]
        records, figures, savepoint_ms = self._move(spark, index, self.switch_epoch(index))
        entry = self.journal.event(index)
        steps = {**(entry.get("steps") or {}), "barrier_wait_ms": max(0, barrier_ms - entry["requested_wall_ms"]),
                 "savepoint_ms": savepoint_ms}
        self.journal.record(index, phase="savepoint", stop_wall_ms=barrier_ms, barrier_batch=barrier,
                            switch_batch=barrier + 1, partitions_before=c.partitions, partitions_after=c.partitions,
                            steps=steps, **figures)
        log(f"rescale {self.events[index].label()} ({self.PROTOCOL}): batches up to {barrier} by the old routing, "
            f"from {barrier + 1} by the new one; {figures['moved_keys']} keys moved")
        return records

    def _publish(self, index: int, records: list | None) -> None:
        """3. The epoch's records into the channel (None: already there): the paused query goes on
        with batch S."""
        entry = self.journal.event(index)
        t = time.monotonic()
        if records is not None:
            self.channel.publish(self.switch_epoch(index), records, switch=(index + 1, entry["target"]))
        self.journal.record(index, phase="published", steps={**entry["steps"], "publish_ms": elapsed_ms(t)})
        hang_after("published", index)
