"""HANDOFF at a router (one grouping instance of the grouping stage): hold, whitelist, release.

The hold/whitelist hand-off (docs/rescaling.md, "HANDOFF on Spark"): the routers learn the new
owners at once (SCALEUP), but route each moved unit (key group, vnode) to its *old* owner until the
unit is whitelisted. A round of units is first held (SHUTDOWN): from the batch that carries the
hold, a router keeps the units' tuples in its state instead of routing them, so that the old
owners' state of those units is final once that batch has committed. The driver then reads that
state, and a later batch carries the units' state to the new owners (REDISTRIBUTE) together with
their whitelist: the router sends the held tuples, then every later tuple of those units, to the
new owner. On micro-batches the batch boundary is FINAL: every router applies a control record in
the same batch (the rescale channel gives each splitter instance a copy).

Pure: no Spark. `HandoffState` is pickled into the grouping stage's state store, one per splitter
instance (bench/topology/grouping_stage.py).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

CONTROL_KEY = "handoff"
"""The field of a rescale channel switch-slot record that carries a HANDOFF step (bench/rescale/handoff.py):
`{"pending": {unit: old owner}}` (SCALEUP, with the event's `switch` and `target`), `"whitelist": [unit, ...]`
(release these units to their new owners), `"hold": [unit, ...]` (hold these units from this batch on)."""


class HeldBelowWatermarkError(RuntimeError):
    """A held tuple's event time fell below the watermark before its release: Spark would refuse to
    emit it (`EMITTING_ROWS_OLDER_THAN_WATERMARK_NOT_ALLOWED`)."""


def _empty_buffer() -> dict:
    return {"key": np.empty(0, dtype=object), "count": np.empty(0, dtype=np.int64),
            "event_ms": np.empty(0, dtype=np.int64), "unit": np.empty(0, dtype=np.int64),
            "hold_batch": np.empty(0, dtype=np.int64)}


@dataclass
class Routed:
    """One batch's tuples as a HANDOFF router sends them: released held tuples first (arrival order),
    then the batch's tuples that were not held, in routing order. `released`: `[[hold batch, tuples],
    ...]` of the held tuples sent in this batch (the batch each was held in), ascending."""

    key: np.ndarray
    count: np.ndarray
    event_ms: np.ndarray
    worker: np.ndarray
    released: list


@dataclass
class HandoffState:
    """A router's part of a hand-off in progress.

    epoch: the last rescale channel epoch applied (an epoch is applied once); pending: unit -> its
    old owner, for the moved units not whitelisted yet (routed the old way unless held); held: the
    units whose tuples are kept; buffer: the kept tuples, columns `key, count, event_ms, unit,
    hold_batch` (arrival order). `released` collects the units whitelisted by the controls of the
    current batch, whose kept tuples go out with it.
    """

    epoch: int = 0
    pending: dict[int, int] = field(default_factory=dict)
    held: set[int] = field(default_factory=set)
    buffer: dict = field(default_factory=_empty_buffer)
    released: set[int] = field(default_factory=set)

    @property
    def active(self) -> bool:
        """Whether routing differs from the grouping's own (moved units pending or tuples kept)."""
        return bool(self.pending or self.held or len(self.buffer["key"]))

    def apply(self, epoch: int, step: dict) -> None:
        """Apply one control step of channel epoch `epoch` (ignored if applied already): SCALEUP's
        `pending`, then `whitelist`, then `hold` (a step may release one round and hold the next).

        Raises: ValueError: a unit whitelisted that is not pending, or held that is not pending."""
        if epoch <= self.epoch:
            return
        self.epoch = epoch
        if "pending" in step:
            self.pending = {int(u): int(w) for u, w in step["pending"].items()}
        for unit in map(int, step.get("whitelist", ())):
            if unit not in self.pending:
                raise ValueError(f"handoff epoch {epoch}: unit {unit} whitelisted but not pending")
            del self.pending[unit]
            self.held.discard(unit)
            self.released.add(unit)
        for unit in map(int, step.get("hold", ())):
            if unit not in self.pending:
                raise ValueError(f"handoff epoch {epoch}: unit {unit} held but not pending")
            self.held.add(unit)

    def route(self, grouping, keys: np.ndarray, counts: np.ndarray, event_ms: np.ndarray, now: np.ndarray,
              batch_id: int, watermark_ms: int | None = None) -> Routed:
        """Route one batch (tuples in routing order) with the hand-off in force; `grouping` is the
        instance with the new routing (SCALEUP applied), whose `group_of` gives a key's unit.

        Kept tuples of the units whitelisted in this batch go out first, to the new owner; tuples
        of held units are kept (`batch_id` recorded); tuples of pending units go to the old owner;
        the others are routed by `grouping`. Raises: HeldBelowWatermarkError: a released tuple's
        event time is below `watermark_ms` (epoch ms; the hold outlasted the watermark delay)."""
        units = units_of(grouping, keys)
        buffer = self.buffer
        out_of_buffer = np.isin(buffer["unit"], np.fromiter(self.released, np.int64, len(self.released)))
        self.released = set()
        held = np.isin(units, np.fromiter(self.held, np.int64, len(self.held)))
        if held.any():
            buffer = {"key": np.concatenate([buffer["key"], keys[held]]),
                      "count": np.concatenate([buffer["count"], counts[held]]),
                      "event_ms": np.concatenate([buffer["event_ms"], event_ms[held]]),
                      "unit": np.concatenate([buffer["unit"], units[held]]),
                      "hold_batch": np.concatenate([buffer["hold_batch"], np.full(held.sum(), batch_id, np.int64)])}
            out_of_buffer = np.concatenate([out_of_buffer, np.zeros(held.sum(), dtype=bool)])
        released = {name: values[out_of_buffer] for name, values in buffer.items()}
        self.buffer = {name: values[~out_of_buffer] for name, values in buffer.items()}
        if watermark_ms is not None and watermark_ms > 0 and len(released["event_ms"]) \
                and int(released["event_ms"].min()) < watermark_ms:
            raise HeldBelowWatermarkError(
                f"HANDOFF held a tuple of event time {int(released['event_ms'].min())} ms past the watermark "
                f"({watermark_ms} ms) before its release: raise --watermark-delay-s above a round's length")
        kept = ~held
        keys, counts, event_ms, now, units = keys[kept], counts[kept], event_ms[kept], now[kept], units[kept]
        old = np.array([self.pending.get(int(u), -1) for u in units], dtype=np.int32) if self.pending \
            else np.full(len(units), -1, np.int32)
        fresh = old < 0
        # the released tuples and the others of the new routing, through the grouping (its loads)
        to_route = np.concatenate([released["key"], keys[fresh]])
        clock = np.concatenate([np.full(len(released["key"]), int(now[0]) if len(now) else 0, np.int64), now[fresh]])
        if len(clock):
            clock = np.maximum.accumulate(clock)
        routed = np.asarray(grouping.route(to_route, clock) if len(to_route) else np.empty(0), np.int32)
        n = len(released["key"])
        workers = np.empty(len(keys), np.int32)
        workers[fresh] = routed[n:]
        workers[~fresh] = old[~fresh]
        batches, tuples = np.unique(released["hold_batch"], return_counts=True)
        return Routed(key=np.concatenate([released["key"], keys]),
                      count=np.concatenate([released["count"], counts]),
                      event_ms=np.concatenate([released["event_ms"], event_ms]),
                      worker=np.concatenate([routed[:n], workers]),
                      released=[[int(b), int(t)] for b, t in zip(batches, tuples)])


def units_of(grouping, keys: np.ndarray) -> np.ndarray:
    """The unit (key group, vnode) of every key, int64: `grouping.group_of` once per distinct key."""
    if not len(keys):
        return np.empty(0, dtype=np.int64)
    codes, distinct = pd.factorize(keys)
    return np.array([grouping.group_of(k) for k in distinct], dtype=np.int64)[codes]
