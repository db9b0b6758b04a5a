"""What a rescale moves: the owners before and after, and the state entries that change slot.

Pure (no Spark): the routings are the `groupings` instances the grouping stage uses, rescheduled
with the schedule's targets in order, exactly as the simulator does (bench/simulate/cluster.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import pandas as pd

from bench.topology.state_layout import slot_table
from groupings import create_grouping


def routing_at(grouping: str, workers: int, params: dict, targets: Sequence) -> object:
    """A fresh routing at `workers`, rescheduled with each of `targets` in order (the events applied
    so far). Only the key -> owner map matters here (KEY, KEY_GROUP, VNODE own keys)."""
    routing = create_grouping(grouping, workers, start_ms=0, **params)
    for target in targets:
        routing.reschedule(target)
    return routing


def java_routing(routing) -> dict:
    """A routing (KEY, KEY_GROUP, VNODE) as the JVM grouping stage installs it (`Routing.java`):
    `{"owners": [owner of each group]}` for an ownership grouping, `{"workers": n}` for KEY."""
    if hasattr(routing, "assignment"):
        return {"owners": [int(owner) for owner in routing.assignment()]}
    return {"workers": int(routing.num_workers)}


def units(routing) -> tuple[list[int], bool]:
    """(owner of every unit, whether units are keys): key groups / vnodes; KEY's units are keys."""
    if hasattr(routing, "assignment"):
        return list(routing.assignment()), False
    return [], True


@dataclass
class Move:
    """One rescale's state movement.

    extracts / installs: slot -> keys dropped / entries `(key, count, sum, first, last)` put;
    moved_groups / groups: units whose owner changed, of how many (KEY: keys with state);
    moved_keys: keys with state whose worker changed; state_entries_relaid: entries whose worker
    stays but whose slot changes (a new physical layout after `repartition`).
    """

    extracts: dict[int, list[str]] = field(default_factory=dict)
    installs: dict[int, list[tuple]] = field(default_factory=dict)
    moved_groups: int = 0
    groups: int = 0
    moved_keys: int = 0
    state_entries: int = 0
    state_bytes: int = 0
    state_entries_relaid: int = 0


def plan_move(state: pd.DataFrame, before, after, worker_space: int, partitions_before: int,
              partitions_after: int) -> Move:
    """The transfer of one rescale.

    Args: state: every worker's entries (`key, worker, count, sum, first_ts_ms, last_ts_ms`), read
        at the barrier; before / after: the routings in force before and after; worker_space: M,
        the worker ids the layout has slots for; partitions_*: N before and after (`repartition`).
    Raises: ValueError: an entry held by a worker that does not own its key before the rescale
        (the state is not what the routing says: an ownership violation happened earlier).
    """
    old_slots, new_slots = slot_table(worker_space, partitions_before), slot_table(worker_space, partitions_after)
    move = Move()
    old_units, by_key = units(before)
    new_units, _ = units(after)
    if by_key:
        move.groups = int(state["key"].nunique())
    else:
        move.groups = len(old_units)
        move.moved_groups = sum(1 for a, b in zip(old_units, new_units) if a != b)
    moved_keys = 0
    for row in state.itertuples(index=False):
        owner_before, owner_after = before.owner_of(row.key), after.owner_of(row.key)
        if owner_before != row.worker:
            raise ValueError(f"key {row.key!r} has state at worker {row.worker}, but its owner is {owner_before}")
        move.state_entries += 1
        move.state_bytes += len(row.key.encode()) + 32
        if owner_after != row.worker:
            moved_keys += 1
        source, target = old_slots[row.worker], new_slots[owner_after]
        if source == target:
            continue
        if owner_after == row.worker:
            move.state_entries_relaid += 1
        move.extracts.setdefault(source, []).append(row.key)
        move.installs.setdefault(target, []).append(
            (row.key, int(row.count), int(row.sum), int(row.first_ts_ms), int(row.last_ts_ms)))
    move.moved_keys = moved_keys
    if by_key:
        move.moved_groups = moved_keys
    return move
