"""STOP_THE_WORLD in real-time mode: stop the real-time query, take every worker's state and the
worker windows' partials (savepoint), move the keys that change owner, give the aggregator the
committed partials back, restart the real-time query with the new routing from the same checkpoint
(docs/rescaling.md, "STOP_THE_WORLD in real-time mode").

What differs from the micro-batch protocol (bench/rescale/stop_the_world.py):

- Real-Time Mode writes a batch's offset-log entry when the batch ends, just before its commit, so
  a stopped query leaves no batch planned and uncommitted, save in the moment between those two
  writes; then the query is started once more with the old routing until that batch commits.
- `StreamingQuery.stop()` interrupts the running real-time batch after its updates reached
  `<run>.partials`, and the restarted query processes its tuples again. The driver writes the
  worker windows' partials of the last committed batch for the aggregator and a generation-start
  record (`bench.topology.realtime_aggregator`, "Rescales"), and restarts the query once the
  aggregator has read it. The observer's batches are the aggregator's: the barrier batch is the
  one that read the record, the switch batch the next.
- The state layout is fixed for the run at N = max(A, M) (`bench.rescale.setup`): no repartition.
- The restarted query's routers install every switch it is given from its first batch
  (GroupingStage.java): a real-time query never runs a batch of an earlier routing again.
- The moved keys reach their new owners while the restarted query runs, when its source of
  `<run>.state` reads them: the next event waits for a committed real-time batch that has read
  them all (`RescaleDriver.transfers_read`).

Steps of one event, each journalled before the next: stopped, savepoint, transferred (the state in
`<run>.state` and the topic's end offsets then, the partials given back, the barrier and switch
batches fixed), restarted.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from bench.rescale import plan as move_plan
from bench.rescale.driver import elapsed_ms, hang_after
from bench.rescale.stop_the_world import StopTheWorld
from bench.topology import window_state
from bench.topology.checkpoint_log import batch_ids
from bench.topology.sink import write_parquet_atomic

WAIT_S = 120.0
"""How long the driver waits for the real-time query's last planned batch to commit, or for the
aggregator to read the generation-start record."""


@dataclass
class RealtimeStopTheWorld(StopTheWorld):
    """STOP_THE_WORLD's events on a real-time run (module text). `run_event` takes the run's
    `bench.topology.realtime.RunningRealtime` and `start_realtime(config)`, which starts the
    real-time query of `config` beside the running aggregator."""

    def due(self, observer) -> bool:
        """`StopTheWorld.due`, once the savepoint has a barrier that holds every key at its owner: a
        committed real-time batch, and after an event, one that has read the event's whole state
        transfer (`transfers_read`)."""
        if not super().due(observer):
            return False
        index = self.next_index()
        if index > 0:
            return self.transfers_read(self.journal.event(index - 1).get("transfer_ends"))
        return bool(batch_ids(self.checkpoint / "commits"))

    def run_event(self, spark, topology, start_realtime, observer, log) -> object:
        """The next event, from where the journal says it stands; returns `topology` with its real-time
        query running the new routing. Raises RuntimeError (a query failed) or TimeoutError (WAIT_S)
        while it waits for Spark or the aggregator."""
        index = self.next_index()
        event = self.events[index]
        t0 = time.monotonic()
        steps = self._stop_realtime(index, topology, start_realtime)
        if not self.journal.reached(index, "transferred"):
            self._move(spark, index, topology, steps, observer, log)
        return self._restart(index, start_realtime, steps, t0, log)

    def _stop_realtime(self, index: int, topology, start_realtime) -> dict:
        """1. Stop the real-time query; a batch it left planned and uncommitted runs to its commit."""
        stop_wall_ms = int(time.time() * 1000)
        topology.stop_realtime()
        steps = self._stopped(index, stop_wall_ms)
        if not self.journal.reached(index, "savepoint") and self._uncommitted():
            t = time.monotonic()
            start_realtime(self.config)
            self._await(lambda: not self._uncommitted(), topology, "the real-time query's last planned batch to commit")
            topology.stop_realtime()
            steps["finish_batch_ms"] = elapsed_ms(t)
        return steps

    def _move(self, spark, index: int, topology, steps: dict, observer, log) -> None:
        """2-3. The savepoint, the state transfer, the partials given back and the barrier."""
        c, event = self.config, self.events[index]
        entry = self.journal.event(index)
        barrier = entry.get("query_barrier_batch", window_state.last_committed(self.checkpoint))
        state, n = self._savepoint(spark, entry, steps)
        if not self.journal.reached(index, "savepoint"):
            self.journal.record(index, phase="savepoint", query_barrier_batch=barrier, partitions_before=n,
                                partitions_after=n, steps=steps)
        hang_after("savepoint", index)
        prior = self.targets()[:index]
        before = move_plan.routing_at(c.grouping, c.workers, c.grouping_params, prior)
        after = move_plan.routing_at(c.grouping, c.workers, c.grouping_params, prior + [event.target])
        move = self._transfer(index, state, before, after, n, n, steps)
        t = time.monotonic()
        generation = index + 1
        marker_batch = self._give_back(spark, generation, barrier, topology)
        steps["give_back_ms"] = elapsed_ms(t)
        self.journal.record(index, phase="transferred", steps=steps, barrier_batch=marker_batch,
                            switch_batch=marker_batch + 1, transfer_ends=self.transfer_ends(),
                            **self._figures(observer, before, after, move))
        hang_after("transferred", index)
        log(f"rescale {event.label()} (STOP_THE_WORLD, real-time): real-time batches up to {barrier} by the old "
            f"routing, the rest by the new one; {move.moved_keys} keys moved")

    def _give_back(self, spark, generation: int, barrier: int, topology) -> int:
        """The worker windows' partials of committed batch `barrier` and the generation-start record
        for the aggregator; returns the aggregator batch that read the record."""
        aggregator = topology.aggregator
        path = aggregator.folder / f"generation-{generation}.parquet"
        if not path.exists():  # written once: a resumed driver finds the same checkpoint
            aggregator.folder.mkdir(parents=True, exist_ok=True)
            write_parquet_atomic(window_state.committed_partials(spark, self.checkpoint, barrier), path)
        if generation not in aggregator.generation_batches:
            topology.send_generation_start(generation, window_state.batch_watermark_ms(self.checkpoint, barrier))
            self._await(lambda: generation in aggregator.generation_batches, topology,
                        f"the aggregator to read generation {generation}'s start")
        return aggregator.generation_batches[generation]

    def _await(self, done, topology, what: str) -> None:
        deadline = time.monotonic() + WAIT_S
        while not done():
            if topology.exception() is not None:
                raise RuntimeError(f"waiting for {what}: {topology.exception()}")
            if time.monotonic() > deadline:
                raise TimeoutError(f"waited {WAIT_S:g} s for {what}")
            time.sleep(0.05)
