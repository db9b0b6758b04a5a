"""Compiled loops of the batch fast paths, over integer key ids.

The loops are plain Python functions, compiled with numba on first use (`compiled(name)`, cached on
disk with `cache=True`); without numba the same Python functions run as they are (slow, exact).
numba is imported lazily, so importing `groupings` stays cheap.

Each loop is the batch form of one strategy's `_choose` (the readable rule, kept beside it in the
strategy's module); tests check them equal on the golden traces and on random streams.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

# Constants the compiled code freezes; they mirror groupings.keyspace (checked by a test).
_NO_ITEM = 0
_OLD = 3
_NEVER = np.iinfo(np.int64).min
_INT_MAX = 2147483647  # the reference's initial minimum load (Integer.MAX_VALUE)


def pkg_route_loop(first, second, sent, out):  # type: ignore[no-untyped-def]
    """PARTIAL_KEY on a batch (§5): per tuple the less loaded of its two choices, ties to `first`.

    Args: first, second: int64 (m,), each tuple's seed-13 and seed-17 worker index;
        sent: int64 (n,), the instance's loads, updated in place; out: int32 (m,), written.
    """
    for j in range(first.shape[0]):
        a = first[j]
        b = second[j]
        t = b if sent[a] > sent[b] else a
        sent[t] += 1
        out[j] = t


def dkg_route_loop(  # type: ignore[no-untyped-def]
    ids, now, out, n, up, shrink_below, start_ms, warm_up_ms, check_interval_ms, initial_pool,
    home, pool, generation, count, last_check, sent, total, new_babies,
):
    """DYNAMIC_KEY on a batch segment without a maintenance cycle in it (§6.4, §6.5, §7.3).

    Args:
        ids: int64 (m,) key ids; now: int64 (m,) clamped times, all before the next cycle;
        out: int32 (m,), written; n: workers; up: scale-up threshold; shrink_below: a pool
            member counts as under-loaded for scale-down when its load is below this (`up` in the
            reference, Q1); start_ms, warm_up_ms, check_interval_ms, initial_pool: parameters;
        home: int64 per key id, seed-13 index; pool: int32 per key id, pool size or 0 (no entry);
        generation, count, last_check: the KeySpace columns per key id;
        sent: int64 (n,), the instance's loads; total: int64 (1,), the instance's total;
        new_babies: int64 buffer, receives the ids of keys that got a new baby item, in order.
    Returns: the number of ids written to `new_babies`.
    All state arrays are updated in place.
    """
    tot = total[0]
    n_new = 0
    for j in range(ids.shape[0]):
        k = ids[j]
        t_now = now[j]
        h = home[k]
        best = -1
        while True:  # one pass, plus one re-route per scale-down (the reference recurses)
            w = pool[k]
            if w == 0:
                w = initial_pool
            below = 0
            best = -1
            min_load = _INT_MAX
            for i in range(w):  # the pool is the ring slice home .. home+w-1 (mod n)
                c = (h + i) % n
                load = 0 if tot == 0 else (100 * sent[c]) // tot
                if load < shrink_below:
                    below += 1
                if load < min_load:  # strict: ties go to the earliest ring position
                    min_load = load
                    best = c
            if generation[k] == _NO_ITEM:
                break  # a key's first tuple finds no item: no check
            last = last_check[k]
            if last != _NEVER and not (t_now - last > check_interval_ms):
                break
            last_check[k] = t_now  # a due check uses the slot even when nothing changes (Q2)
            if t_now - start_ms > warm_up_ms and min_load >= up and generation[k] == _OLD:
                cand = (h + w) % n  # only the next ring neighbour (Q3)
                cand_load = 0 if tot == 0 else (100 * sent[cand]) // tot
                if cand_load < min_load:
                    best = cand
                    pool[k] = w + 1
                break  # if ... elif: no scale-down in this check
            if w > initial_pool and below >= 2:
                pool[k] = 0 if w - 1 <= initial_pool else w - 1
                continue  # re-route with the smaller pool
            break
        sent[best] += 1
        tot += 1
        out[j] = best
        if generation[k] != _NO_ITEM:  # KeySpace.record, after routing
            count[k] += 1
        else:
            generation[k] = 1  # BABY
            count[k] = 1
            new_babies[n_new] = k
            n_new += 1
    total[0] = tot
    return n_new


def slb_route_loop(  # type: ignore[no-untyped-def]
    w_choices, ids, start, resume, out, n, theta, epsilon, base_pow, top_pow, first, second, slot_of,
    drow, dchoices, ss_ids, ss_counts, ss_errors, ss_stamps, ss_meta, messages, sent, head_sent,
):
    """D_CHOICES / W_CHOICES on a batch (dkg-reference.md Appendix A; groupings.slb).

    Per tuple: count it in m, offer its key to the SpaceSaving summary (stream-lib's tie rules,
    groupings.space_saving), then route a head key to the least loaded of its candidates (all
    workers for W, or d >= n for D; else D's d hash choices) and a tail key by PARTIAL_KEY.

    Args:
        w_choices: True for W_CHOICES, False for D_CHOICES;
        ids: int64 (m,) key ids; start: first tuple to route; resume: tuple `start` was already
            counted and offered by the previous call (it stopped there, see Returns);
        out: int32 (m,), written; n: workers; theta: float32 head threshold; epsilon: D's
            tolerance; base_pow: float64 (capacity*n + 1,), `b ** float(x)` at x, b = (n-1)/n;
            top_pow: float64 (n + 1,), `(1 - b ** float(d)) ** float(d)` at d (D's powers,
            computed once by groupings.slb.base_powers: the same values as calling pow here);
            first, second: int64 per key id, PKG's seed-13 and seed-17 indices;
        slot_of: int64 per key id, its summary slot or -1; drow: int64 per key id, its row in
            `dchoices` or -1 (D only); dchoices: int64 (rows, n-1), D's hash choices per key;
        ss_ids, ss_counts, ss_errors, ss_stamps: int64 (capacity,), the summary's counters;
        ss_meta: int64 [size, next stamp, top slot]; messages: int64 [m];
        sent: int64 (n,), the instance's loads; head_sent: int64 (n,), the head keys' part.
    Returns: `ids.shape[0]` when done, or the index of a D head tuple whose key has no row in
        `dchoices` yet (the caller adds it and calls again with `resume`).
    All state arrays are updated in place.
    """
    capacity = ss_ids.shape[0]
    m = messages[0]
    for j in range(start, ids.shape[0]):
        k = ids[j]
        if not (resume and j == start):
            m += 1
            stamp = ss_meta[1]
            ss_meta[1] = stamp + 1
            s = slot_of[k]
            if s >= 0:
                ss_counts[s] += 1
            else:
                size = ss_meta[0]
                if size < capacity:
                    s = size
                    ss_meta[0] = size + 1
                    ss_counts[s] = 1
                    ss_errors[s] = 0
                else:  # evict the counter longest in the smallest-count bucket
                    s = 0
                    for i in range(1, size):
                        if ss_counts[i] < ss_counts[s] or (
                            ss_counts[i] == ss_counts[s] and ss_stamps[i] < ss_stamps[s]
                        ):
                            s = i
                    slot_of[ss_ids[s]] = -1
                    low = ss_counts[s]
                    ss_counts[s] = low + 1
                    ss_errors[s] = low
                ss_ids[s] = k
                slot_of[k] = s
            ss_stamps[s] = stamp
            top = ss_meta[2]
            if top < 0 or ss_counts[s] > ss_counts[top]:
                ss_meta[2] = s
        s = slot_of[k]
        fm = np.float32(m)
        p = (np.float32(ss_counts[s]) + np.float32(ss_errors[s])) / fm
        best = 0
        if p > theta:
            d = n
            if not w_choices:
                size = ss_meta[0]
                p_head = 0.0
                h = 0
                # Below this (c + e) a counter cannot pass the float test: skip its division.
                surely_tail = np.int64(np.float64(theta) * m * (1.0 - 2.0**-20))
                for i in range(size):
                    if ss_counts[i] + ss_errors[i] >= surely_tail:
                        q = (np.float32(ss_counts[i]) + np.float32(ss_errors[i])) / fm
                        if q > theta:
                            p_head += q
                            h += 1
                top = ss_meta[2]
                p_top = np.float64((np.float32(ss_counts[top]) + np.float32(ss_errors[top])) / fm)
                p_tail = 1 - p_head
                d = max(1, np.int64(np.floor(p_top * n + 0.5)))
                while d < n:  # groupings.slb.choice_count (d >= n: every worker at once)
                    head_term = 1 - base_pow[h * d]
                    holds_head = p_head + p_tail * head_term * head_term <= head_term + epsilon
                    top_term = 1 - base_pow[d]
                    holds_top = (
                        p_top + (p_head - p_top) * top_pow[d]
                        + p_tail * top_term * top_term
                        <= top_term + epsilon
                    )
                    if d + 1 > n or (holds_head and holds_top):
                        break
                    d += 1
            if d < n:
                r = drow[k]
                if r < 0:
                    messages[0] = m
                    return j
                best = dchoices[r, 0]
                for i in range(1, d):
                    c = dchoices[r, i]
                    if sent[c] < sent[best]:
                        best = c
            else:
                for i in range(1, n):
                    if sent[i] < sent[best]:
                        best = i
            head_sent[best] += 1
        else:
            a = first[k]
            b = second[k]
            best = b if sent[a] > sent[b] else a
        sent[best] += 1
        out[j] = best
    messages[0] = m
    return ids.shape[0]


_PYTHON: dict[str, Callable[..., Any]] = {
    "pkg_route_loop": pkg_route_loop,
    "dkg_route_loop": dkg_route_loop,
    "slb_route_loop": slb_route_loop,
}
_COMPILED: dict[str, Callable[..., Any]] = {}


def numba_available() -> bool:
    """Whether numba can be imported (else the loops run as plain Python)."""
    try:
        import numba  # noqa: F401  # deferred: numba takes 0.7 s to import and is optional
    except ImportError:
        return False
    return True


def compiled(name: str) -> Callable[..., Any]:
    """The numba-compiled loop `name` (compiled, or loaded from the disk cache, on first use).

    Falls back to the plain Python function when numba is missing.
    Raises: KeyError: unknown loop name.
    """
    fn = _COMPILED.get(name)
    if fn is None:
        py = _PYTHON[name]
        try:
            # deferred: numba takes 0.7 s to import, paid on the first compiled loop, not by `import groupings`
            from numba import njit
        except ImportError:
            fn = py
        else:
            try:
                fn = njit(cache=True, nogil=True)(py)
            except RuntimeError:  # no writable cache location: compile in each process
                fn = njit(cache=False, nogil=True)(py)
        _COMPILED[name] = fn
    return fn
