"""The four rescale protocols, as event-driven models of the systems they come from.

Routing (which units change owner: key groups, vnodes, or keys for KEY) and protocol (how their
state moves) are independent (rescaling.md §3). A protocol talks to a `Cluster` -- routers
(splitters, one grouping instance each) and workers (FIFO queues holding per-key state) on one
clock -- through a handful of primitives, and schedules its own steps with `Cluster.at`. The
simulator implements `Cluster` on a virtual clock (bench/simulate/cluster.py); the Spark topology
implements it at micro-batch boundaries (part 2). Nothing here imports Spark or Kafka.

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

PROTOCOLS: tuple[str, ...] = ("STOP_THE_WORLD", "SHARED_STATE", "LEARNER", "HANDOFF")
"""The protocol names (`--protocol`)."""

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


class _PauseProtocol(RescaleProtocol):
    """The shape of STOP_THE_WORLD and SHARED_STATE: stop every router, barrier, move, resume."""

    def start(self, cluster: Cluster, move: Move, t0: float) -> None:
        self._t0 = t0
        for s in range(cluster.routers):
            cluster.at(t0 + self._stagger(s), lambda t, s=s: cluster.hold(s, None, t))
        cluster.at(t0 + self.cost.control_latency_ms + self._last_router(cluster),
                   lambda t: self._barrier(cluster, move, t))

    def _barrier(self, cluster: Cluster, move: Move, t: float) -> None:
        # aligned barrier: each worker snapshots once it has processed everything before it
        reached = {w: cluster.marker(w, t) for w in move.workers_before}
        self.steps["barrier_aligned_ms"] = max(reached.values()) - t
        resume = self._move_state(cluster, move, reached)
        self.figures["pause_ms"] = resume - self._t0
        cluster.at(resume, lambda t2: self._resume(cluster, move, t2))

    @abstractmethod
    def _move_state(self, cluster: Cluster, move: Move, reached: dict[int, float]) -> float:
        """Extract what moves at each worker's barrier time; return when processing resumes."""

    @abstractmethod
    def _installed_units(self, move: Move, worker: int) -> list[int]:
        """The units `worker` installs at resume."""

    def _resume(self, cluster: Cluster, move: Move, t: float) -> None:
        for w in move.workers_after:
            cluster.install(w, self._installed_units(move, w), t)
        for s in range(cluster.routers):
            cluster.release(s, None, t)
        cluster.finish(t)

    def _count_moved(self, cluster: Cluster, move: Move) -> None:
        entries, nbytes = cluster.state_size(move.moved)
        self.figures["state_entries_moved"] = entries
        self.figures["state_bytes_moved"] = nbytes


class StopTheWorld(_PauseProtocol):
    """Flink's rescale (stop with savepoint, restart at the new parallelism); Spark's only path.

    Every router stops; a barrier aligns the workers; every worker writes all of its state to the
    savepoint (in parallel: the slowest worker decides); the job restarts (`restart_ms`); every new
    worker reads the state of the units it now owns; processing resumes with the new routing.
    Cost: a full pause = control latency + barrier alignment + write of all state + restart +
    read of all state. Source: rescaling.md §3; Flink savepoints and `KeyGroupRangeAssignment`.
    """

    name = "STOP_THE_WORLD"

    def _move_state(self, cluster, move, reached):
        self._count_moved(cluster, move)
        written = []
        total_bytes = 0
        for w, t in reached.items():
            units = move.units_of(w, move.old_owner)
            entries, nbytes, _ = cluster.extract(w, units, t)
            written.append(t + self.cost.write_ms(entries, nbytes))
            total_bytes += nbytes
        saved = max(written)
        reads = []
        for w in move.workers_after:
            entries, nbytes = cluster.state_size(move.units_of(w, move.new_owner))
            reads.append(self.cost.read_ms(entries, nbytes))
        self.figures["state_bytes_written"] = self.figures["state_bytes_read"] = total_bytes
        self.steps.update(savepoint_written_after_ms=saved - self._t0, restart_ms=self.cost.restart_ms,
                          restore_ms=max(reads))
        return saved + self.cost.restart_ms + max(reads)

    def _installed_units(self, move, worker):
        return move.units_of(worker, move.new_owner)


