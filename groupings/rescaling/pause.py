"""The two pause protocols, STOP_THE_WORLD (Flink) and SHARED_STATE (Volley, RisingWave): stop
every router, align a barrier, move the state, resume (rescaling.md §3)."""

from __future__ import annotations

from abc import abstractmethod

from groupings.rescaling.base import Cluster, Move, RescaleProtocol


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
