"""LEARNER: Kafka Streams' warm-up (learner) tasks, KIP-441 (rescaling.md §3)."""

from __future__ import annotations

from groupings.rescaling.base import Cluster, Move, RescaleProtocol


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
