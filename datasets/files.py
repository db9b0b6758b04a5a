"""Readers for user-supplied files: plain, .gz or .bz2, line by line, never whole.

A ``path`` may be a file, a directory (its files, sorted by name: e.g. a folder of hourly
pageview dumps) or a glob pattern. Lines end at LF, CR or CR LF and are decoded as UTF-8 with U+FFFD
for invalid bytes, which is what the reference's Java reader does. Malformed lines are skipped,
counted and reported with their file and 1-based line number (``Dataset.malformed``); lines that are
deliberately not records (a header, a tweet-stream ``limit`` notice) are counted in ``Dataset.skipped``.
"""

from __future__ import annotations

import bz2
import glob
import gzip
import hashlib
import io
import json
import os
import re
import unicodedata
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

from .base import Dataset, DatasetFileMissing, MalformedLog, MalformedRecord, SourceRecord
from .common import cache_dir

# Java's String.trim() removes every char <= U+0020 at both ends.
JAVA_TRIM = "".join(chr(c) for c in range(0x21))


class Skip(Exception):
    """A line that is not a record by design (counted in ``Dataset.skipped``, not malformed)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def resolve_paths(path: str | os.PathLike) -> list[Path]:
    p = Path(path).expanduser()
    if p.is_file():
        return [p]
    if p.is_dir():
        return sorted(f for f in p.iterdir() if f.is_file() and not f.name.startswith("."))
    return [Path(f) for f in sorted(glob.glob(str(p))) if Path(f).is_file()]


GZIP_MAGIC = b"\x1f\x8b\x08"
"""A gzip member's first bytes: its magic and the deflate method (RFC 1952)."""
BZIP2_MAGIC = re.compile(rb"BZh[1-9](1AY&SY|\x17rE8P\x90)")
"""A bzip2 stream's first bytes: `BZh`, the block size, then a block's or the end's magic number."""


class DatasetFileCorrupt(ValueError):
    """A compressed user file that cannot be read to its end (its name and the last line read)."""


def open_binary(path: Path) -> BinaryIO:
    """`path` opened for reading, decompressed when its first bytes are a gzip or bzip2 header (a
    plain file that merely starts with ``BZh`` is read as it is)."""
    with open(path, "rb") as f:
        magic = f.read(10)
    if magic.startswith(GZIP_MAGIC):
        return gzip.open(path, "rb")  # type: ignore[return-value]
    if BZIP2_MAGIC.match(magic):
        return bz2.open(path, "rb")  # type: ignore[return-value]
    return open(path, "rb", buffering=1 << 20)


def iter_lines(path: Path) -> Iterator[tuple[int, str]]:
    """(1-based line number, line without its end) for every line of a file, decoded as UTF-8 with
    U+FFFD for invalid bytes. Lines end as Java's `BufferedReader.readLine` ends them, the reference's
    producers' reader: at LF, CR or CR LF.

    Raises: DatasetFileCorrupt for a compressed file that ends early or is not what its header says."""
    n = 0
    try:
        with open_binary(path) as f, io.TextIOWrapper(f, encoding="utf-8", errors="replace", newline=None) as text:
            for n, line in enumerate(text, 1):
                yield n, line[:-1] if line.endswith("\n") else line
    except (OSError, EOFError, zlib.error) as e:
        raise DatasetFileCorrupt(f"{path}: cannot be read past line {n} ({e})") from None


SHA256_CACHE_MIN_BYTES = 16 << 20
"""Smaller files are hashed every time (milliseconds); larger ones once per (path, size, mtime)."""


def _sha256_uncached(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(1 << 20):
            h.update(chunk)
    return h.hexdigest()


def sha256_file(path: Path) -> str:
    """SHA-256 of a file; for large files cached under ``.cache/datasets/sha256.json`` by
    (path, size, mtime)."""
    st = path.stat()
    if st.st_size < SHA256_CACHE_MIN_BYTES:
        return _sha256_uncached(path)
    ident = f"{path.resolve()}|{st.st_size}|{st.st_mtime_ns}"
    store = cache_dir() / "datasets" / "sha256.json"
    try:
        known = json.loads(store.read_text())
    except (OSError, ValueError):
        known = {}
    if ident in known:
        return known[ident]
    known[ident] = _sha256_uncached(path)
    try:
        store.parent.mkdir(parents=True, exist_ok=True)
        tmp = store.with_suffix(".tmp")
        tmp.write_text(json.dumps(known, indent=0))
        tmp.replace(store)
    except OSError:
        pass
    return known[ident]


class FileDataset(Dataset):
    """A dataset read from user-supplied files in a real public format."""

    published_at: str = ""
    """Where the public data is published (for the missing-file error)."""
    expected_format: str = ""
    """The line format expected (for the missing-file error)."""

    def __init__(self, path: str | os.PathLike | None = None) -> None:
        super().__init__()
        self.path = None if path is None else str(path)

    def files(self) -> list[Path]:
        if self.path is None:
            raise DatasetFileMissing(self._missing("no path given (pass path=...)"))
        found = resolve_paths(self.path)
        if not found:
            raise DatasetFileMissing(self._missing(f"no file at {self.path!r}"))
        return found

    def _missing(self, what: str) -> str:
        return (
            f"{self.name}: {what}. This dataset reads user-supplied files (plain, .gz or .bz2; a file, "
            f"a directory or a glob). Expected format: {self.expected_format}. "
            f"The public data is published at: {self.published_at}"
        )

    def parse_line(self, line: str, file: Path) -> SourceRecord:
        """One source line -> one record; raise ``MalformedRecord`` or ``Skip``."""
        raise NotImplementedError

    def records(self, limit: int | None = None) -> Iterator[SourceRecord]:
        files = self.files()
        self.malformed = MalformedLog()
        self.skipped = {}
        produced = 0
        if limit is not None and limit <= 0:
            return
        parse = self.parse_line
        for file in files:
            for n, line in iter_lines(file):
                try:
                    rec = parse(line, file)
                except MalformedRecord as e:
                    self.malformed.add(str(file), n, e.reason)
                    continue
                except Skip as s:
                    self.skipped[s.reason] = self.skipped.get(s.reason, 0) + 1
                    continue
                yield rec
                produced += 1
                if limit is not None and produced >= limit:
                    return

    def fingerprint(self) -> dict:
        files = self.files()
        return {
            "name": self.name,
            "path": self.path,
            "files": [{"name": str(f), "bytes": f.stat().st_size, "sha256": sha256_file(f)} for f in files],
        }


def java_trim(s: str) -> str:
    return s.strip(JAVA_TRIM)


def java_split(s: str, sep: str) -> list[str]:
    """Java's ``String.split`` on a literal one-char separator: trailing empty strings removed."""
    parts = s.split(sep)
    while parts and parts[-1] == "":
        parts.pop()
    return parts


def parse_java_int(s: str, bits: int = 32) -> int:
    """Java ``Integer.parseInt`` (32) / ``Long.parseLong`` (64): an optional sign, then decimal digits,
    each a UTF-16 char that ``Character.digit(c, 10)`` takes (Unicode category Nd: ``"\u0661\u0662"``
    is 12, as in Java), in range. Raises ValueError where Java throws NumberFormatException."""
    body = s[1:] if s[:1] in "+-" else s
    if not body:
        raise ValueError(s)
    if not (body.isascii() and body.isdigit()) and any(
        ord(c) > 0xFFFF or unicodedata.category(c) != "Nd" for c in body
    ):
        raise ValueError(s)
    v = int(s)
    if not -(2 ** (bits - 1)) <= v < 2 ** (bits - 1):
        raise ValueError(s)
    return v
