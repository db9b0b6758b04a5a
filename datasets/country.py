"""The reference's COUNTRY streams and the golden stream (reference §11, §14).

COUNTRY_SKEW_R<r>: each line draws p uniformly from [0, 100); p < r gives ``Turkey``, otherwise a
uniform draw from the 204 names (``Turkey`` included, so P(Turkey) = r/100 + (1 - r/100)/204).
The reference used an unseeded ``java.util.Random``; we reproduce the law, seeded.
"""

from __future__ import annotations

import hashlib
from functools import cache

import numpy as np

from .common import (
    CHUNK,
    DATA_DIR,
    KeyIndexDataset,
    chunk_rng,
    require_int,
)

COUNTRY_NAMES_MD5 = "2ddab4373da2af492ad8d2f59a0b40d5"
HOT_KEY = "Turkey"
REFERENCE_LENGTH = 10_000_000


@cache
def country_names() -> tuple[str, ...]:
    """The reference's 204 names, in its order (``Turkey`` at line 190)."""
    raw = (DATA_DIR / "country_names.txt").read_bytes()
    digest = hashlib.md5(raw).hexdigest()
    if digest != COUNTRY_NAMES_MD5:
        raise RuntimeError(f"datasets/data/country_names.txt: MD5 {digest}, expected {COUNTRY_NAMES_MD5}")
    names = tuple(line.strip() for line in raw.decode("utf-8").splitlines())
    assert len(names) == 204 and names[189] == HOT_KEY
    return names


class CountrySkew(KeyIndexDataset):
    """COUNTRY_SKEW_R<r> and COUNTRY_HALF_SKEW_R80."""

    key_field = "country"
    origin = "reference law (odalabasmaz/DynamicKeyGrouping), names from the reference's 204-name list"
    licence = "generated; the name list is the reference's (Apache-2.0 repository)"
    record_format = '{"country":"<name>"} (reference COUNTRY message, compact JSON)'

    def __init__(self, r: int = 80, *, length: int = REFERENCE_LENGTH, seed: int = 0, half: bool = False) -> None:
        super().__init__()
        self.r = require_int("r", r, 0, 100)
        self.length = require_int("length", length, 0)
        self.seed = require_int("seed", seed, 0)
        self.half = half
        self.keys = list(country_names())
        self._hot = self.keys.index(HOT_KEY)
        self.documented_records = self.length
        if half:
            self.name = f"COUNTRY_HALF_SKEW_R{self.r}"
            self.description = (
                f"first half ({self.length // 2:,} records) at r={self.r}, second half uniform over the "
                "204 country names (r=0): a skew that disappears mid-stream"
            )
        else:
            self.name = f"COUNTRY_SKEW_R{self.r}"
            self.description = (
                f"{self.length:,} records; with probability {self.r}% the key is Turkey, else a uniform "
                "draw from the 204 country names"
            )

    def _chunk(self, c: int, size: int) -> np.ndarray:
        rng = chunk_rng(self.seed, c)
        p = rng.random(size) * 100.0  # p uniform in [0, 100), as the reference draws it
        idx = rng.integers(0, len(self.keys), size=size)
        if self.half:
            pos = np.arange(c * CHUNK, c * CHUNK + size)
            r = np.where(pos < self.length // 2, self.r, 0)
        else:
            r = self.r
        idx[p < r] = self._hot
        return idx

    def fingerprint(self) -> dict:
        return {
            "name": self.name,
            "generator": "numpy PCG64, SeedSequence([seed, chunk]), chunk 65536: p=random()*100, name=integers(204)",
            "r": self.r,
            "half": self.half,
            "seed": self.seed,
            "length": self.length,
            "country_names_md5": COUNTRY_NAMES_MD5,
            "numpy": np.__version__,
        }


# --- golden stream (reference §14) -------------------------------------------------------------

_GAMMA = np.uint64(0x9E3779B97F4A7C15)
_C1 = np.uint64(0xBF58476D1CE4E5B9)
_C2 = np.uint64(0x94D049BB133111EB)


def splitmix64_draw(j: np.ndarray) -> np.ndarray:
    """draw(j) = mix((j + 1) * 0x9E3779B97F4A7C15), all mod 2**64 (reference §14)."""
    with np.errstate(over="ignore"):
        z = (j.astype(np.uint64) + np.uint64(1)) * _GAMMA
        z = (z ^ (z >> np.uint64(30))) * _C1
        z = (z ^ (z >> np.uint64(27))) * _C2
        return z ^ (z >> np.uint64(31))


class GoldenSkew(KeyIndexDataset):
    """GOLDEN_SKEW: the golden stream of reference §14, in the COUNTRY message format."""

    name = "GOLDEN_SKEW"
    key_field = "country"
    origin = "reference spec §14 (SplitMix64 finaliser), the stream behind the public golden vectors"
    licence = "generated"
    record_format = '{"country":"<Turkey|K000..K199>"}; event_ms = T0 + 1000*(i//R) + (1000*(i%R))//R'

    def __init__(self, *, skew: int = 80, rate: int = 200, length: int = 60_000, t0_ms: int = 1_000_000) -> None:
        super().__init__()
        self.skew = require_int("skew", skew, 0, 100)
        self.rate = require_int("rate", rate, 1)
        self.length = require_int("length", length, 0)
        self.t0_ms = require_int("t0_ms", t0_ms)
        self.keys = [f"K{i:03d}" for i in range(200)] + ["Turkey"]
        self.documented_records = self.length
        self.description = (
            f"golden stream: {self.length:,} tuples, Turkey with probability {self.skew}% else "
            f"K000..K199 by SplitMix64, {self.rate} tuples per virtual second from T0={self.t0_ms} ms"
        )

    def _chunk(self, c: int, size: int) -> np.ndarray:
        i = np.arange(c * CHUNK, c * CHUNK + size, dtype=np.uint64)
        hot = splitmix64_draw(np.uint64(2) * i) % np.uint64(100) < np.uint64(self.skew)
        other = (splitmix64_draw(np.uint64(2) * i + np.uint64(1)) % np.uint64(200)).astype(np.int64)
        return np.where(hot, 200, other)

    def event_ms_chunk(self, c: int, size: int) -> np.ndarray:
        i = np.arange(c * CHUNK, c * CHUNK + size, dtype=np.int64)
        return self.t0_ms + 1000 * (i // self.rate) + (1000 * (i % self.rate)) // self.rate

    def fingerprint(self) -> dict:
        return {
            "name": self.name,
            "generator": "reference §14 SplitMix64",
            "skew": self.skew,
            "rate": self.rate,
            "length": self.length,
            "t0_ms": self.t0_ms,
        }