class SharedState(_PauseProtocol):
    """Volley and RisingWave: pause at a barrier, checkpoint to shared storage, new assignment,
    each worker drops the units it lost and loads the units it gained; no worker-to-worker copy.

    Cost: a short pause = control latency + barrier alignment + checkpoint of the lost units'
    state (the slowest old owner) + the new mapping's broadcast (control latency) + load of the
    gained units (the slowest new owner). No restart.
    Source: rescaling.md §3; RisingWave `RescheduleFragment` applied at a barrier; Volley.
    """

    name = "SHARED_STATE"

    def _move_state(self, cluster, move, reached):
        self._count_moved(cluster, move)
        flushed = []
        written = 0
        for w, t in reached.items():
            lost = move.units_of(w, move.old_owner, move.moved)
            entries, nbytes, _ = cluster.extract(w, lost, t)
            flushed.append(t + self.cost.write_ms(entries, nbytes))
            written += nbytes
        mapped = max(flushed) + self.cost.control_latency_ms
        loads = [0.0]
        read = 0
        for w in move.workers_after:
            entries, nbytes = cluster.state_size(move.units_of(w, move.new_owner, move.moved))
            loads.append(self.cost.read_ms(entries, nbytes))
            read += nbytes
        self.figures["state_bytes_written"], self.figures["state_bytes_read"] = written, read
        self.steps.update(checkpoint_done_after_ms=max(flushed) - self._t0, load_ms=max(loads))
        return mapped + max(loads)

    def _installed_units(self, move, worker):
        return move.units_of(worker, move.new_owner, move.moved)


