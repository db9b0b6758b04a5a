"""LEARNER on Spark, inside the running query (docs/rescaling.md, "LEARNER on Spark").

As in Kafka Streams (KIP-441): a warm-up task on the new owner restores the moved state from the
changelog while the old owner keeps processing; once the warm-up has caught up, a second
rebalance moves the active task, and the new owner restores only the remaining lag before it
processes. On Spark, with the rescale channel of SHARED_STATE (bench/rescale/shared_state.py):

1. warming: the event's time is reached. Without pausing anything, the driver reads the last
   committed batch's state (the state data source reads a running query's committed batches) and
   publishes a warm-up epoch: the moved entries, installed at their new owners' slots, which get
   no tuple of those keys until the switch. The next batch planned reads it (no barrier).
2. requested: the batch that read the warm-up epoch committed (the warm-up caught up,
   `warm_up_ms`); the driver asks for the switch's barrier.
3. savepoint / published / switched: as SHARED_STATE, but the switch epoch installs only the lag:
   the moved entries that changed since the warm-up snapshot (or were created since). The old
   owners drop every moved key there.

The warm-up snapshot is the warm-up epoch itself (published once, never rewritten), so a driver
killed at any step and started again computes the same lag.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass

from bench.rescale.driver import batch_ids, hang_after
from bench.rescale.shared_state import SharedState
from bench.topology import state_transfer
from bench.topology.state_layout import slot_table


def batch_reading(checkpoint, epoch: int, after: int = -1) -> int | None:
    """The first committed batch after batch `after` whose offsets include rescale channel epoch
    `epoch` or a later one (the channel's offset lines are `{"epoch": e}`), or None."""
    committed = set(batch_ids(checkpoint / "commits"))
    for batch in batch_ids(checkpoint / "offsets"):
        if batch <= after or batch not in committed:
            continue
        for line in (checkpoint / "offsets" / str(batch)).read_text().splitlines()[2:]:
            offset = json.loads(line) if line.startswith("{") else None
            if isinstance(offset, dict) and set(offset) == {"epoch"} and int(offset["epoch"]) >= epoch:
                return batch
    return None


@dataclass
class Learner(SharedState):
    PROTOCOL = "LEARNER"

    def warm_up_epoch(self, index: int) -> int:
        return 2 * index + 1

    def switch_epoch(self, index: int) -> int:
        return 2 * index + 2

    def advance(self, spark, observer, log) -> None:
        index = self.next_index()
        if index is not None:
            entry = self.journal.event(index)
            if entry is None:
                if self.due(observer):
                    self._warm_up(spark, index, observer, log)
                return
            if entry["phase"] == "warming":
                caught_up = self._warmed_batch(index, entry)
                if caught_up is None:
                    return
                now = int(time.time() * 1000)
                self.journal.record(index, phase="requested", requested_wall_ms=now, warmed_batch=caught_up,
                                    steps={"warm_up_ms": now - entry["warm_up_wall_ms"]})
        super().advance(spark, observer, log)

    def _warm_up(self, spark, index: int, observer, log) -> None:
        """1. The moved entries of the last committed batch, installed at their new owners."""
        event = self.events[index]
        warm_up_batch = batch_ids(self.checkpoint / "commits")[-1]
        move, _, _, _ = self._plan(spark, index, warm_up_batch)
        epoch = self.warm_up_epoch(index)
        self._deliver_warm_up(epoch, self._records(epoch, {}, move.installs))
        entries = len(self._snapshot(index))  # of the published epoch (a resumed driver keeps the first)
        self.journal.record(index, event=event.label(), at_ms=event.at_ms, target=event.target, phase="warming",
                            started_ms=self.started_ms(observer), warm_up_batch=warm_up_batch,
                            warm_up_wall_ms=int(time.time() * 1000), warm_up_entries=entries)
        hang_after("warming", index)
        log(f"rescale {event.label()} (LEARNER): {entries} entries warming up at their new owners "
            f"(state of batch {warm_up_batch})")

    def _deliver_warm_up(self, epoch: int, records: list[tuple[str, str]]) -> None:
        """The warm-up epoch's records into the channel (published once: the warm-up snapshot)."""
        self.channel.publish(epoch, records)

    def _warmed_batch(self, index: int, entry: dict) -> int | None:
        """The committed batch that read event `index`'s warm-up epoch, or None before one has."""
        return batch_reading(self.checkpoint, self.warm_up_epoch(index), entry["warm_up_batch"])

    def _held(self, state, index: int, before):
        """The state the switch moves: without the warm-up copies (entries at a key's new owner,
        which does not own it before the switch)."""
        snapshot = self._snapshot(index)
        if not snapshot or state.empty:
            return state
        slots = slot_table(self.config.worker_space, self.config.partitions)
        copy = [(slots[w], k) in snapshot and before.owner_of(k) != w for k, w in zip(state["key"], state["worker"])]
        return state.loc[[not c for c in copy]].reset_index(drop=True)

    def _snapshot(self, index: int) -> dict[tuple[int, str], list]:
        """(slot, key) -> [count, sum, first_ts_ms, last_ts_ms] of the published warm-up epoch ({}
        before it is published)."""
        if not self.channel.published(self.warm_up_epoch(index)):
            return {}
        return {(int(r["slot"]), e[0]): e[1:] for r in self.channel.records(self.warm_up_epoch(index))
                for e in r.get(state_transfer.INSTALL, ())}

    def _transfers(self, index: int, epoch: int, move) -> tuple[list, dict]:
        """The switch epoch: the old owners drop every moved key, the new owners install the lag, what
        changed since the warm-up copy (an install merges: `state_transfer`)."""
        snapshot = self._snapshot(index)
        lag = {slot: [lag_entry(e, snapshot.get((slot, e[0]))) for e in entries
                      if snapshot.get((slot, e[0])) != [int(v) for v in e[1:]]]
               for slot, entries in move.installs.items()}
        lag = {slot: entries for slot, entries in lag.items() if entries}
        lag_entries = sum(len(v) for v in lag.values())
        return (self._records(epoch, move.extracts, lag),
                {"transfer_records": lag_entries, "lag_entries": lag_entries,
                 "changelog_records": len(snapshot) + lag_entries})


def lag_entry(entry: tuple, copy: list | None) -> tuple:
    """An install entry `(key, count, sum, first_ts_ms, last_ts_ms)` as the lag over the warm-up
    `copy` ([count, sum, first_ts_ms, last_ts_ms] of the same key, or None): merged into the copy it
    gives `entry` (the counts add, the first and last timestamps take the min and max)."""
    if copy is None:
        return entry
    key, count, total, first, last = entry
    return key, int(count) - int(copy[0]), int(total) - int(copy[1]), int(first), int(last)
