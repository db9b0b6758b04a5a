"""The dataset contract: raw records, the splitter rule (Python and Spark SQL), fingerprints.

A dataset is what a Storm spout replays. It yields raw records (the Kafka record value the
producer sends: the reference's message format where it has one) and knows the splitter rule that
turns one raw record into ``(key, count)`` tuples, twice: ``extract`` in Python (simulator, tests,
statistics) and ``splitter_sql`` in Spark SQL (the streaming splitter, vectorised, no UDF). The two
must agree on every record, malformed ones included (tests/datasets/test_splitter_sql.py).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field

__all__ = [
    "INVALID_UTF8",
    "KEY_TOO_LONG",
    "MAX_KEY_BYTES",
    "NULL_VALUE",
    "Dataset",
    "DatasetFileMissing",
    "KeyStats",
    "MalformedLog",
    "MalformedRecord",
    "SourceRecord",
    "SplitterSQL",
]


MAX_KEY_BYTES = 1024
"""Default bound on a key's UTF-8 length (`--max-key-bytes`): a record with a longer key is a dead
letter (`KEY_TOO_LONG`), so that no output record (`<run>.aggregates` is keyed by the key) can
exceed Kafka's message size."""

# Dead-letter reasons a record gets before its dataset's own rule is asked: the streaming splitter
# (bench.topology.splitter) and `bench simulate`'s decoding of a recorded topic alike.
NULL_VALUE = "null value"
INVALID_UTF8 = "invalid UTF-8"
KEY_TOO_LONG = "key too long"


class MalformedRecord(ValueError):
    """A raw record the splitter rule cannot parse. ``reason`` is short and stable
    (e.g. ``"invalid json"``, ``"missing field 'country'"``): it is what the Spark SQL
    ``SplitterSQL.error`` expression returns for the same record."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class DatasetFileMissing(FileNotFoundError):
    """A user-supplied dataset file is absent; the message says where the public data is
    published and which format is expected."""


@dataclass(frozen=True, slots=True)
class SourceRecord:
    """One raw record as the producer sends it."""

    value: bytes
    """The raw Kafka record value (UTF-8): the reference's message format where it has one
    (e.g. ``b'{"country":"Turkey"}'``), else a documented JSON line."""
    event_ms: int | None
    """The dataset's own event time in epoch ms (None if it has none). The producer uses it for
    ``--speed`` pacing and puts it in the Kafka header ``event_ms`` (ASCII decimal)."""


@dataclass(frozen=True, slots=True)
class SplitterSQL:
    """The splitter rule as Spark SQL over the STRING column ``value`` (built-ins only).

    The expressions may also read the column ``prelude`` defines, computed once per row: select it
    beside ``value`` first (``df.selectExpr("*", sql.prelude)``). By default that is ``value_json``,
    the record parsed: Spark does not share a ``try_parse_json(value)`` repeated inside CASE
    branches, so parsing in a column of its own halves the splitter's cost.
    """

    tuples: str
    """-> ``array<struct<key:string,count:bigint>>``; 0..n tuples per record; NULL when malformed."""
    error: str
    """-> string reason when malformed (equal to ``MalformedRecord.reason``), NULL when fine."""
    prelude: str = "try_parse_json(value) AS value_json"
    """The column the expressions read besides ``value``, as a ``selectExpr`` item. Spark computes it
    for every record, wherever the expressions use it."""


@dataclass
class MalformedLog:
    """Malformed input lines skipped by a reader: counted and reported, never silently dropped."""

    max_examples: int = 10
    count: int = 0
    examples: list[dict] = field(default_factory=list)
    """The first ``max_examples`` as ``{"file": ..., "line": 1-based, "reason": ...}``."""

    def add(self, file: str, line: int, reason: str) -> None:
        self.count += 1
        if len(self.examples) < self.max_examples:
            self.examples.append({"file": file, "line": line, "reason": reason})

    def to_dict(self) -> dict:
        return {"count": self.count, "first": list(self.examples)}


@dataclass
class KeyStats:
    """Key distribution of a dataset prefix, as the groupings (tuples) and metrics (weights) see it."""

    records: int = 0
    tuples: int = 0
    weight: int = 0
    malformed: int = 0
    """Records whose ``extract`` raised (they reach the splitter's dead-letter output)."""
    counts: Counter = field(default_factory=Counter)
    """Tuples per key (what a grouping balances, reference Q19)."""
    weights: Counter = field(default_factory=Counter)
    """Sum of the count field per key (what STD_DEV and throughput use, reference Q19)."""


class Dataset(ABC):
    """A replayable, deterministic source of raw records.

    Subclasses set the five descriptive attributes and implement ``records``, ``extract``,
    ``splitter_sql`` and ``fingerprint``. ``tuples`` and ``key_stats`` have generic
    implementations on top of those; large datasets override them with vectorised ones.
    """

    name: str
    description: str
    origin: str
    licence: str
    record_format: str
    documented_records: int | None = None
    """The number of records ``records()`` yields without a limit, when it is known in advance."""
    weighted: bool = False
    """True when the count field is not always 1 (reference Q19)."""

    def __init__(self) -> None:
        self.malformed = MalformedLog()
        """Input lines skipped by the last ``records()`` iteration (user files only)."""
        self.skipped: dict[str, int] = {}
        """Input lines deliberately skipped as not being records (e.g. tweet-stream ``limit``
        notices), by reason, for the last ``records()`` iteration."""

    @abstractmethod
    def records(self, limit: int | None = None) -> Iterator[SourceRecord]:
        """The first ``limit`` records (all if None), streaming and deterministic."""

    @abstractmethod
    def extract(self, value: str) -> list[tuple[str, int]]:
        """The ``(key, count)`` tuples of one raw record; raises ``MalformedRecord``."""

    @property
    @abstractmethod
    def splitter_sql(self) -> SplitterSQL:
        """``extract`` as Spark SQL expressions over the string column ``value``."""

    @abstractmethod
    def fingerprint(self) -> dict:
        """What identifies the exact data: name, params, file sha256 or package version, seed, length."""

    def tuples(self, limit: int | None = None) -> Iterator[tuple[str, int, int | None]]:
        """``(key, count, event_ms)`` for every tuple of the first ``limit`` records, as the
        splitter emits them (malformed records yield nothing). For simulators."""
        extract = self.extract
        for rec in self.records(limit):
            try:
                pairs = extract(rec.value.decode("utf-8"))
            except MalformedRecord:
                continue
            for key, count in pairs:
                yield key, count, rec.event_ms

    def key_stats(self, limit: int | None = None) -> KeyStats:
        """The key distribution of the first ``limit`` records."""
        st = KeyStats()
        counts, weights = st.counts, st.weights
        extract = self.extract
        for rec in self.records(limit):
            st.records += 1
            try:
                pairs = extract(rec.value.decode("utf-8"))
            except MalformedRecord:
                st.malformed += 1
                continue
            for key, count in pairs:
                counts[key] += 1
                weights[key] += count
        st.tuples = sum(counts.values())
        st.weight = sum(weights.values())
        return st

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name}>"
