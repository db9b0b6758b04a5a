"""The simulator's `Cluster` of groupings.rescaling: routers and stateful FIFO workers on the
virtual clock (ms).

Routers (one per splitter) route each tuple by the current owners of its unit (key group, vnode,
or the key itself for KEY); a protocol holds, releases and switches units at the routers and
extracts / installs state at the workers. Workers are FIFO queues spending `tuple_work_ms` per
tuple; every worker operation is logged with the time it happened, for the ownership replay
(bench/simulate/rescale.py).
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterable, Sequence

import numpy as np
import numpy.typing as npt

from bench.simulate.engine import TupleTable
from groupings import create_grouping
from groupings.rescaling import CostModel, entry_bytes

OLD, HOLD, NEW = 0, 1, 2
"""A router's routing of a unit: by the old owners, held (buffered), by the new owners."""
EXTRACT, INSTALL = 1, 2
"""Kinds of the logged state operations of a worker."""


class Units:
    """The routing's units and their owners: groups for KEY_GROUP/VNODE, keys for KEY."""

    def __init__(self, grouping: str, workers: int, params: dict, keys: Sequence[str]) -> None:
        self.g = create_grouping(grouping, workers, **params)
        self.by_key = grouping == "KEY"
        self.keys = keys
        if self.by_key:
            self.unit_of = np.arange(len(keys), dtype=np.int64)
            self.count = len(keys)
        else:
            self.unit_of = np.fromiter((self.g.group_of(k) for k in keys), dtype=np.int64, count=len(keys))
            self.count = self.g.groups

    def owners(self) -> list[int]:
        if self.by_key:
            return [self.g.owner_of(k) for k in self.keys]
        return self.g.assignment()

    def reschedule(self, target) -> list[int]:
        self.g.reschedule(target)
        return self.owners()


