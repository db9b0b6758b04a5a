"""Shared pieces: the one-JSON-field datasets (COUNTRY and friends), chunked key generators,
vectorised key statistics."""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Iterator
from importlib import metadata
from pathlib import Path

import numpy as np

from . import jsonrule as J
from .base import Dataset, KeyStats, MalformedLog, SourceRecord, SplitterSQL

DATA_DIR = Path(__file__).resolve().parent / "data"
CANONICAL = "value_canonical"
"""The prelude column of key-only JSON rules: ``jsonrule.sql_canonical_string`` of the key field."""
CHUNK = 1 << 16
"""Generators draw record i from the random stream of chunk i // CHUNK only, seeded by
(seed, chunk): a prefix never depends on the limit, and any chunk can be rebuilt alone."""


def cache_dir() -> Path:
    """``$BENCH_CACHE_DIR`` or ``<repo>/.cache`` (git-ignored)."""
    env = os.environ.get("BENCH_CACHE_DIR")
    return Path(env) if env else Path(__file__).resolve().parent.parent / ".cache"


def package_version(dist: str) -> str | None:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


def chunk_rng(seed: int, chunk: int) -> np.random.Generator:
    return np.random.default_rng([seed, chunk])


class JsonKeyDataset(Dataset):
    """Records are ``{"<key_field>": key, ...}``; the splitter emits ``(key, 1)``, or
    ``(key, <count_field>)`` when the dataset carries counts."""

    key_field: str = "country"
    count_field: str | None = None

    def extract(self, value: str) -> list[tuple[str, int]]:
        obj = J.parse_object(value)
        key = J.str_field(obj, self.key_field)
        count = J.int_field(obj, self.count_field) if self.count_field else 1
        return [(key, count)]

    @property
    def splitter_sql(self) -> SplitterSQL:
        """The rule in Spark SQL. Without a count field, a record in the producers' compact form
        (``jsonrule.sql_canonical_string``) gives its key straight from the text, and only the others
        are parsed (inline, up to four times each): parsing every record was the largest single cost
        of the streaming splitter (about 0.85 s per 200,000 records on two cores)."""
        # With a count field, every record is parsed once by the default prelude; without one, only
        # the records that are not compact are parsed, inline.
        parsed = J.V if self.count_field else J.PARSE
        checks = J.sql_check(self.key_field, "string", parsed)
        count_sql = "CAST(1 AS BIGINT)"
        if self.count_field:
            checks += J.sql_check(self.count_field, "integer", parsed)
            count_sql = J.sql_get(self.count_field, "bigint", parsed)
        error = J.sql_error(checks, parsed)
        tuples = J.sql_tuples_when_ok(error, J.sql_one_tuple(J.sql_get(self.key_field, "string", parsed), count_sql))
        if self.count_field:
            return SplitterSQL(tuples=tuples, error=error)
        compact = f"{CANONICAL} <> ''"
        return SplitterSQL(
            tuples=f"CASE WHEN {compact} THEN {J.sql_one_tuple(f'substring({CANONICAL}, 2)')} ELSE {tuples} END",
            error=f"CASE WHEN {compact} THEN NULL ELSE {error} END",
            prelude=f"{J.sql_canonical_string(self.key_field)} AS {CANONICAL}",
        )


