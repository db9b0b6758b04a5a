"""Processing latency in HDR histograms: per tuple, from its Kafka timestamp (the producer's intended
send time, so a late producer or a backlog shows as latency: no coordinated omission) to the moment
its worker finished it.

Recorded in the JVM by each worker task (`bench.topology.worker`, WorkerTask.java, HdrHistogram's Java
original), sent to the driver as an encoded histogram per worker and batch (HdrHistogram's compressed
base64 form, which the `hdrhistogram` package reads), merged per observer tick and per run
(`bench.observer.observer`). Values are whole
microseconds from 1 µs to one day, 3 significant digits: a reported percentile is the highest value
equivalent to the exact one, at most 0.1 % above it (HdrHistogram's guarantee).
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
from hdrh.histogram import HdrHistogram

LOWEST_US = 1
HIGHEST_US = 24 * 3600 * 1_000_000
SIGNIFICANT_DIGITS = 3
PERCENTILES = (("p50", 50.0), ("p99", 99.0), ("p999", 99.9))


def new_histogram() -> HdrHistogram:
    return HdrHistogram(LOWEST_US, HIGHEST_US, SIGNIFICANT_DIGITS)


def encode(histogram: HdrHistogram) -> str:
    return histogram.encode().decode("ascii")


def merge(encoded: Iterable[str], into: HdrHistogram | None = None) -> HdrHistogram:
    """One histogram holding every encoded histogram of `encoded` (added to `into` if given)."""
    out = new_histogram() if into is None else into
    for text in encoded:
        if text:
            out.decode_and_add(text)
    return out


def figures_ms(histogram: HdrHistogram, prefix: str = "latency") -> dict:
    """`<prefix>_p50_ms`, `_p99_ms`, `_p999_ms`, `_max_ms` (float ms) and `<prefix>_tuples`; the
    percentiles are None for an empty histogram."""
    n = int(histogram.get_total_count())
    out: dict = {f"{prefix}_{name}_ms": (histogram.get_value_at_percentile(q) / 1000.0 if n else None)
                 for name, q in PERCENTILES}
    out[f"{prefix}_max_ms"] = histogram.get_max_value() / 1000.0 if n else None
    out[f"{prefix}_tuples"] = n
    return out


def exact_percentile(values: np.ndarray, q: float) -> float:
    """The value HdrHistogram's percentile rule picks from the exact values (rank
    `max(1, round(q / 100 * n))` of the sorted values), for checking a merged histogram."""
    ordered = np.sort(np.asarray(values))
    rank = max(1, int(q / 100.0 * ordered.size + 0.5))
    return float(ordered[min(rank, ordered.size) - 1])