class Learner(RescaleProtocol):
    """Kafka Streams' warm-up (learner) tasks, KIP-441.

    A first rebalance (control latency) makes the new owner of every moved unit a learner: it
    replays the unit's changelog (the state at that time plus every update the old owner keeps
    writing) at `replay_entries_per_s`, while the old owner keeps processing -- no pause. Every
    `probing_interval_ms` a probing rebalance compares each learner's lag with
    `acceptable_lag_entries`; once within it, a second rebalance switches ownership: the routers
    hold the learner's units, the old owner finishes what it received and hands over, the learner
    restores the remaining lag, and the held tuples go to it. Units with no state switch at the
    first rebalance the same way (nothing to replay).
    Source: rescaling.md §3; Kafka Streams `acceptable.recovery.lag`, `probing.rebalance.interval.ms`.
    """

    name = "LEARNER"

    def start(self, cluster: Cluster, move: Move, t0: float) -> None:
        self._pending = 0
        self._t0 = self._last = t0
        t1 = t0 + self.cost.control_latency_ms
        self.steps["switch_after_ms"] = {}  # learner worker -> its switch, ms after the request
        stateless = [u for u in move.moved if u not in move.stateful]
        learners: dict[int, list[int]] = {}
        for u in move.moved:
            if u in move.stateful:
                learners.setdefault(move.new_owner[u], []).append(u)
        self._pending = len(learners) + (1 if stateless else 0)
        if not self._pending:
            cluster.at(t1, cluster.finish)
            return
        if stateless:
            cluster.at(t1, lambda t: self._switch(cluster, move, stateless, t, t, 0, -1))
        for w, units in sorted(learners.items()):
            cluster.at(t1, lambda t, w=w, units=units: self._begin(cluster, move, w, units, t))

    def _begin(self, cluster, move, worker, units, t):
        entries, _ = cluster.state_size(units)
        base = cluster.updates(units)
        probe = t + self.cost.probing_interval_ms
        cluster.at(probe, lambda tp: self._probe(cluster, move, worker, units, t, entries, base, tp))

    def _lag(self, cluster, units, began, entries, base, t) -> int:
        log = entries + cluster.updates(units) - base
        replayed = self.cost.replay_entries_per_s * (t - began) / 1000.0
        return max(0, int(log - replayed))

    def _probe(self, cluster, move, worker, units, began, entries, base, t):
        lag = self._lag(cluster, units, began, entries, base, t)
        if lag > self.cost.acceptable_lag_entries:
            nxt = t + self.cost.probing_interval_ms
            cluster.at(nxt, lambda tp: self._probe(cluster, move, worker, units, began, entries, base, tp))
            return
        def lag_of(tt: float) -> int:
            return self._lag(cluster, units, began, entries, base, tt)

        def second_rebalance(ts: float) -> None:
            log_records = entries + cluster.updates(units) - base
            self._switch(cluster, move, units, ts, began, log_records, worker, lag_of)

        cluster.at(t + self.cost.control_latency_ms, second_rebalance)

    def _switch(self, cluster, move, units, t, began, log_records, worker, lag_of=None):
        for s in range(cluster.routers):
            cluster.at(t + self._stagger(s), lambda th, s=s: cluster.hold(s, units, th))
        cluster.at(t + self._last_router(cluster),
                   lambda th: self._handover(cluster, move, units, th, log_records, worker, lag_of))

    def _handover(self, cluster, move, units, t, log_records, worker, lag_of):
        moved_entries = moved_bytes = 0
        done = []
        for w in sorted({move.old_owner[u] for u in units}):
            mine = [u for u in units if move.old_owner[u] == w]
            reached = cluster.marker(w, t)
            entries, nbytes, x = cluster.extract(w, mine, reached)
            moved_entries += entries
            moved_bytes += nbytes
            done.append(x)
        remaining = lag_of(max(done)) if lag_of else 0
        ready = max(done) + self.cost.control_latency_ms + self.cost.replay_ms(remaining)
        targets = sorted({move.new_owner[u] for u in units})
        for w in targets:
            cluster.install(w, [u for u in units if move.new_owner[u] == w], ready)
        self.figures["state_entries_moved"] += moved_entries
        self.figures["state_bytes_moved"] += moved_bytes
        self.figures["state_bytes_read"] += moved_bytes
        self.steps.setdefault("changelog_records", 0)
        self.steps["changelog_records"] += int(log_records) if worker >= 0 else 0
        if worker >= 0:
            self.steps["switch_after_ms"][worker] = t - self._t0
        release = ready + self.cost.control_latency_ms
        last = release + self._last_router(cluster)
        for s in range(cluster.routers):
            cluster.at(release + self._stagger(s), lambda tr, s=s: cluster.release(s, units, tr))
        cluster.at(last, lambda tr: self._one_done(cluster, tr))

    def _one_done(self, cluster, t):
        self._pending -= 1
        self._last = max(self._last, t)
        if self._pending == 0:
            cluster.finish(self._last)


