"""Synthetic generators: ZIPF and HOT_KEY_SHIFT (hot keys that change at given times)."""

from __future__ import annotations

from functools import cached_property

import numpy as np

from .common import CHUNK, KeyIndexDataset, chunk_rng, require_float, require_int


def zipf_probabilities(s: float, n: int) -> np.ndarray:
    """P(rank k) = k**-s / H(n, s) for k = 1..n (finite Zipf; s = 0 is uniform)."""
    w = np.arange(1, n + 1, dtype=np.float64) ** -s
    return w / w.sum()


def _draw_ranks(rng: np.random.Generator, cdf: np.ndarray, size: int) -> np.ndarray:
    """Inverse-CDF sampling: 0-based ranks."""
    r = np.searchsorted(cdf, rng.random(size), side="right")
    return np.minimum(r, len(cdf) - 1)  # cdf[-1] may round below 1.0


class _ZipfRanks:
    """Key probabilities of a Zipf law with exponent `self.s` over `self.n_keys` ranks."""

    s: float
    n_keys: int

    @cached_property
    def probabilities(self) -> np.ndarray:
        """Intended probability of each key (index = rank - 1)."""
        return zipf_probabilities(self.s, self.n_keys)

    @cached_property
    def _cdf(self) -> np.ndarray:
        return np.cumsum(self.probabilities)


class Zipf(_ZipfRanks, KeyIndexDataset):
    name = "ZIPF"
    key_field = "key"
    origin = "generated (numpy PCG64, inverse-CDF sampling of a finite Zipf law)"
    licence = "generated"
    record_format = '{"key":"K0000"} (K<rank-1>, zero-padded: K0000 is the most frequent key)'

    def __init__(self, *, s: float = 1.0, keys: int = 10_000, length: int = 1_000_000, seed: int = 0) -> None:
        super().__init__()
        self.s = require_float("s", s, 0.0)
        self.n_keys = require_int("keys", keys, 1)
        self.length = require_int("length", length, 0)
        self.seed = require_int("seed", seed, 0)
        width = len(str(self.n_keys - 1))
        self.keys = [f"K{i:0{width}d}" for i in range(self.n_keys)]
        self.documented_records = self.length
        self.description = f"{self.length:,} records, Zipf exponent s={self.s:g} over {self.n_keys:,} keys"

    def _chunk(self, c: int, size: int) -> np.ndarray:
        return _draw_ranks(chunk_rng(self.seed, c), self._cdf, size)

    def fingerprint(self) -> dict:
        return {
            "name": self.name,
            "generator": "numpy PCG64, SeedSequence([seed, chunk]), chunk 65536, inverse CDF",
            "s": self.s,
            "keys": self.n_keys,
            "length": self.length,
            "seed": self.seed,
            "numpy": np.__version__,
        }


class HotKeyShift(_ZipfRanks, KeyIndexDataset):
    """A Zipf stream whose rank -> key mapping is re-drawn at given event times, so the hot keys
    change (for adaptive groupings). Record i has the virtual event time
    ``t0_ms + 1000*(i//rate) + (1000*(i%rate))//rate`` (the golden stream's clock); phase p starts at
    ``shift_at_s[p-1]`` seconds after t0 and maps rank r to key ``perm_p[r]`` (perm_0 = identity)."""

    name = "HOT_KEY_SHIFT"
    key_field = "key"
    origin = "generated (numpy PCG64; finite Zipf law with re-drawn hot keys)"
    licence = "generated"
    record_format = '{"key":"K0000"}; event_ms on a virtual clock of `rate` records per second'

    def __init__(
        self,
        *,
        s: float = 1.2,
        keys: int = 1000,
        length: int = 1_000_000,
        rate: int = 10_000,
        shift_at_s: str | tuple[float, ...] | list[float] | None = None,
        phases: int = 4,
        t0_ms: int = 1_000_000,
        seed: int = 0,
    ) -> None:
        super().__init__()
        self.s = require_float("s", s, 0.0)
        self.n_keys = require_int("keys", keys, 2)
        self.length = require_int("length", length, 0)
        self.rate = require_int("rate", rate, 1)
        self.t0_ms = require_int("t0_ms", t0_ms)
        self.seed = require_int("seed", seed, 0)
        duration_s = self.length / self.rate
        if shift_at_s is None:
            n = require_int("phases", phases, 1)
            shifts = [duration_s * p / n for p in range(1, n)]
        else:
            if isinstance(shift_at_s, str):
                shift_at_s = [x for x in shift_at_s.replace(";", ",").split(",") if x.strip()]
            shifts = [require_float("shift_at_s", x, 0.0) for x in shift_at_s]
            if shifts != sorted(shifts):
                raise ValueError("parameter shift_at_s must be increasing")
        self.shift_at_s = tuple(shifts)
        width = len(str(self.n_keys - 1))
        self.keys = [f"K{i:0{width}d}" for i in range(self.n_keys)]
        self.documented_records = self.length
        self.description = (
            f"{self.length:,} records at {self.rate:,}/s (virtual), Zipf s={self.s:g} over {self.n_keys:,} keys, "
            f"hot keys re-drawn at t = {', '.join(f'{x:g}' for x in self.shift_at_s) or '(never)'} s"
        )

    @cached_property
    def permutations(self) -> np.ndarray:
        """(phases, keys): row p maps rank - 1 to key index in phase p."""
        perms = [np.arange(self.n_keys)]
        for p in range(1, len(self.shift_at_s) + 1):
            perms.append(np.random.default_rng([self.seed, 1 << 40, p]).permutation(self.n_keys))
        return np.stack(perms)

    def phase_of(self, event_ms: np.ndarray) -> np.ndarray:
        shifts_ms = np.asarray([self.t0_ms + x * 1000.0 for x in self.shift_at_s], dtype=np.float64)
        return np.searchsorted(shifts_ms, event_ms, side="right")

    def event_ms_chunk(self, c: int, size: int) -> np.ndarray:
        i = np.arange(c * CHUNK, c * CHUNK + size, dtype=np.int64)
        return self.t0_ms + 1000 * (i // self.rate) + (1000 * (i % self.rate)) // self.rate

    def _chunk(self, c: int, size: int) -> np.ndarray:
        ranks = _draw_ranks(chunk_rng(self.seed, c), self._cdf, size)
        phase = self.phase_of(self.event_ms_chunk(c, size))
        return self.permutations[phase, ranks]

    def fingerprint(self) -> dict:
        return {
            "name": self.name,
            "generator": "numpy PCG64, SeedSequence([seed, chunk]), chunk 65536; phase perms SeedSequence([seed, 2**40, p])",
            "s": self.s,
            "keys": self.n_keys,
            "length": self.length,
            "rate": self.rate,
            "shift_at_s": list(self.shift_at_s),
            "t0_ms": self.t0_ms,
            "seed": self.seed,
            "numpy": np.__version__,
        }
