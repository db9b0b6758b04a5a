"""Stateful workers and rescales on the virtual clock: `simulate` and its ownership check.

Routers (one per splitter) route each tuple, in event-time order, by the current owners of its
unit (key group, vnode, or the key itself for KEY); workers are FIFO queues that spend
`tuple_work_ms` per tuple and keep per-key state (count, sum of the tuple's `count` field, first
and last event time, a payload of `state_bytes`). A rescale schedule starts a protocol
(groupings.rescaling) at each event; the protocol holds, releases and switches units at the
routers and extracts / installs state at the workers (bench/simulate/cluster.py), at times the
cost model gives; bench/simulate/rescale_figures.py turns the run into the figures of each event.

Correctness is checked afterwards by replaying every worker operation in the order the workers
performed them: a tuple processed by a worker that does not hold its unit's state at that moment
is an ownership violation, and its update lands in a stray entry (so the final state differs from
the run without rescaling).

Source: docs/reference/rescaling.md §3-4.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from bench.simulate.cluster import EXTRACT, SimCluster, Units
from bench.simulate.engine import TupleTable
from bench.simulate.rescale_figures import event_figures, old_owner_share
from groupings import create_grouping
from groupings.rescaling import CostModel, Move, RescaleEvent, check_rescalable, check_schedule, make_protocol


@dataclass(frozen=True)
class RescaleConfig:
    """A rescale run: the schedule, the protocol and its costs.

    state_bytes: synthetic payload per key's state, bytes (heavy state); faults: HANDOFF faults
    (tests only); cost_profile: the engine whose fitted costs `cost` starts from
    (bench.simulate.cost_profiles), None for the defaults.
    """

    events: tuple[RescaleEvent, ...]
    protocol: str = "HANDOFF"
    handoff_batch: int = 1
    cost: CostModel = field(default_factory=CostModel)
    state_bytes: int = 0
    faults: tuple[str, ...] = ()
    cost_profile: str | None = None

    def to_dict(self) -> dict:
        return {"schedule": [e.label() for e in self.events], "protocol": self.protocol,
                "handoff_batch": self.handoff_batch, "cost": self.cost.to_dict(), "cost_profile": self.cost_profile,
                "state_bytes": self.state_bytes, "faults": list(self.faults)}


@dataclass
class RescaleResult:
    """What a rescale run produced. Per-tuple arrays have shape (m,), in the table's order."""

    worker: npt.NDArray[np.int32]       # the worker that processed each tuple
    finish_ms: npt.NDArray[np.float64]  # when it finished (virtual clock, absolute ms)
    held_ms: npt.NDArray[np.float64]    # extra delay at a router hold (0 if not held)
    was_held: npt.NDArray[np.bool_]     # whether a router held the tuple
    events: list[dict]
    state: dict                         # columns key, worker, count, sum, first_ts, last_ts
    violations: int
    num_workers: int                    # size of the worker id space
    at_old_owner: npt.NDArray[np.float64]  # 1/0: a moved unit's tuple processed by its old owner or not; NaN


def validate(config: RescaleConfig, grouping: str, workers: int, params: dict, span_ms: int) -> None:
    """Every check of a rescale run that can be made before it runs (one clear error each)."""
    check_rescalable(grouping)
    make_protocol(config.protocol, config.cost, batch=config.handoff_batch, faults=config.faults)
    if config.state_bytes < 0:
        raise ValueError(f"--state-bytes must be >= 0, got {config.state_bytes}")
    check_schedule(list(config.events), span_ms, create_grouping(grouping, workers, **params))