@dataclass
class Handoff(RescaleProtocol):
    """The hold/whitelist hand-off: units move `batch` at a time, only the units in flight wait.

    SCALEUP(F') gives the routers the new owners (or SHUTDOWN of the removed workers); then, per
    round of `batch` units (the units with no state first, in one round): each router receives
    SHUTDOWN for the round's units, holds their tuples and sends FINAL on the data channel to each
    old owner; an old owner reacts only after the FINAL of *every* router, hands the units' state
    over (REDISTRIBUTE: control latency + transfer), the new owner installs it and whitelists the
    round's units at the routers once all of their state is installed; the routers send the held
    tuples after the state, then route the units to the new owner. The next round starts when
    every router has released. A larger batch needs fewer rounds (a shorter rescale) but holds
    more units at once, each until the whole batch's state has moved.
    Source: rescaling.md §3 (hold/whitelist algorithm; multiple splitters).
    """

    batch: int = 1
    name = "HANDOFF"

    def __post_init__(self) -> None:
        super().__post_init__()
        if not isinstance(self.batch, int) or isinstance(self.batch, bool) or self.batch < 1:
            raise ValueError(f"handoff batch must be an integer >= 1 (units per round), got {self.batch!r}")

    def start(self, cluster: Cluster, move: Move, t0: float) -> None:
        stateless = [u for u in move.moved if u not in move.stateful]
        stateful = [u for u in move.moved if u in move.stateful]
        rounds = ([stateless] if stateless else []) + [
            stateful[i:i + self.batch] for i in range(0, len(stateful), self.batch)]
        self.steps["rounds"] = len(rounds)
        self._rounds = rounds
        if not rounds:
            cluster.at(t0 + self.cost.control_latency_ms, cluster.finish)
            return
        cluster.at(t0, lambda t: self._round(cluster, move, 0, t))

    def _round(self, cluster, move, i, t):
        units = self._rounds[i]
        L = self.cost.control_latency_ms
        for s in range(cluster.routers):
            ts = t + L + self._stagger(s)  # SHUTDOWN reaches router s
            if "switch_before_final" in self.faults:
                cluster.at(ts, lambda th, s=s: cluster.switch(s, units, th))
            else:
                cluster.at(ts, lambda th, s=s: cluster.hold(s, units, th))
        # FINAL travels on the data channel behind the router's tuples; the old owner reacts
        # when it has the FINAL of every router (or of the first, when broken on purpose)
        react = t + L + (0.0 if "react_on_first_final" in self.faults else self._last_router(cluster))
        cluster.at(react, lambda tf: self._final(cluster, move, i, units, tf))

    def _final(self, cluster, move, i, units, t):
        L = self.cost.control_latency_ms
        installed = [t]
        for w in sorted({move.old_owner[u] for u in units}):
            mine = [u for u in units if move.old_owner[u] == w]
            reached = cluster.marker(w, t)
            entries, nbytes, x = cluster.extract(w, mine, reached)
            self.figures["state_entries_moved"] += entries
            self.figures["state_bytes_moved"] += nbytes
            arrive = x + L + self.cost.transfer_ms(entries, nbytes)  # REDISTRIBUTE
            by_target: dict[int, list[int]] = {}
            for u in mine:
                by_target.setdefault(move.new_owner[u], []).append(u)
            for target, group in sorted(by_target.items()):
                installed.append(cluster.install(target, group, arrive))
        # the round's units are whitelisted together once all of their state is installed
        whitelist = max(installed) + L
        if "switch_before_final" not in self.faults:
            for s in range(cluster.routers):
                cluster.at(whitelist + self._stagger(s), lambda th, s=s: cluster.release(s, units, th))
        nxt = whitelist + self._last_router(cluster)
        if i + 1 < len(self._rounds):
            cluster.at(nxt, lambda tn: self._round(cluster, move, i + 1, tn))
        else:
            cluster.at(nxt, cluster.finish)


def make_protocol(name: str, cost: CostModel | None = None, *, batch: int = 1,
                  faults: Iterable[str] = ()) -> RescaleProtocol:
    """The protocol called `name` (one of `PROTOCOLS`).

    Args: cost: the cost model (defaults); batch: HANDOFF's units per round (the others refuse a
        batch other than 1); faults: see `FAULTS` (HANDOFF only).
    Raises: ValueError: unknown name (listing the valid ones), a bad batch or fault.
    """
    cost = cost or CostModel()
    faults = frozenset(faults)
    key = name.strip().upper()
    if key == "HANDOFF":
        return Handoff(cost, faults, batch=batch)
    classes = {"STOP_THE_WORLD": StopTheWorld, "SHARED_STATE": SharedState, "LEARNER": Learner}
    if key not in classes:
        raise ValueError(f"unknown rescale protocol {name!r}; valid: {', '.join(PROTOCOLS)}")
    if batch != 1:
        raise ValueError(f"--handoff-batch applies to HANDOFF only, not {key}")
    if faults:
        raise ValueError(f"faults apply to HANDOFF only, not {key}")
    return classes[key](cost, faults)
