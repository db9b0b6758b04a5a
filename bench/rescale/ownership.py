"""The ownership check of a rescale run on Spark: no batch routed a key to a worker that did not
hold the key's state in that batch.

Per batch the grouping stage reports its distinct (worker, key) pairs (`routing_summary`, in the
observer's batches). In batch b the state of key k is at the owner of the routing in force at b:
the routing of the last rescale whose switch batch is <= b (its state moved at the start of that
batch, before any tuple: bench/topology/state_transfer.py). A HANDOFF switches round by round: its
routing in force is `PartialRouting`, the released units at their new owners; in real-time mode,
`HandingOver` while its steps run (a routing with `owns(key, worker)` rather than one owner).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class PartialRouting:
    """The owners while a HANDOFF is under way: the units of `released` (key groups, vnodes) at
    their owner of `after`, every other unit at its owner of `before`."""

    before: object
    after: object
    released: frozenset

    def owner_of(self, key: str) -> int:
        routing = self.after if self.after.group_of(key) in self.released else self.before
        return routing.owner_of(key)


@dataclass(frozen=True)
class HandingOver:
    """The owners while a real-time HANDOFF is under way, in the aggregator's batches, which may hold
    partials routed before and after one of its steps (bench/rescale/handoff_realtime.py): a key at
    its owner of `before` or of `after` (the same worker for a key whose unit does not move)."""

    before: object
    after: object

    def owns(self, key: str, worker: int) -> bool:
        return worker in (self.before.owner_of(key), self.after.owner_of(key))


def violations(batches: dict[int, dict], switches: Sequence[tuple[int, object]], initial) -> list[tuple[int, int, str]]:
    """(batch, worker, key) of every routed pair whose worker was not its key's owner then.

    Args: batches: batch id -> observer batch (with `pairs`: [[key, worker], ...]); switches:
        (switch batch, routing in force from it), ascending; initial: the routing before them.
    """
    out = []
    for batch_id in sorted(batches):
        routing = initial
        for switch_batch, after in switches:
            if switch_batch <= batch_id:
                routing = after
        owns = getattr(routing, "owns", None) or (lambda key, worker: routing.owner_of(key) == worker)
        for key, worker in batches[batch_id].get("pairs") or []:
            if not owns(key, int(worker)):
                out.append((batch_id, int(worker), key))
    return out
