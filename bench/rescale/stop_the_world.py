"""STOP_THE_WORLD on Spark's own machinery: stop the query at a batch boundary, take every worker's
state (savepoint), repartition the checkpoint's state, move the keys that change owner, restart the
query with the new worker count from the same checkpoint (docs/rescaling.md, "On Spark").

Steps of one event, each recorded in the journal (bench/rescale/journal.py) before the next:

1. stopped: `StreamingQuery.stop()`. A batch it interrupted was planned (offset log) but not
   committed; Spark's `repartition` refuses such a checkpoint
   (`STATE_REPARTITION_INVALID_CHECKPOINT.LAST_BATCH_FAILED`), so the query is started once more
   with the old plan and `trigger(once=True)` to finish it: the barrier is then the last batch.
2. savepoint: every worker's entries, read with Spark's state data source.
3. repartitioned: `StreamingCheckpointManager.repartition(checkpoint, N')` if the physical layout
   changes (N' = max(A, new worker count)); it writes a batch of its own. The first batch of the
   restarted query is the switch batch S = last planned batch + 1.
4. transferred: the entries that change slot go to `<run>.state` (bench/topology/state_transfer.py),
   which the restarted query reads in batch S, before that batch's tuples.
5. restarted: the query runs again with the new routing from batch S (the grouping instances
   reschedule there: bench/topology/grouping_stage.py).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace

from bench.rescale import plan as move_plan
from bench.rescale.driver import RescaleDriver, batch_ids, checkpoint_partitions, elapsed_ms, hang_after
from bench.topology import state_transfer
from bench.topology.state_layout import slot_table
from bench.topology.worker_state import read_final_state, touch_state_store_coordinator


@dataclass
class StopTheWorld(RescaleDriver):
    """Runs the events of a schedule on one run; `due` is asked after every batch by the driver."""

    DONE = "restarted"

    def run_event(self, spark, topology, start_query, observer, log) -> object:
        """Stop `topology`, move the state, start and return the new topology (`start_query(config)`
        starts the query of a config; with `once=True` it runs one trigger)."""
        index = self.next_index()
        event = self.events[index]
        c = self.config
        t0 = time.monotonic()
        steps = self._stop(index, topology, start_query)
        entry = self.journal.event(index)
        switch = entry.get("switch_batch")
        if switch is not None and batch_ids(self.checkpoint / "commits")[-1] >= switch:
            # a driver killed after the restarted query committed the switch batch: the event is in force
            return self._restart(index, start_query, steps, t0, log)
        barrier = entry.get("barrier_batch", batch_ids(self.checkpoint / "commits")[-1])
        state, n_before = self._savepoint(spark, entry, steps)
        prior = self.targets()[:index]  # the events before this one (a resumed driver has this one's switch too)
        before = move_plan.routing_at(c.grouping, c.workers, c.grouping_params, prior)
        after = move_plan.routing_at(c.grouping, c.workers, c.grouping_params, prior + [event.target])
        n_after = max(c.aggregators, len(after.workers))
        if not self.journal.reached(index, "savepoint"):
            self.journal.record(index, phase="savepoint", barrier_batch=barrier, partitions_before=n_before,
                                partitions_after=n_after, steps=steps)
        hang_after("savepoint", index)
        switch = self._repartition(spark, index, n_before, n_after, steps)
        move = self._transfer(index, state, before, after, n_before, n_after, steps)
        self.journal.record(index, phase="transferred", steps=steps, **self._figures(observer, before, after, move))
        hang_after("transferred", index)
        log(f"rescale {event.label()} (STOP_THE_WORLD): batches up to {barrier} by the old routing, from "
            f"{switch} by the new one; {move.moved_keys} keys moved, N {n_before} -> {n_after}")
        return self._restart(index, start_query, steps, t0, log)

    def _stop(self, index: int, topology, start_query) -> dict:
        """1. Stop the query and make the barrier the last batch (no planned batch left
        uncommitted); returns the event's steps so far (ms)."""
        stop_wall_ms = int(time.time() * 1000)
        if topology is not None:
            topology.stop()
        steps = self._stopped(index, stop_wall_ms)
        # Past the savepoint, an uncommitted batch is Spark's repartition interrupted by a killed
        # driver, which `_repartition` runs again: a query started on it fails with
        # STREAMING_UNFINISHED_REPARTITION_DETECTED (make nemesis, 2026-11-29).
        if not self.journal.reached(index, "savepoint") and self._uncommitted():
            t = time.monotonic()
            once = start_query(self.config, once=True)
            once.main.awaitTermination()
            once.stop()
            steps["finish_batch_ms"] = elapsed_ms(t)
        return steps

    def _stopped(self, index: int, stop_wall_ms: int) -> dict:
        """Journal event `index`'s stop (once: a resumed driver keeps the first) and return its steps
        so far (ms)."""
        event = self.events[index]
        if not self.journal.reached(index, "stopped"):
            self.journal.record(index, event=event.label(), at_ms=event.at_ms, target=event.target,
                                phase="stopped", stop_wall_ms=stop_wall_ms)
        hang_after("stopped", index)
        return dict(self.journal.event(index).get("steps") or {})

    def _uncommitted(self) -> bool:
        """Whether the checkpoint's last planned batch is not committed (an interrupted batch, or
        Spark's interrupted repartition)."""
        return batch_ids(self.checkpoint / "offsets")[-1:] != batch_ids(self.checkpoint / "commits")[-1:]

    def _savepoint(self, spark, entry: dict, steps: dict):
        """2. Every worker's entries at the barrier (`worker_state.STATE_COLUMNS`) and N, the state
        partitions they were written with (a resumed driver may find the checkpoint repartitioned)."""
        c = self.config
        t = time.monotonic()
        touch_state_store_coordinator(spark)
        n_before = entry.get("partitions_before", checkpoint_partitions(self.checkpoint))
        slots = slot_table(c.worker_space, n_before)
        state = read_final_state(spark, str(self.checkpoint), {s: w for w, s in enumerate(slots)})
        steps["savepoint_ms"] = elapsed_ms(t)
        return state, n_before

    def _repartition(self, spark, index: int, n_before: int, n_after: int, steps: dict) -> int:
        """3. Repartition the checkpoint's state to `n_after` partitions if the layout changes;
        returns the switch batch (the first batch of the restarted query)."""
        if not self.journal.reached(index, "repartitioned"):
            t = time.monotonic()
            repartition_batch = None
            if n_after != n_before and (self._uncommitted() or checkpoint_partitions(self.checkpoint) != n_after):
                spark._streamingCheckpointManager.repartition(str(self.checkpoint), n_after)
                repartition_batch = batch_ids(self.checkpoint / "commits")[-1]
            steps["repartition_ms"] = elapsed_ms(t)
            switch = batch_ids(self.checkpoint / "offsets")[-1] + 1
            self.journal.record(index, phase="repartitioned", switch_batch=switch, steps=steps,
                                repartition_batch=repartition_batch)
            hang_after("repartitioned", index)
        return self.journal.event(index)["switch_batch"]

    def _transfer(self, index: int, state, before, after, n_before: int, n_after: int, steps: dict) -> move_plan.Move:
        """4. The entries that change slot, written to `<run>.state` once (epoch index + 1)."""
        c = self.config
        move = move_plan.plan_move(state, before, after, c.worker_space, n_before, n_after)
        t = time.monotonic()
        if index + 1 not in state_transfer.written_epochs(c.bootstrap_servers, c.run_id):
            # the real-time query routes each record to its slot's worker (stop_the_world_realtime)
            slot_workers = {s: w for w, s in enumerate(slot_table(c.worker_space, n_after))} if c.realtime else None
            records = state_transfer.records(index + 1, move.extracts, move.installs, slot_workers)
            state_transfer.write(c.bootstrap_servers, c.run_id, records, index + 1)
        steps["transfer_ms"] = elapsed_ms(t)
        return move

    def _figures(self, observer, before, after, move: move_plan.Move) -> dict:
        """The event's figures in the journal (summary.json `rescale.events`)."""
        c = self.config
        return {
            "protocol": "STOP_THE_WORLD", "routing": c.grouping,
            "started_ms": self.started_ms(observer),
            "workers_before": len(before.workers), "workers_after": len(after.workers),
            "worker_ids_before": list(before.workers), "worker_ids_after": list(after.workers),
            "moved_groups": move.moved_groups, "groups": move.groups,
            "units": "keys" if c.grouping == "KEY" else "groups",
            "moved_keys": move.moved_keys, "state_entries_moved": move.moved_keys,
            "state_entries_read": move.state_entries, "state_bytes_read": move.state_bytes,
            "state_entries_relaid": move.state_entries_relaid,
            "transfer_records": sum(len(v) for v in move.installs.values()),
        }

    def _restart(self, index: int, start_query, steps: dict, t0: float, log):
        """5. restart with the new routing from the switch batch."""
        entry = self.journal.event(index)
        self.config = replace(self.config, switches=tuple(self.journal.switches()),
                              state_partitions=entry["partitions_after"])
        t = time.monotonic()
        topology = start_query(self.config)
        steps["restart_ms"] = elapsed_ms(t)
        steps["stop_to_restart_ms"] = elapsed_ms(t0)
        self.journal.record(index, phase="restarted", steps=steps)
        return topology
