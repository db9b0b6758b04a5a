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


@dataclass
class StopTheWorld(RescaleDriver):
    """Runs the events of a schedule on one run; `due` is asked after every batch by the driver."""

    DONE = "restarted"

    def run_event(self, spark, topology, start_query, observer, log) -> object:
        """Stop `topology`, move the state, start and return the new topology (`start_query(config)`
        starts the query of a config; with `once=True` it runs one trigger)."""
        from bench.topology.worker_state import read_final_state, touch_state_store_coordinator
        from bench.topology.state_layout import slot_table

        index = self.next_index()
        event = self.events[index]
        c = self.config
        stop_wall_ms = int(time.time() * 1000)
        t0 = time.monotonic()
        if topology is not None:
            topology.stop()
        if not self.journal.reached(index, "stopped"):
            self.journal.record(index, event=event.label(), at_ms=event.at_ms, target=event.target,
                                phase="stopped", stop_wall_ms=stop_wall_ms)
        hang_after("stopped", index)
        steps = dict(self.journal.event(index).get("steps") or {})
        # 1. the barrier: no planned batch left uncommitted
        if batch_ids(self.checkpoint / "offsets")[-1:] != batch_ids(self.checkpoint / "commits")[-1:]:
            t = time.monotonic()
            once = start_query(c, once=True)
            once.main.awaitTermination()
            once.stop()
            steps["finish_batch_ms"] = elapsed_ms(t)
        entry = self.journal.event(index)
        if entry.get("switch_batch") is not None and batch_ids(self.checkpoint / "commits")[-1] >= entry["switch_batch"]:
            # a driver killed after the restarted query committed the switch batch: the event is in force
            return self._restart(index, start_query, steps, t0, log)
        barrier = entry.get("barrier_batch", batch_ids(self.checkpoint / "commits")[-1])
        # 2. savepoint
        t = time.monotonic()
        touch_state_store_coordinator(spark)
        # the layout the savepoint's slots were written with (a resumed driver may find it repartitioned)
        n_before = entry.get("partitions_before", checkpoint_partitions(self.checkpoint))
        slots = slot_table(c.worker_space, n_before)
        state = read_final_state(spark, str(self.checkpoint), {s: w for w, s in enumerate(slots)})
        steps["savepoint_ms"] = elapsed_ms(t)
        prior = self.targets()[:index]  # the events before this one (a resumed driver has this one's switch too)
        before = move_plan.routing_at(c.grouping, c.workers, c.grouping_params, prior)
        after = move_plan.routing_at(c.grouping, c.workers, c.grouping_params, prior + [event.target])
        workers_after = len(after.workers)
        n_after = max(c.aggregators, workers_after)
        if not self.journal.reached(index, "savepoint"):
            self.journal.record(index, phase="savepoint", barrier_batch=barrier, partitions_before=n_before,
                                partitions_after=n_after, steps=steps)
        hang_after("savepoint", index)
        # 3. repartition
        if not self.journal.reached(index, "repartitioned"):
            t = time.monotonic()
            repartition_batch = None
            if n_after != n_before and checkpoint_partitions(self.checkpoint) != n_after:
                spark._streamingCheckpointManager.repartition(str(self.checkpoint), n_after)
                repartition_batch = batch_ids(self.checkpoint / "commits")[-1]
            steps["repartition_ms"] = elapsed_ms(t)
            switch = batch_ids(self.checkpoint / "offsets")[-1] + 1
            self.journal.record(index, phase="repartitioned", switch_batch=switch, steps=steps,
                                repartition_batch=repartition_batch)
            hang_after("repartitioned", index)
        switch = self.journal.event(index)["switch_batch"]
        # 4. transfer
        move = move_plan.plan_move(state, before, after, c.worker_space, n_before, n_after)
        t = time.monotonic()
        if index + 1 not in state_transfer.written_epochs(c.bootstrap_servers, c.run_id):
            state_transfer.write(c.bootstrap_servers, c.run_id,
                                 state_transfer.records(index + 1, move.extracts, move.installs), index + 1)
        steps["transfer_ms"] = elapsed_ms(t)
        figures = {
            "protocol": "STOP_THE_WORLD", "routing": c.grouping,
            "started_ms": self.started_ms(observer),
            "workers_before": len(before.workers), "workers_after": workers_after,
            "worker_ids_before": list(before.workers), "worker_ids_after": list(after.workers),
            "moved_groups": move.moved_groups, "groups": move.groups,
            "units": "keys" if c.grouping == "KEY" else "groups",
            "moved_keys": move.moved_keys, "state_entries_moved": move.moved_keys,
            "state_entries_read": move.state_entries, "state_bytes_read": move.state_bytes,
            "state_entries_relaid": move.state_entries_relaid,
            "transfer_records": sum(len(v) for v in move.installs.values()),
        }
        self.journal.record(index, phase="transferred", steps=steps, **figures)
        hang_after("transferred", index)
        log(f"rescale {event.label()} (STOP_THE_WORLD): batches up to {barrier} by the old routing, from "
            f"{switch} by the new one; {move.moved_keys} keys moved, N {n_before} -> {n_after}")
        return self._restart(index, start_query, steps, t0, log)

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
