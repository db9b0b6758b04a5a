"""Perf section "routing": tuples/s of `Grouping.route` for each grouping, one instance.

Stream: 1,000,000 tuples of the spec's golden stream (§14: skew 80, keys `Turkey` and
`K000`..`K199`, a COUNTRY_SKEW_R80-like law) at 200 tuples per virtual second from T0, so
DYNAMIC_KEY runs its KeySpace cycles (333 of them) as in the golden protocol; 10 workers. Keys are
a Python list of str.

Each case is the median of 5 timed runs, each on a fresh instance (untimed setup), after one untimed
warm-up run. numba's compile time is kept out of the timed runs and reported in the note: measured
in a child process with an empty cache, and as the first call of this process (cache load).
Baseline, measured in the same run: numpy modulo of precomputed 64-bit hashes (`abs(h) % n`), the
cost floor of any hash routing. Per-tuple `choose` rates (100,000 tuples) are given for reference.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import numpy.typing as npt

from bench.perf._harness import Row, alternating_rates, median_rate
from groupings import GROUPINGS, create_grouping
from groupings.hashing import as_long

SECTION = "routing"
TUPLES = 1_000_000
CHOOSE_TUPLES = 100_000
WORKERS = 10
RATE = 200  # tuples per virtual second
T0 = 1_000_000
SKEW = 80
TARGETS = {"SHUFFLE": 5e6, "KEY": 5e6, "PARTIAL_KEY": 2e6, "DYNAMIC_KEY": 1e6}
"""Minimum route tuples/s of the reference groupings on this machine kind (the issue's acceptance)."""
RELATIVE_TARGETS = {
    "KEY_GROUP": ("KEY", 0.8),
    "VNODE": ("KEY", 0.8),
    "D_CHOICES": ("PARTIAL_KEY", 0.5),
    "W_CHOICES": ("PARTIAL_KEY", 0.5),
}
"""The later groupings' targets: a fraction of their closest reference grouping's route rate,
measured in the same run, the two timed in turn (A B A B ...) (KEY_GROUP and VNODE add a table look-up to KEY's hash, D/W_CHOICES a
heavy-hitter sketch to PARTIAL_KEY's two choices)."""
COMPILED = ("PARTIAL_KEY", "DYNAMIC_KEY", "D_CHOICES", "W_CHOICES")
"""Groupings whose `route` runs a numba loop (the others are plain numpy)."""


def golden_keys(count: int, skew: int = SKEW) -> list[str]:
    """Keys of the golden stream (§14), SplitMix64-drawn.

    A copy of `tests/groupings/golden_stream.py` (bench must not import tests); a test there
    checks that both give the same keys.
    """
    gamma = np.uint64(0x9E3779B97F4A7C15)

    def draw(j: npt.NDArray[np.uint64]) -> npt.NDArray[np.uint64]:
        with np.errstate(over="ignore"):
            z = (j + np.uint64(1)) * gamma
            z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
            z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
            return z ^ (z >> np.uint64(31))

    i = np.arange(count, dtype=np.uint64)
    hot = draw(np.uint64(2) * i) % np.uint64(100) < np.uint64(skew)
    code = draw(np.uint64(2) * i + np.uint64(1)) % np.uint64(200)
    names = [f"K{c:03d}" for c in range(200)]
    return ["Turkey" if h else names[c] for h, c in zip(hot.tolist(), code.tolist(), strict=True)]


def golden_now_ms(count: int, rate: int = RATE) -> npt.NDArray[np.int64]:
    """`now_ms` of the golden clock (§14): `T0 + 1000*(i // rate) + (1000*(i % rate)) // rate`."""
    i = np.arange(count, dtype=np.int64)
    return T0 + 1000 * (i // rate) + (1000 * (i % rate)) // rate


def _first_call_seconds(name: str, keys: list[str], now: npt.NDArray[np.int64]) -> float:
    """Time of the first `route` in this process: numba compiles (or loads its cache) here."""
    g = create_grouping(name, WORKERS, start_ms=T0)
    start = time.perf_counter()
    g.route(keys[:1000], now[:1000])
    return time.perf_counter() - start


_COLD_COMPILE = """
import time, numba
from groupings import create_grouping
g = create_grouping({name!r}, 10)
start = time.perf_counter()
g.route(["a", "b"], [1, 2])
print(time.perf_counter() - start)
"""


def _cold_compile_seconds(name: str) -> float | None:
    """numba compile time of the grouping's loop with an empty cache (in a child process)."""
    with tempfile.TemporaryDirectory() as cache:
        env = dict(os.environ, NUMBA_CACHE_DIR=cache)
        env["PYTHONPATH"] = os.pathsep.join(
            filter(None, [str(Path(__file__).resolve().parents[2]), env.get("PYTHONPATH")])
        )
        try:
            out = subprocess.run(
                [sys.executable, "-c", _COLD_COMPILE.format(name=name)],
                env=env, capture_output=True, text=True, check=True, timeout=300,
            )  # fmt: skip
        except (OSError, subprocess.SubprocessError):
            return None
    return float(out.stdout.strip().splitlines()[-1])


def run() -> list[Row]:
    """Measure every grouping's `route` (and `choose`) against the numpy-modulo baseline."""
    keys = golden_keys(TUPLES)
    now = golden_now_ms(TUPLES)
    distinct = {k: as_long(13, k) for k in set(keys)}
    hashes = np.array([distinct[k] for k in keys], dtype=np.int64)
    baseline = median_rate(lambda: np.abs(hashes) % WORKERS, TUPLES)

    rows = [Row.measured(SECTION, "baseline: numpy abs(hash) % n", baseline, "tuples/s", baseline)]
    def route(g):  # type: ignore[no-untyped-def]
        return g.route(keys, now)

    def fresh(name: str):  # type: ignore[no-untyped-def]
        return lambda: create_grouping(name, WORKERS, start_ms=T0)

    for name in GROUPINGS:
        cold = _cold_compile_seconds(name) if name in COMPILED else None
        first = _first_call_seconds(name, keys, now)
        target, against = TARGETS.get(name), ""
        if name in RELATIVE_TARGETS:
            # Timed in turn with its peer, so that both see the same machine load.
            peer, fraction = RELATIVE_TARGETS[name]
            paired = alternating_rates({name: (route, fresh(name)), peer: (route, fresh(peer))}, TUPLES)
            rate = paired[name]
            target = fraction * paired[peer]
            against = (
                f"target {fraction} x {peer} timed in turn with it ({peer} {paired[peer] / 1e6:.2f}M, "
                f"{rate / paired[peer]:.2f} x); "
            )
        else:
            rate = median_rate(route, TUPLES, setup=fresh(name))
        note = against + (f"numba compile (empty cache) {cold:.2f} s; " if cold is not None else "") + (
            f"1st call here {first:.2f} s; runs " + " ".join(f"{r / 1e6:.2f}M" for r in rate.runs)
        )
        rows.append(Row.measured(SECTION, f"{name} route", rate, "tuples/s", baseline, target, note))
    choose_keys, choose_now = keys[:CHOOSE_TUPLES], now[:CHOOSE_TUPLES].tolist()
    for name in GROUPINGS:

        def by_tuple(g, ks=choose_keys, ts=choose_now):  # type: ignore[no-untyped-def]
            choose = g.choose
            for k, t in zip(ks, ts, strict=True):
                choose(k, t)

        rate = median_rate(
            by_tuple,
            CHOOSE_TUPLES,
            repeats=3,
            setup=lambda name=name: create_grouping(name, WORKERS, start_ms=T0),
        )
        rows.append(
            Row.measured(SECTION, f"{name} choose (per tuple)", rate, "tuples/s", baseline,
                         note="reference only, no target")  # fmt: skip
        )
    return rows
