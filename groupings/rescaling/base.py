"""What every rescale protocol is written against: the `Cluster` it drives, the `Move` it carries
out, and the `RescaleProtocol` base class.

A protocol talks to a `Cluster` -- routers (splitters, one grouping instance each) and workers (FIFO
queues holding per-key state) on one clock -- through a handful of primitives, and schedules its own
steps with `Cluster.at`. The simulator implements `Cluster` on a virtual clock
(bench/simulate/cluster.py); the Spark topology implements it at micro-batch boundaries (part 2).
Nothing here imports Spark or Kafka.

Units and ownership: `Move.old_owner[u]` / `Move.new_owner[u]` are the owners of unit u before and
after; a unit's state lives at exactly one worker (or is in transit). A protocol must never let a
worker process a tuple of a unit whose state it does not hold; the cluster counts such tuples
(`ownership_violations`). `faults` breaks a protocol on purpose to show that the count sees it.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from groupings.rescaling.cost import CostModel


FAULTS: tuple[str, ...] = ("switch_before_final", "react_on_first_final")
"""Ways to break HANDOFF on purpose: routers route moved units to the new owner at SHUTDOWN
instead of holding them until the whitelist; an old owner hands over after the first router's
FINAL instead of every router's (needs `router_stagger_ms` > 0 to show)."""


class Cluster(Protocol):
    """What a protocol can ask of the routers and workers; times are ms on the cluster's clock.

    Every primitive acts at time `t` >= the current time (the caller is an action run by `at`).
    Units are ints; `units=None` means every unit.
    """

    routers: int

    def at(self, t: float, action: Callable[[float], None]) -> None:
        """Run `action(t)` at time t, after every tuple that arrived before t was dispatched."""

    def hold(self, router: int, units: Sequence[int] | None, t: float) -> None:
        """Router buffers every tuple of `units` from t on (in arrival order)."""

    def release(self, router: int, units: Sequence[int] | None, t: float) -> None:
        """Router routes `units` to their new owners from t on, its buffered tuples first."""

    def switch(self, router: int, units: Sequence[int] | None, t: float) -> None:
        """Router routes `units` to their new owners from t on, without any hold."""

    def marker(self, worker: int, t: float) -> float:
        """An in-channel marker (barrier, FINAL) sent at t: when the worker has processed every
        tuple it received before it (its FIFO drained up to t)."""

    def extract(self, worker: int, units: Sequence[int] | None, t: float) -> tuple[int, int, float]:
        """Worker gives up the state it holds of `units` at its FIFO position t (state in transit).
        Returns (entries, bytes, time it happened)."""

    def install(self, worker: int, units: Sequence[int] | None, t: float) -> float:
        """Worker takes the in-transit state of `units` at t; returns the time it happened."""

    def state_size(self, units: Iterable[int] | None) -> tuple[int, int]:
        """(entries, bytes) of the state of `units` now, wherever it is."""

    def updates(self, units: Iterable[int]) -> int:
        """Tuples dispatched so far to the units (changelog records written by their owners)."""

    def finish(self, t: float) -> None:
        """The new routing is fully in force at t (the rescale is complete)."""


@dataclass(frozen=True)
class Move:
    """What a rescale moves. `old_owner`/`new_owner`: the owner of every unit, before and after.

    moved: the units whose owner changes, ascending. `stateful`: the units that hold state when
    the rescale starts (the others have nothing to move).
    """

    old_owner: Sequence[int]
    new_owner: Sequence[int]
    workers_before: tuple[int, ...]
    workers_after: tuple[int, ...]
    moved: tuple[int, ...]
    stateful: frozenset[int] = frozenset()

    def units_of(self, worker: int, owners: Sequence[int], among: Iterable[int] | None = None) -> list[int]:
        """The units (of `among`, default all) that `owners` gives to `worker`, ascending."""
        pool = range(len(owners)) if among is None else among
        return sorted(u for u in pool if owners[u] == worker)


@dataclass
class RescaleProtocol(ABC):
    """One rescale at a time: `start(cluster, move, t0)` schedules every step on the cluster.

    Figures of the protocol (filled as it runs): `pause_ms` (global pause, every tuple held),
    `state_entries_moved` / `state_bytes_moved` (state of the moved units that changed worker),
    `state_bytes_written` / `state_bytes_read` (snapshot, checkpoint or changelog traffic), and
    protocol-specific steps in `steps`.
    """

    cost: CostModel = field(default_factory=CostModel)
    faults: frozenset[str] = frozenset()
    name = "?"

    def __post_init__(self) -> None:
        unknown = sorted(set(self.faults) - set(FAULTS))
        if unknown:
            raise ValueError(f"unknown fault(s) {unknown}; valid: {', '.join(FAULTS)}")
        self.figures: dict = {"pause_ms": 0.0, "state_entries_moved": 0, "state_bytes_moved": 0,
                              "state_bytes_written": 0, "state_bytes_read": 0}
        self.steps: dict = {}

    @abstractmethod
    def start(self, cluster: Cluster, move: Move, t0: float) -> None:
        """Begin the rescale requested at t0."""

    # helpers shared by the protocols
    def _stagger(self, router: int) -> float:
        return router * self.cost.router_stagger_ms

    def _last_router(self, cluster: Cluster) -> float:
        return self._stagger(cluster.routers - 1)