def simulate(table: TupleTable, grouping: str, workers: int, splitters: int, params: dict,
             config: RescaleConfig) -> RescaleResult:
    """Run `table` through stateful workers with the rescales of `config`.

    Raises: ValueError: the grouping does not own keys, a bad protocol or schedule (see `validate`).
    """
    t_first = int(table.ts_ms.min())
    validate(config, grouping, workers, params, int(table.ts_ms.max()) - t_first)
    units = Units(grouping, workers, params, [str(k) for k in table.keys])
    cl = SimCluster(table, units, splitters, config.cost, config.state_bytes)
    rescales = _Rescales(cl, units, config, grouping, t_first)
    _dispatch(cl, table)
    events = rescales.events
    if rescales.pending or (config.events and len(events) < len(config.events)):
        raise RuntimeError("a rescale did not finish")
    violations, per_tuple_bad, final_state = _replay(cl, table, units)
    finish = cl.start + config.cost.tuple_work_ms
    event_figures(events, table, cl, finish, per_tuple_bad, t_first)
    at_old = old_owner_share(events, table, cl, units, t_first)
    num_workers = int(cl.worker.max()) + 1 if len(table) else workers
    return RescaleResult(cl.worker, finish, cl.held, cl.was_held, events, final_state, violations, num_workers,
                         at_old)


class _Rescales:
    """The schedule's events on the cluster, one at a time: each starts its protocol at its time (or
    when the previous one is done) and records the event's figures when the protocol finishes."""

    def __init__(self, cl: SimCluster, units: Units, config: RescaleConfig, grouping: str, t_first: int):
        self.cl, self.units, self.config, self.grouping, self.t_first = cl, units, config, grouping, t_first
        self.events: list[dict] = []
        self.pending = list(config.events)
        self.protocol = None
        self.record: dict | None = None
        cl.finished = self.finished
        if self.pending:
            cl.at(t_first + self.pending[0].at_ms, self.start_event)

    def start_event(self, t: float) -> None:
        cl, units, config = self.cl, self.units, self.config
        ev = self.pending.pop(0)
        before = tuple(units.g.workers)
        old = list(cl.owner_old)
        new = units.reschedule(ev.target)
        moved = tuple(u for u in range(units.count) if old[u] != new[u])
        stateful = frozenset(u for u in moved if cl.unit_entries[u])
        cl.begin_event(new)
        proto = make_protocol(config.protocol, config.cost, batch=config.handoff_batch, faults=config.faults)
        rec = {"at_ms": ev.at_ms, "event": ev.label(), "started_ms": t - self.t_first, "protocol": proto.name,
               "routing": self.grouping, "workers_before": len(before), "workers_after": len(units.g.workers),
               "worker_ids_before": list(before), "worker_ids_after": list(units.g.workers),
               "moved_groups": len(moved), "units": "keys" if units.by_key else "groups",
               "groups": units.count}
        rec["_moved"], rec["_old"] = np.array([old[u] != new[u] for u in range(units.count)]), np.array(old)
        self.protocol, self.record = proto, rec
        proto.start(cl, Move(old, new, before, tuple(units.g.workers), moved, stateful), t)

    def finished(self, t: float) -> None:
        proto, rec = self.protocol, self.record
        rec["done_ms"] = t - self.t_first
        rec.update(proto.figures)
        rec["moved_keys"] = proto.figures["state_entries_moved"]
        rec["steps"] = {k: v for k, v in proto.steps.items()}
        self.events.append(rec)
        self.cl.end_event()
        if self.pending:
            nxt = max(t, self.t_first + self.pending[0].at_ms)
            self.cl.at(nxt, self.start_event)


def _dispatch(cl: SimCluster, table: TupleTable) -> None:
    """Every tuple to its router in event-time order (ties in table order), the cluster's scheduled
    actions run before each tuple that comes after them; then every action left."""
    order = np.lexsort((np.arange(len(table)), table.ts_ms))
    ts = table.ts_ms.astype(np.float64).tolist()
    heap, dispatch = cl.heap, cl.dispatch
    for j in order.tolist():
        t = ts[j]
        if heap and heap[0][0] <= t:
            cl.run_until(t)
        cl.now = t
        dispatch(j, t)
    cl.run_until(float("inf"))
    cl.close()


