"""Stateful workers and rescales on the virtual clock: the simulator's `Cluster`.

Routers (one per splitter) route each tuple, in event-time order, by the current owners of its
unit (key group, vnode, or the key itself for KEY); workers are FIFO queues that spend
`tuple_work_ms` per tuple and keep per-key state (count, sum of the tuple's `count` field, first
and last event time, a payload of `state_bytes`). A rescale schedule starts a protocol
(groupings.rescaling) at each event; the protocol holds, releases and switches units at the
routers and extracts / installs state at the workers, at times the cost model gives.

Correctness is checked afterwards by replaying every worker operation in the order the workers
performed them: a tuple processed by a worker that does not hold its unit's state at that moment
is an ownership violation, and its update lands in a stray entry (so the final state differs from
the run without rescaling).

Source: shared/reference/rescaling.md §3-4.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from bench import metrics
from bench.simulate.engine import TupleTable
from groupings import create_grouping
from groupings.rescaling import (
    RESCALABLE, CostModel, Move, RescaleEvent, check_schedule, entry_bytes, make_protocol,
)

_OLD, _HOLD, _NEW = 0, 1, 2
_EXTRACT, _INSTALL = 1, 2
WINDOW_MS = 30_000
"""Width of the before / after windows of throughput and latency around a rescale, ms."""


@dataclass(frozen=True)
class RescaleConfig:
    """A rescale run: the schedule, the protocol and its costs.

    state_bytes: synthetic payload per key's state, bytes (heavy state); faults: HANDOFF faults
    (tests only).
    """

    events: tuple[RescaleEvent, ...]
    protocol: str = "HANDOFF"
    handoff_batch: int = 1
    cost: CostModel = field(default_factory=CostModel)
    state_bytes: int = 0
    faults: tuple[str, ...] = ()

    def to_dict(self) -> dict:
        return {"schedule": [e.label() for e in self.events], "protocol": self.protocol,
                "handoff_batch": self.handoff_batch, "cost": self.cost.to_dict(),
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


def check_rescalable(grouping: str) -> None:
    """Raises: ValueError naming the routings that own keys, if `grouping` is not one of them."""
    if grouping not in RESCALABLE:
        raise ValueError(
            f"--rescale needs a routing that owns keys; {grouping} does not. Allowed: {', '.join(RESCALABLE)}"
        )


def validate(config: RescaleConfig, grouping: str, workers: int, params: dict, span_ms: int) -> None:
    """Every check of a rescale run that can be made before it runs (one clear error each)."""
    check_rescalable(grouping)
    make_protocol(config.protocol, config.cost, batch=config.handoff_batch, faults=config.faults)
    if config.state_bytes < 0:
        raise ValueError(f"--state-bytes must be >= 0, got {config.state_bytes}")
    check_schedule(list(config.events), span_ms, create_grouping(grouping, workers, **params))


class _Units:
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

    def __init__(self, table: TupleTable, units: _Units, routers: int, cost: CostModel, state_bytes: int) -> None:
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
            status[:] = bytes([_HOLD]) * len(status)
        else:
            for u in units:
                status[u] = _HOLD

    def release(self, router: int, units, t: float) -> None:
        status, buffers = self.status[router], self.buffers[router]
        flushed: list[int] = []
        for u in self._units(units):
            status[u] = _NEW
            flushed.extend(buffers.pop(u, ()))
        for j in sorted(flushed):  # the router's own order
            u = self._unit[self._key[j]]
            self.held[j] = t - self.table.ts_ms[j]
            self.was_held[j] = True
            self._enqueue(self.owner_new[u], t, j)

    def switch(self, router: int, units, t: float) -> None:
        status = self.status[router]
        for u in self._units(units):
            status[u] = _NEW

    def marker(self, worker: int, t: float) -> float:
        return max(t, self.free.get(worker, t))

    def extract(self, worker: int, units, t: float) -> tuple[int, int, float]:
        x = self.marker(worker, t)
        units = tuple(self._units(units))
        self._op(x, _EXTRACT, worker, units)
        entries, nbytes = self.state_size(units)
        return entries, nbytes, x

    def install(self, worker: int, units, t: float) -> float:
        x = self.marker(worker, t)
        self._op(x, _INSTALL, worker, tuple(self._units(units)))
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
        if st == _OLD:
            self._enqueue(self.owner_old[u], t, j)
        elif st == _NEW:
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


def simulate(table: TupleTable, grouping: str, workers: int, splitters: int, params: dict,
             config: RescaleConfig) -> RescaleResult:
    """Run `table` through stateful workers with the rescales of `config`.

    Raises: ValueError: the grouping does not own keys, a bad protocol or schedule (see `validate`).
    """
    t_first = int(table.ts_ms.min())
    validate(config, grouping, workers, params, int(table.ts_ms.max()) - t_first)
    units = _Units(grouping, workers, params, [str(k) for k in table.keys])
    cl = SimCluster(table, units, splitters, config.cost, config.state_bytes)
    events: list[dict] = []
    pending = list(config.events)
    state = {"protocol": None, "record": None, "workers": tuple(units.g.workers)}

    def start_event(t: float) -> None:
        ev = pending.pop(0)
        before = tuple(units.g.workers)
        old = list(cl.owner_old)
        new = units.reschedule(ev.target)
        moved = tuple(u for u in range(units.count) if old[u] != new[u])
        stateful = frozenset(u for u in moved if cl.unit_entries[u])
        cl.begin_event(new)
        proto = make_protocol(config.protocol, config.cost, batch=config.handoff_batch, faults=config.faults)
        rec = {"at_ms": ev.at_ms, "event": ev.label(), "started_ms": t - t_first, "protocol": proto.name,
               "routing": grouping, "workers_before": len(before), "workers_after": len(units.g.workers),
               "worker_ids_before": list(before), "worker_ids_after": list(units.g.workers),
               "moved_groups": len(moved), "units": "keys" if units.by_key else "groups",
               "groups": units.count}
        rec["_moved"], rec["_old"] = np.array([old[u] != new[u] for u in range(units.count)]), np.array(old)
        state["protocol"], state["record"] = proto, rec
        proto.start(cl, Move(old, new, before, tuple(units.g.workers), moved, stateful), t)

    def finished(t: float) -> None:
        proto, rec = state["protocol"], state["record"]
        rec["done_ms"] = t - t_first
        rec.update(proto.figures)
        rec["moved_keys"] = proto.figures["state_entries_moved"]
        rec["steps"] = {k: v for k, v in proto.steps.items()}
        events.append(rec)
        cl.end_event()
        if pending:
            nxt = max(t, t_first + pending[0].at_ms)
            cl.at(nxt, start_event)

    cl.finished = finished
    if pending:
        cl.at(t_first + pending[0].at_ms, start_event)
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
    if pending or (config.events and len(events) < len(config.events)):
        raise RuntimeError("a rescale did not finish")
    violations, per_tuple_bad, final_state = _replay(cl, table, units)
    finish = cl.start + config.cost.tuple_work_ms
    _event_figures(events, table, cl, finish, per_tuple_bad, t_first)
    at_old = _old_owner_share(events, table, cl, units, t_first)
    num_workers = int(cl.worker.max()) + 1 if len(table) else workers
    return RescaleResult(cl.worker, finish, cl.held, cl.was_held, events, final_state, violations, num_workers,
                         at_old)


def _replay(cl: SimCluster, table: TupleTable, units: _Units):
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
            for u in us:
                if kind == _EXTRACT:
                    if holder[u] != w:
                        raise RuntimeError(f"worker {w} handed over unit {u} that it does not hold ({holder[u]})")
                    holder[u] = -1
                    for k in keys_of_unit.get(u, ()):
                        if k in state:
                            state[k][0] = -1
                else:
                    if holder[u] != -1:
                        raise RuntimeError(f"worker {w} installed unit {u} that is not in transit ({holder[u]})")
                    holder[u] = w
                    for k in keys_of_unit.get(u, ()):
                        if k in state:
                            state[k][0] = w
    rows = [(k, *v) for k, v in state.items()] + [(k, w, *v) for (k, w), v in stray.items()]
    rows.sort(key=lambda r: (str(table.keys[r[0]]), r[1]))  # by key, then worker (as worker_state)
    out = {
        "key": [str(table.keys[r[0]]) for r in rows],
        "worker": [int(r[1]) for r in rows],
        "count": [int(r[2]) for r in rows],
        "sum": [int(r[3]) for r in rows],
        "first_ts_ms": [int(r[4]) for r in rows],
        "last_ts_ms": [int(r[5]) for r in rows],
    }
    return violations, bad, out


def _pct(values: npt.NDArray[np.float64], q: float) -> float | None:
    return float(np.percentile(values, q)) if values.size else None


def _event_figures(events, table, cl, finish, bad, t_first) -> None:
    """Hold delays, violations, imbalance and throughput / latency around each event (in place)."""
    ts = table.ts_ms.astype(np.float64)
    latency = finish - ts
    starts = [t_first + e["started_ms"] for e in events] + [float("inf")]
    end = float(finish.max()) if finish.size else 0.0
    for i, e in enumerate(events):
        at, done = t_first + e["started_ms"], t_first + e["done_ms"]
        nxt = starts[i + 1]
        held_mask = cl.was_held & (cl.start >= at) & (cl.start < nxt)
        delays = cl.held[held_mask]
        e["held_tuples"] = int(held_mask.sum())
        e["hold_delay_ms_p50"] = _pct(delays, 50)
        e["hold_delay_ms_p99"] = _pct(delays, 99)
        e["hold_delay_ms_max"] = float(delays.max()) if delays.size else None
        e["rescale_ms"] = done - at
        e["ownership_violations"] = int((bad & (cl.start >= at) & (cl.start < nxt)).sum())
        prev_end = t_first if i == 0 else starts[i - 1] + events[i - 1]["rescale_ms"]
        e["std_dev_before"], e["max_mean_before"] = _imbalance(
            table, cl.worker, ts, prev_end, at, e["worker_ids_before"])
        e["std_dev_after"], e["max_mean_after"] = _imbalance(
            table, cl.worker, ts, done, min(nxt, end + 1), e["worker_ids_after"])
        for name, lo, hi in (("before", at - WINDOW_MS, at), ("during", at, done), ("after", done, done + WINDOW_MS)):
            sel = (finish >= lo) & (finish < hi)
            span_s = max(hi - lo, 1e-9) / 1000.0
            e[f"throughput_tps_{name}"] = float(sel.sum() / span_s) if hi > lo else None
            e[f"latency_ms_p50_{name}"] = _pct(latency[sel], 50)
            e[f"latency_ms_p99_{name}"] = _pct(latency[sel], 99)


def _old_owner_share(events, table, cl, units, t_first) -> npt.NDArray[np.float64]:
    """`old_owner_share_during`: of the tuples of moved units processed while the rescale was under
    way, the share their old owner processed (LEARNER keeps the old owner loaded until the switch:
    near 1; a pause protocol processes none of them during the pause: None).

    Returns per tuple: 1.0 if it belongs to a unit moved by the latest event started before it was
    processed and its old owner processed it, 0.0 if another worker did, NaN otherwise.
    """
    unit = units.unit_of[table.key_code]
    at_old = np.full(len(table), np.nan)
    starts = [t_first + e["started_ms"] for e in events] + [np.inf]
    for i, e in enumerate(events):
        moved, old = e.pop("_moved"), e.pop("_old")
        at, done = t_first + e["started_ms"], t_first + e["done_ms"]
        sel = moved[unit] & (cl.start >= at) & (cl.start < done)
        e["moved_tuples_during"] = int(sel.sum())
        e["old_owner_share_during"] = float((cl.worker[sel] == old[unit[sel]]).mean()) if sel.any() else None
        span = moved[unit] & (cl.start >= at) & (cl.start < starts[i + 1])
        at_old[span] = (cl.worker[span] == old[unit[span]]).astype(np.float64)
    return at_old


def _imbalance(table, worker, ts, lo, hi, active) -> tuple[float | None, float | None]:
    """STD_DEV and max/mean of the weighted load over the active workers, tuples with lo <= ts < hi."""
    sel = (ts >= lo) & (ts < hi)
    if not sel.any():
        return None, None
    size = max(int(worker.max()) + 1, max(active) + 1)
    loads = np.bincount(worker[sel], weights=table.count[sel], minlength=size).astype(np.int64)[list(active)]
    return metrics.std_dev_percent(loads, len(active)), metrics.max_mean_imbalance(loads, len(active))


EMPTY_TICK = {"throughput_tps": 0.0, "latency_ms_p50": None, "latency_ms_p99": None,
              "latency_ms_max": None, "window_worker_loads": None, "held_tuples": 0, "rescaling": False,
              "moved_old_owner_share": None}
"""The columns of `tick_columns` for a tick in which no tuple finished."""


def _nanmean(values: npt.NDArray[np.float64]) -> float | None:
    values = values[~np.isnan(values)]
    return float(values.mean()) if values.size else None


def tick_columns(table: TupleTable, result: RescaleResult, tick_ms: int) -> dict[int, dict]:
    """Per observer tick (of the tuples' clock, as `engine.timeline`): tuples finished per second,
    latency p50 / p99 / max of the tuples finished in the tick (ms), each worker's processed load in
    the tick (weighted), tuples held, whether a rescale was under way, and
    `moved_old_owner_share`: of the tick's tuples of units moved by the latest rescale, the share
    their old owner processed (None before the first rescale). Keyed by tick index
    (floor((t - t0) / tick_ms))."""
    if len(table) == 0:
        return {}
    t0 = int(table.ts_ms.min())
    tick = ((result.finish_ms - t0) // tick_ms).astype(np.int64)
    latency = result.finish_ms - table.ts_ms
    out: dict[int, dict] = {}
    order = np.argsort(tick, kind="stable")
    ticks, starts = np.unique(tick[order], return_index=True)
    bounds = np.append(starts, len(order))
    spans = [(t0 + e["started_ms"], t0 + e["done_ms"]) for e in result.events]
    for tk, lo, hi in zip(ticks.tolist(), bounds[:-1].tolist(), bounds[1:].tolist(), strict=True):
        idx = order[lo:hi]
        lat = latency[idx]
        a, b = t0 + tk * tick_ms, t0 + (tk + 1) * tick_ms
        out[tk] = {
            "throughput_tps": 1000.0 * len(idx) / tick_ms,
            "latency_ms_p50": float(np.percentile(lat, 50)),
            "latency_ms_p99": float(np.percentile(lat, 99)),
            "latency_ms_max": float(lat.max()),
            "window_worker_loads": np.bincount(result.worker[idx], weights=table.count[idx],
                                               minlength=result.num_workers).astype(np.int64).tolist(),
            "held_tuples": int(result.was_held[idx].sum()),
            "rescaling": any(s < b and d >= a for s, d in spans),
            "moved_old_owner_share": _nanmean(result.at_old_owner[idx]),
        }
    return out


RESCALE_MEASUREMENT = "rescale"
"""InfluxDB measurement of rescale events: one point per event at its start (tags run_id, grouping,
dataset, protocol, routing; fields: every number of the event in summary.json)."""


def influx_points(events: list[dict], t_first_ms: int) -> list[tuple[str, dict, int, dict]]:
    """`(measurement, fields, time_ms, tags)` of each event, for `InfluxWriter.write`; time is the
    event's start on the run's clock (the first tuple's time + `started_ms`)."""
    points = []
    for e in events:
        fields = {k: (int(v) if isinstance(v, bool) else v) for k, v in e.items()
                  if isinstance(v, int | float) and not isinstance(v, bool)}
        tags = {"protocol": e["protocol"], "routing": e["routing"], "event": e["event"]}
        points.append((RESCALE_MEASUREMENT, fields, int(t_first_ms + e["started_ms"]), tags))
    return points