class SimCluster:
    """The `Cluster` of groupings.rescaling on the simulator's virtual clock (ms)."""

    def __init__(self, table: TupleTable, units: Units, routers: int, cost: CostModel, state_bytes: int) -> None:
        self.table = table
        self.units = units
        self.routers = routers
        self.cost = cost
        m = len(table)
        self.owner_old = units.owners()
        self.owner_new = list(self.owner_old)
        self.initial_owner = list(self.owner_old)
        self.status = [bytearray(units.count) for _ in range(routers)]
        self.buffers: list[dict[int, list[int]]] = [{} for _ in range(routers)]
        self.free: dict[int, float] = {}
        # per-tuple columns as Python lists while the loop runs (numpy item access is slow);
        # `close` turns the outputs into arrays
        self._key = table.key_code.tolist()
        self._splitter = table.splitter.tolist()
        self._unit = units.unit_of.tolist()
        self.worker: list[int] | npt.NDArray[np.int32] = [-1] * m
        self.start: list[float] | npt.NDArray[np.float64] = [0.0] * m
        self.seq: list[int] | npt.NDArray[np.int64] = [0] * m
        self.held = np.zeros(m, dtype=np.float64)
        self.was_held = np.zeros(m, dtype=bool)
        self.control: list[tuple[float, int, int, int, tuple[int, ...] | None]] = []
        self.counter = 0
        self.heap: list = []
        self.key_seen = bytearray(len(table.keys))
        self.unit_entries = [0] * units.count
        self.unit_bytes = [0] * units.count
        self.unit_updates = [0] * units.count
        self.entry_size = [entry_bytes(str(k), state_bytes) for k in table.keys]
        self.now = float("-inf")
        self.finished: Callable[[float], None] | None = None

    # -- the Cluster primitives --------------------------------------------------------------------
    def at(self, t: float, action: Callable[[float], None]) -> None:
        if t < self.now:
            raise RuntimeError(f"a protocol scheduled a step in the past ({t} < {self.now})")
        self.counter += 1
        heapq.heappush(self.heap, (t, self.counter, action))

    def _units(self, units: Iterable[int] | None) -> Iterable[int]:
        return range(self.units.count) if units is None else units

    def hold(self, router: int, units, t: float) -> None:
        status = self.status[router]
        if units is None:
            status[:] = bytes([HOLD]) * len(status)
        else:
            for u in units:
                status[u] = HOLD

    def release(self, router: int, units, t: float) -> None:
        status, buffers = self.status[router], self.buffers[router]
        flushed: list[int] = []
        for u in self._units(units):
            status[u] = NEW
            flushed.extend(buffers.pop(u, ()))
        for j in sorted(flushed):  # the router's own order
            u = self._unit[self._key[j]]
            self.held[j] = t - self.table.ts_ms[j]
            self.was_held[j] = True
            self._enqueue(self.owner_new[u], t, j)

    def switch(self, router: int, units, t: float) -> None:
        status = self.status[router]
        for u in self._units(units):
            status[u] = NEW

    def marker(self, worker: int, t: float) -> float:
        return max(t, self.free.get(worker, t))

    def extract(self, worker: int, units, t: float) -> tuple[int, int, float]:
        x = self.marker(worker, t)
        units = tuple(self._units(units))
        self._op(x, EXTRACT, worker, units)
        entries, nbytes = self.state_size(units)
        return entries, nbytes, x

    def install(self, worker: int, units, t: float) -> float:
        x = self.marker(worker, t)
        self._op(x, INSTALL, worker, tuple(self._units(units)))
        return x

    def state_size(self, units) -> tuple[int, int]:
        us = list(self._units(units))
        return sum(self.unit_entries[u] for u in us), sum(self.unit_bytes[u] for u in us)

    def updates(self, units) -> int:
        return sum(self.unit_updates[u] for u in units)

    def finish(self, t: float) -> None:
        if self.finished is not None:
            self.finished(t)

    # -- the data path -----------------------------------------------------------------------------
    def _op(self, t: float, kind: int, worker: int, units) -> None:
        self.counter += 1
        self.control.append((t, self.counter, kind, worker, units))

    def _enqueue(self, w: int, t: float, j: int) -> None:
        start = self.free.get(w, t)
        if start < t:
            start = t
        self.free[w] = start + self.cost.tuple_work_ms
        self.worker[j] = w
        self.start[j] = start
        self.counter += 1
        self.seq[j] = self.counter
        k = self._key[j]
        u = self._unit[k]
        self.unit_updates[u] += 1
        if not self.key_seen[k]:
            self.key_seen[k] = 1
            self.unit_entries[u] += 1
            self.unit_bytes[u] += self.entry_size[k]

    def dispatch(self, j: int, t: float) -> None:
        s = self._splitter[j]
        u = self._unit[self._key[j]]
        st = self.status[s][u]
        if st == OLD:
            self._enqueue(self.owner_old[u], t, j)
        elif st == NEW:
            self._enqueue(self.owner_new[u], t, j)
        else:
            self.buffers[s].setdefault(u, []).append(j)

    def run_until(self, t_limit: float) -> None:
        """Run control steps due strictly before `t_limit` (ties: control before tuples)."""
        while self.heap and self.heap[0][0] <= t_limit:
            t, _, action = heapq.heappop(self.heap)
            self.now = t
            action(t)

    def close(self) -> None:
        """The per-tuple outputs as arrays (after the last step)."""
        self.worker = np.asarray(self.worker, dtype=np.int32)
        self.start = np.asarray(self.start, dtype=np.float64)
        self.seq = np.asarray(self.seq, dtype=np.int64)

    def begin_event(self, owners_new: list[int]) -> None:
        self.owner_new = owners_new
        for st in self.status:
            st[:] = bytes(len(st))

    def end_event(self) -> None:
        if any(self.buffers[s] for s in range(self.routers)):
            raise RuntimeError("a protocol finished with tuples still held at a router")
        self.owner_old = list(self.owner_new)
        for st in self.status:
            st[:] = bytes(len(st))
