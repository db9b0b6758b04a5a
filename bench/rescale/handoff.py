"""HANDOFF on Spark, inside the running query (docs/rescaling.md, "HANDOFF on Spark").

The hold/whitelist hand-off (rescaling.md §3): no global pause; the moved units (key groups,
vnodes) change owner `batch` at a time, and only the tuples of the units in flight wait. Each step
is one rescale channel epoch (bench/topology/rescale_channel.py) published without a request, so
the query never waits for it; the batch that reads it applies it at every router (each splitter
instance gets a copy: the batch boundary is every router's FINAL) and at the workers:

- step 0 (SCALEUP + SHUTDOWN of round 0): the routers learn the new owners, route every moved unit
  to its old owner until it is whitelisted, and hold round 0's units from this batch on;
- step j >= 1 (REDISTRIBUTE + whitelist of round j - 1, SHUTDOWN of round j): once the batch H that
  held round j - 1 has committed, the old owners' state of those units is final (no router sent
  them a tuple of those units since). The driver reads it at batch H with Spark's state data
  source; the step moves it (extract at the old owner, install at the new one, before any tuple),
  and the routers send the held tuples, then every later tuple of those units, to the new owner.

Rounds as in the simulator (groupings/rescaling/handoff.py `handoff_rounds`, one implementation
for both): the moved units with no state at the rescale's start go first, in one round, then the
others in ascending order, `batch` per round. A round takes at least two batches: its state can be
read only once its hold batch has committed, and the query plans the next batch at once.

A driver killed at any step and started again with the same run id goes on from the journal: the
steps' epochs are fixed when the rounds are, a published step is never rewritten, and the state a
step moves is read again at the same committed batch.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from bench.observer.observer import weighted_quantile
from bench.rescale import plan as move_plan
from bench.rescale.driver import LiveRescaleDriver, batch_ids, elapsed_ms, hang_after
from bench.rescale.learner import batch_reading
from bench.rescale.ownership import PartialRouting
from groupings.rescaling import handoff_rounds as rounds_of

HANDOFF_MIN_WATERMARK_DELAY_S = 30
"""A HANDOFF run's watermark delay at least (s): a held tuple goes out with its own event time, which
must still be at or above the watermark when it is released (Spark refuses an older row:
`EMITTING_ROWS_OLDER_THAN_WATERMARK_NOT_ALLOWED`), so the delay must outlast a round (two batches
and a state read: 5-15 s of a live input's event time on 2 cores)."""


@dataclass
class Handoff(LiveRescaleDriver):
    """The driver loop calls `advance` after every poll while the query runs. `batch`: units per round."""

    batch: int = 1
    DONE = "done"
    PROTOCOL = "HANDOFF"

    def first_epoch(self, index: int) -> int:
        """The channel epoch of event `index`'s step 0: the epochs follow the previous event's."""
        if index == 0:
            return 1
        previous = self.journal.event(index - 1)
        return previous["first_epoch"] + len(previous["rounds"]) + 1

    def advance(self, spark, observer, log) -> None:
        """Take the next event as far as the query allows now (never waits for a batch)."""
        index = self.next_index()
        if index is None:
            return
        entry = self.journal.event(index)
        if entry is None:
            if not self.due(observer):
                return
            entry = self._scaleup(spark, index, observer, log)
        rounds = entry["rounds"]
        while entry["published_steps"] <= len(rounds):
            step = entry["published_steps"]
            hold_batch = None
            if step > 0:
                hold_batch = self._hold_batch(entry, step - 1)
                if hold_batch is None:
                    return  # the batch that held round step - 1 has not committed yet
            self._publish(spark, index, step, hold_batch, log)
            entry = self.journal.event(index)
        done = self._done(index, entry)
        if done is not None:
            log(f"rescale {self.events[index].label()} (HANDOFF): {len(rounds)} rounds, the new routing in force "
                f"from batch {done['switch_batch']}")

    def _barrier_batch(self, scaleup_batch: int) -> int:
        """The event's barrier batch in the observer's batches: the scale-up's."""
        return scaleup_batch

    def _hold_batch(self, entry: dict, step: int) -> int | None:
        """The committed batch at which the old owners' state of round `step`'s units is final: the
        batch that read step `step` (its hold); None before it has committed."""
        return batch_reading(self.checkpoint, entry["first_epoch"] + step, entry["scaleup_batch"])

    def _done(self, index: int, entry: dict) -> dict | None:
        """The event journalled done once the batch that read its last step (the last whitelist) has
        committed, with that batch as its switch batch; None before."""
        done = batch_reading(self.checkpoint, entry["first_epoch"] + len(entry["rounds"]), entry["scaleup_batch"])
        if done is None:
            return None
        return self.journal.record(index, phase="done", switch_batch=done, step_batches=self._step_batches(entry))

    def _routings(self, index: int):
        c = self.config
        prior = self.targets()[:index]
        return (move_plan.routing_at(c.grouping, c.workers, c.grouping_params, prior),
                move_plan.routing_at(c.grouping, c.workers, c.grouping_params, prior + [self.events[index].target]))

    def _scaleup(self, spark, index: int, observer, log) -> dict:
        """The rounds, from the state of the last committed batch (read while the query runs)."""
        c = self.config
        event = self.events[index]
        start_wall_ms = int(time.time() * 1000)
        scaleup_batch = batch_ids(self.checkpoint / "commits")[-1]
        t = time.monotonic()
        state = self.read_state(spark, scaleup_batch)
        read_ms = elapsed_ms(t)
        before, after = self._routings(index)
        old, new = before.assignment(), after.assignment()
        moved = [u for u in range(len(old)) if old[u] != new[u]]
        stateful = {int(after.group_of(k)) for k in state["key"]}
        rounds = rounds_of(moved, stateful, self.batch)
        self.journal.record(
            index, event=event.label(), at_ms=event.at_ms, target=event.target, phase="scaleup",
            started_ms=self.started_ms(observer), requested_wall_ms=start_wall_ms, stop_wall_ms=start_wall_ms,
            scaleup_batch=scaleup_batch, barrier_batch=self._barrier_batch(scaleup_batch),
            first_epoch=self.first_epoch(index),
            rounds=rounds, published_steps=0, handoff_batch=self.batch,
            protocol=self.PROTOCOL, routing=c.grouping,
            workers_before=len(before.workers), workers_after=len(after.workers),
            worker_ids_before=list(before.workers), worker_ids_after=list(after.workers),
            moved_groups=len(moved), groups=len(old), units="groups",
            partitions_before=c.partitions, partitions_after=c.partitions,
            moved_keys=0, state_entries_moved=0, state_bytes_moved=0, transfer_records=0,
            steps={"rounds": len(rounds), "scaleup_read_ms": read_ms, "state_read_ms": []})
        hang_after("scaleup", index)
        log(f"rescale {event.label()} (HANDOFF): {len(moved)} of {len(old)} units move in {len(rounds)} rounds "
            f"of {self.batch} (state of batch {scaleup_batch})")
        return self.journal.event(index)

    def _publish(self, spark, index: int, step: int, hold_batch: int | None, log) -> None:
        """Publish step `step` of event `index`: SCALEUP and round 0's hold (step 0), or round
        step - 1's state, read at its hold batch, with its whitelist and the next round's hold."""
        entry = self.journal.event(index)
        rounds, epoch = entry["rounds"], entry["first_epoch"] + step
        nxt = rounds[step] if step < len(rounds) else []
        figures: dict = {}
        records: list = []
        if step == 0:
            before, after = self._routings(index)
            old = before.assignment()
            pending = {str(u): old[u] for r in rounds for u in r}
            control = {"pending": pending, "hold": nxt}
            switch = (index + 1, entry["target"])
        else:
            units = rounds[step - 1]
            t = time.monotonic()
            move = self._move(spark, index, units, hold_batch)
            records = self._records(epoch, move.extracts, move.installs)
            entries = sum(len(v) for v in move.installs.values())
            figures = {"moved_keys": entry["moved_keys"] + entries,
                       "state_entries_moved": entry["state_entries_moved"] + entries,
                       "state_bytes_moved": entry["state_bytes_moved"] + move.state_bytes,
                       "transfer_records": entry["transfer_records"] + entries,
                       "steps": {**entry["steps"], "state_read_ms": entry["steps"]["state_read_ms"] + [elapsed_ms(t)]}}
            control = {"whitelist": units, "hold": nxt}
            switch = None
        self._deliver(epoch, records, switch, control)
        self.journal.record(index, phase="handing_over", published_steps=step + 1, **figures)
        hang_after("handing_over", index)

    def _deliver(self, epoch: int, records: list, switch: tuple | None, control: dict) -> None:
        """Step `epoch` into the rescale channel: the query's next batch reads it, transfers and all."""
        self.channel.publish(epoch, records, switch=switch, handoff=control)

    def _move(self, spark, index: int, units: list[int], hold_batch: int) -> move_plan.Move:
        """The state of `units` at their old owners at `hold_batch` (final: held since), to their new
        owners. Raises: ValueError: an entry of those units at a worker other than its old owner."""
        c = self.config
        before, after = self._routings(index)
        state = self.read_state(spark, hold_batch)
        wanted = set(units)
        mine = state.loc[[int(after.group_of(k)) in wanted for k in state["key"]]]
        return move_plan.plan_move(mine, before, after, c.worker_space, c.partitions, c.partitions)

    def ownership_switches(self) -> list[tuple[int, object, int]]:
        """(batch, routing in force from it, event index): per released round, the routing before
        the event with the units released so far at their new owners."""
        c = self.config
        out, targets = [], []
        for entry in self.journal.events:
            steps = entry.get("step_batches") or self._step_batches(entry)
            before = move_plan.routing_at(c.grouping, c.workers, c.grouping_params, targets)
            targets = targets + [entry["target"]]
            after = move_plan.routing_at(c.grouping, c.workers, c.grouping_params, targets)
            released: set[int] = set()
            for j, units in enumerate(entry["rounds"], start=1):
                released |= set(units)
                if j < len(steps) and steps[j] is not None:
                    out.append((steps[j], PartialRouting(before, after, frozenset(released)), entry["index"]))
        return out

    def _step_batches(self, entry: dict) -> list[int | None]:
        """The batch that read each published step of an event under way (None: not yet)."""
        return [batch_reading(self.checkpoint, entry["first_epoch"] + j, entry["scaleup_batch"])
                for j in range(entry.get("published_steps", 0))]

    def event_records(self, observer, violations_of) -> list[dict]:
        """summary.json `rescale.events`: no global pause; `rescale_ms` from the start to the end of
        the batch from which the new routing is in force; the held tuples and their extra delay, on
        the wall clock: a tuple held in batch h and sent in batch r finished `end(r) - end(h)` later
        than it would have (a batch's tuples finish at its end)."""
        out = []
        for entry in self.journal.events:
            rec = {k: v for k, v in entry.items() if k not in ("phase", "target", "published_steps")}
            rec["pause_ms"] = 0
            steps = entry.get("step_batches") or self._step_batches(entry)
            done = observer.batches.get(entry.get("switch_batch")) if entry.get("switch_batch") is not None else None
            if done is not None:
                rec["rescale_ms"] = done["end_ms"] - entry["stop_wall_ms"]
                rec["done_ms"] = done["max_ts_ms"] - self.t_first_ms if done.get("max_ts_ms") and self.t_first_ms \
                    else None
            delays, weights = [], []
            last = entry.get("switch_batch", float("inf"))
            for b in sorted(b for b in observer.batches if steps and steps[0] is not None and steps[0] <= b <= last):
                for hold_batch, tuples in observer.batches[b].get("released") or []:
                    held = observer.batches.get(hold_batch)
                    if held is not None:
                        delays.append(observer.batches[b]["end_ms"] - held["end_ms"])
                        weights.append(tuples)
            rec["held_tuples"] = int(sum(weights))
            for name, q in (("p50", 0.5), ("p99", 0.99), ("max", 1.0)):
                rec[f"hold_delay_ms_{name}"] = weighted_quantile(np.asarray(delays), np.asarray(weights), q) \
                    if weights else None
            rec["ownership_violations"] = violations_of(entry["index"])
            out.append(rec)
        return out
