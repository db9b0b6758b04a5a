"""HANDOFF: the hold/whitelist hand-off, units moving `batch` at a time (rescaling.md §3). Its
rounds (`handoff_rounds`) are the one source of the Spark driver's too (bench/rescale/handoff.py)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from groupings.rescaling.base import Cluster, Move, RescaleProtocol


def handoff_rounds(moved: Sequence[int], stateful: Iterable[int], batch: int) -> list[list[int]]:
    """The hand-off rounds of a rescale: the moved units without state first, in one round, then
    the others in `moved`'s order, `batch` per round.

    Args: moved: the units that change owner (ascending); stateful: the units that hold state when
        the rescale starts; batch: units per round (>= 1).
    Returns: the rounds, each a list of units; empty when nothing moves.
    """
    stateful = set(stateful)
    stateless = [u for u in moved if u not in stateful]
    with_state = [u for u in moved if u in stateful]
    return ([stateless] if stateless else []) + [with_state[i:i + batch] for i in range(0, len(with_state), batch)]


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
        rounds = handoff_rounds(move.moved, move.stateful, self.batch)
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