def _replay(cl: SimCluster, table: TupleTable, units: Units):
    """Replay every worker operation in execution order; check ownership; build the final state."""
    m = len(table)
    ctl = cl.control
    times = np.concatenate([cl.start, np.array([c[0] for c in ctl], dtype=np.float64)])
    seqs = np.concatenate([cl.seq, np.array([c[1] for c in ctl], dtype=np.int64)])
    order = np.lexsort((seqs, times))
    holder = list(cl.initial_owner)          # unit -> worker holding its state, -1 in transit
    keys_of_unit: dict[int, list[int]] = {}
    for k, u in enumerate(units.unit_of.tolist()):
        keys_of_unit.setdefault(u, []).append(k)
    state: dict[int, list] = {}              # key -> [worker, count, sum, first, last]
    stray: dict[tuple[int, int], list] = {}  # (key, worker) -> [count, sum, first, last]
    bad = np.zeros(m, dtype=bool)
    violations = 0
    key_code, count, ts = table.key_code.tolist(), table.count.tolist(), table.ts_ms.tolist()
    worker = cl.worker.tolist()
    unit_of = units.unit_of.tolist()
    for i in order.tolist():
        if i < m:
            k, w = key_code[i], worker[i]
            if holder[unit_of[k]] == w:
                st = state.get(k)
                if st is None:
                    state[k] = [w, count[i], count[i], ts[i], ts[i]]
                    continue
                if st[0] == w:
                    st[1] += 1
                    st[2] += count[i]
                    st[4] = max(st[4], ts[i])
                    st[3] = min(st[3], ts[i])
                    continue
            violations += 1
            bad[i] = True
            st = stray.setdefault((k, w), [0, 0, ts[i], ts[i]])
            st[0] += 1
            st[1] += count[i]
            st[2], st[3] = min(st[2], ts[i]), max(st[3], ts[i])
        else:
            _, _, kind, w, us = ctl[i - m]
            _hand_over(kind, w, us, holder, keys_of_unit, state)
    return violations, bad, _state_columns(table, state, stray)


def _hand_over(kind, worker: int, units, holder: list[int], keys_of_unit: dict[int, list[int]],
               state: dict[int, list]) -> None:
    """A control operation of the replay: `worker` extracts (`EXTRACT`: the units' state goes in
    transit, holder -1) or installs `units`. Raises: RuntimeError: a worker handed over a unit it
    does not hold, or installed one that is not in transit (a protocol's bug)."""
    for u in units:
        if kind == EXTRACT:
            if holder[u] != worker:
                raise RuntimeError(f"worker {worker} handed over unit {u} that it does not hold ({holder[u]})")
            holder[u] = -1
            for k in keys_of_unit.get(u, ()):
                if k in state:
                    state[k][0] = -1
        else:
            if holder[u] != -1:
                raise RuntimeError(f"worker {worker} installed unit {u} that is not in transit ({holder[u]})")
            holder[u] = worker
            for k in keys_of_unit.get(u, ()):
                if k in state:
                    state[k][0] = worker


def _state_columns(table: TupleTable, state: dict[int, list], stray: dict[tuple[int, int], list]) -> dict:
    """The final state (`RescaleResult.state`): one row per (key, worker) entry, the owners' and the
    stray ones, by key then worker (as `engine.worker_state`)."""
    rows = [(k, *v) for k, v in state.items()] + [(k, w, *v) for (k, w), v in stray.items()]
    rows.sort(key=lambda r: (str(table.keys[r[0]]), r[1]))  # by key, then worker (as worker_state)
    return {
        "key": [str(table.keys[r[0]]) for r in rows],
        "worker": [int(r[1]) for r in rows],
        "count": [int(r[2]) for r in rows],
        "sum": [int(r[3]) for r in rows],
        "first_ts_ms": [int(r[4]) for r in rows],
        "last_ts_ms": [int(r[5]) for r in rows],
    }