class KeyIndexDataset(JsonKeyDataset):
    """A dataset whose records are drawn from a small vocabulary of keys, generated chunk by chunk
    as arrays of key indices (vectorised statistics, cheap records)."""

    keys: list[str]
    length: int

    def key_index_chunks(self, limit: int | None = None) -> Iterator[np.ndarray]:
        """Arrays of indices into ``self.keys``; their concatenation is the stream."""
        n = self.length if limit is None else min(limit, self.length)
        for c in range((n + CHUNK - 1) // CHUNK):
            lo = c * CHUNK
            # Draw the chunk as the full-length stream does, then cut: a prefix never depends on
            # the limit.
            idx = self._chunk(c, min(CHUNK, self.length - lo))
            yield idx if lo + len(idx) <= n else idx[: n - lo]

    def _chunk(self, c: int, size: int) -> np.ndarray:  # pragma: no cover - abstract
        raise NotImplementedError

    def event_ms_chunk(self, c: int, size: int) -> np.ndarray | None:
        return None

    def _values(self) -> list[bytes]:
        return [J.encode({self.key_field: k}) for k in self.keys]

    def extract(self, value: str) -> list[tuple[str, int]]:
        # A small vocabulary of distinct records: memoise the (pure) rule for the simulator.
        memo = self.__dict__.setdefault("_extract_memo", {})
        hit = memo.get(value)
        if hit is not None:
            return list(hit)
        pairs = super().extract(value)  # raises MalformedRecord: never memoised
        if len(memo) < 4 * len(self.keys) + 64:
            memo[value] = tuple(pairs)
        return pairs

    def records(self, limit: int | None = None) -> Iterator[SourceRecord]:
        self.malformed = MalformedLog()  # generated data: never malformed
        values = self._values()
        for c, idx in enumerate(self.key_index_chunks(limit)):
            ev = self.event_ms_chunk(c, len(idx))
            if ev is None:
                for i in idx.tolist():
                    yield SourceRecord(values[i], None)
            else:
                for i, e in zip(idx.tolist(), ev.tolist()):
                    yield SourceRecord(values[i], e)

    def tuples(self, limit: int | None = None) -> Iterator[tuple[str, int, int | None]]:
        keys = self.keys
        for c, idx in enumerate(self.key_index_chunks(limit)):
            ev = self.event_ms_chunk(c, len(idx))
            evl = [None] * len(idx) if ev is None else ev.tolist()
            for i, e in zip(idx.tolist(), evl):
                yield keys[i], 1, e

    def key_counts_array(self, limit: int | None = None) -> np.ndarray:
        total = np.zeros(len(self.keys), dtype=np.int64)
        for idx in self.key_index_chunks(limit):
            total += np.bincount(idx, minlength=len(self.keys))
        return total

    def key_stats(self, limit: int | None = None) -> KeyStats:
        arr = self.key_counts_array(limit)
        counts = Counter({k: int(c) for k, c in zip(self.keys, arr.tolist()) if c})
        n = int(arr.sum())
        return KeyStats(records=n, tuples=n, weight=n, counts=counts, weights=Counter(counts))


def require_int(name: str, value, lo: int | None = None, hi: int | None = None) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        try:
            value = int(str(value).replace("_", ""))
        except ValueError:
            raise ValueError(f"parameter {name} must be an integer, got {value!r}") from None
    value = int(value)
    if (lo is not None and value < lo) or (hi is not None and value > hi):
        raise ValueError(f"parameter {name} must be in [{lo}, {hi}], got {value}")
    return value


def require_float(name: str, value, lo: float | None = None, hi: float | None = None) -> float:
    try:
        value = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"parameter {name} must be a number, got {value!r}") from None
    if (lo is not None and value < lo) or (hi is not None and value > hi):
        raise ValueError(f"parameter {name} must be in [{lo}, {hi}], got {value}")
    return value


def require_bool(name: str, value) -> bool:
    if isinstance(value, bool):
        return value
    s = str(value).strip().lower()
    if s in ("1", "true", "yes", "on"):
        return True
    if s in ("0", "false", "no", "off"):
        return False
    raise ValueError(f"parameter {name} must be a boolean, got {value!r}")


def require_choice(name: str, value, choices: tuple[str, ...]) -> str:
    if value not in choices:
        raise ValueError(f"parameter {name} must be one of {', '.join(choices)}, got {value!r}")
    return value


__all__ = [
    "CHUNK",
    "DATA_DIR",
    "JsonKeyDataset",
    "KeyIndexDataset",
    "cache_dir",
    "chunk_rng",
    "package_version",
    "require_bool",
    "require_choice",
    "require_float",
    "require_int",
]
