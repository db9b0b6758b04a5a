"""Dataset registry: the reference's datasets, real skewed datasets that install offline from the
package registries, and synthetic generators.

>>> from datasets import get_dataset
>>> ds = get_dataset("COUNTRY_SKEW_R80", length=1000, seed=1)
>>> next(ds.records()).value
b'{"country":"Turkey"}'

Names are case-insensitive and may be spelt like the reference's topics (``country-skew-r80``).
See docs/datasets.md for every dataset's origin, licence, format, key rule and record count.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable

from .base import (
    Dataset,
    DatasetFileMissing,
    KeyStats,
    MalformedLog,
    MalformedRecord,
    SourceRecord,
    SplitterSQL,
)
from .country import CountrySkew, GoldenSkew
from .flights import NycFlights, UsFlights3M
from .geonames import GeonamesCountry
from .synthetic import HotKeyShift, Zipf
from .twitter import TrumpTweets, TwitterElection, TwitterTicker
from .wikipedia import WikipediaClickstream, WikipediaPageviews, WikipediaPageviewsByLang

__all__ = [
    "DATASETS",
    "FAMILIES",
    "Dataset",
    "DatasetFileMissing",
    "KeyStats",
    "MalformedLog",
    "MalformedRecord",
    "SourceRecord",
    "SplitterSQL",
    "dataset_params",
    "get_dataset",
]


def _country_skew(r: int) -> Callable[..., Dataset]:
    def make(*, length: int = 10_000_000, seed: int = 0) -> Dataset:
        return CountrySkew(r, length=length, seed=seed)

    return make


def _half_skew(*, length: int = 10_000_000, seed: int = 0) -> Dataset:
    return CountrySkew(80, length=length, seed=seed, half=True)


_REGISTRY: dict[str, Callable[..., Dataset]] = {
    **{f"COUNTRY_SKEW_R{r}": _country_skew(r) for r in range(0, 101, 10)},
    "COUNTRY_HALF_SKEW_R80": _half_skew,
    "TWITTER_TICKER": TwitterTicker,
    "TWITTER_ELECTION": TwitterElection,
    "WIKIPEDIA_PAGEVIEWS": WikipediaPageviews,
    "WIKIPEDIA_PAGEVIEWS_BY_LANG": WikipediaPageviewsByLang,
    "WIKIPEDIA_CLICKSTREAM": WikipediaClickstream,
    "GOLDEN_SKEW": GoldenSkew,
    "NYC_FLIGHTS": NycFlights,
    "US_FLIGHTS_3M": UsFlights3M,
    "TRUMP_TWEETS": TrumpTweets,
    "GEONAMES_COUNTRY": GeonamesCountry,
    "ZIPF": Zipf,
    "HOT_KEY_SHIFT": HotKeyShift,
}

DATASETS: tuple[str, ...] = tuple(_REGISTRY)
"""Registered names. ``COUNTRY_SKEW_R<r>`` is a family: any r in 0..100 is accepted, the reference's
eleven (steps of 10) are listed."""

FAMILIES: dict[str, str] = {
    "COUNTRY_SKEW_R<r>": "r = 0..100: Turkey with probability r%, else uniform over 204 names",
}

_FAMILY_RE = re.compile(r"COUNTRY_SKEW_R(\d{1,3})")


def _normalise(name: str) -> str:
    return name.strip().upper().replace("-", "_")


def _factory(name: str) -> Callable[..., Dataset]:
    n = _normalise(name)
    if n in _REGISTRY:
        return _REGISTRY[n]
    m = _FAMILY_RE.fullmatch(n)
    if m and 0 <= int(m.group(1)) <= 100:
        return _country_skew(int(m.group(1)))
    raise ValueError(
        f"unknown dataset {name!r}; known: {', '.join(DATASETS)} "
        f"(and the family COUNTRY_SKEW_R<r> for r in 0..100)"
    )


def dataset_params(name: str) -> dict[str, inspect.Parameter]:
    """The keyword parameters ``get_dataset(name, ...)`` accepts, with their defaults."""
    return {
        p.name: p
        for p in inspect.signature(_factory(name)).parameters.values()
        if p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD) and p.name != "self"
    }


def get_dataset(name: str, **params) -> Dataset:
    """The dataset ``name`` with ``params``.

    Raises ValueError listing the names for an unknown dataset, TypeError naming an unknown
    parameter, ValueError for a bad parameter value. Files of user-supplied datasets are checked
    when their records are read (``DatasetFileMissing``), so a dataset can be listed without them.
    """
    factory = _factory(name)
    accepted = dataset_params(name)
    unknown = sorted(set(params) - set(accepted))
    if unknown:
        raise TypeError(
            f"dataset {_normalise(name)}: unknown parameter(s) {', '.join(unknown)}; "
            f"accepted: {', '.join(accepted) or '(none)'}"
        )
    return factory(**params)
