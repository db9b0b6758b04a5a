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


_PYTHON: dict[str, Callable[..., Any]] = {
    "pkg_route_loop": pkg_route_loop,
    "dkg_route_loop": dkg_route_loop,
}
_COMPILED: dict[str, Callable[..., Any]] = {}


def numba_available() -> bool:
    """Whether numba can be imported (else the loops run as plain Python)."""
    try:
        import numba  # noqa: F401
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
