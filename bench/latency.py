"""Processing latency in HDR histograms: per tuple, from its Kafka timestamp (the producer's intended
send time, so a late producer or a backlog shows as latency: no coordinated omission) to the moment
its worker finished it.

Recorded by each worker task per chunk of tuples (`bench.topology.worker`), sent to the driver as an
encoded histogram (HdrHistogram's compressed base64 form, the `hdrhistogram` package), merged per
worker and batch, per observer tick and per run (`bench.observer.observer`). Values are whole
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
_SUB_BUCKET_MAGNITUDE = 11
"""log2 of HdrHistogram's sub-bucket count for 3 significant digits and a lowest value of 1
(2 * 10**3 values at unit resolution -> 2048 sub-buckets)."""

PERCENTILES = (("p50", 50.0), ("p99", 99.0), ("p999", 99.9))


def new_histogram() -> HdrHistogram:
    return HdrHistogram(LOWEST_US, HIGHEST_US, SIGNIFICANT_DIGITS)


def lowest_equivalent_us(values: np.ndarray) -> np.ndarray:
    """Vectorised `HdrHistogram.get_lowest_equivalent_value` for this module's histograms: each value
    rounded down to the first value of its HDR bucket (values >= 1). Recording the rounded values
    gives the very histogram that recording the values would, with far fewer calls."""
    values = np.asarray(values, dtype=np.int64)
    bits = np.floor(np.log2(np.maximum(values, 1))).astype(np.int64) + 1  # bit length
    shift = np.maximum(bits - _SUB_BUCKET_MAGNITUDE, 0)
    return (values >> shift) << shift


def record(histogram: HdrHistogram, latencies_us: np.ndarray) -> int:
    """Record latencies (µs) into `histogram`, clamped to [LOWEST_US, HIGHEST_US] (a tuple processed
    in the same microsecond as its timestamp counts as 1 µs). Returns how many were recorded."""
    values = np.clip(np.asarray(latencies_us, dtype=np.int64), LOWEST_US, HIGHEST_US)
    if not values.size:
        return 0
    distinct, counts = np.unique(lowest_equivalent_us(values), return_counts=True)
    for value, count in zip(distinct.tolist(), counts.tolist()):
        histogram.record_value(value, count)
    return int(values.size)


def processed_at_us(start_ns: int, end_ns: int, tuples: int) -> np.ndarray:
    """When each of `tuples` tuples handled in one call from `start_ns` to `end_ns` (epoch ns) was
    done, in epoch µs: tuple i after i + 1 equal shares of the call (the simulated cost is a sleep
    of the same length per tuple, taken in one call per chunk)."""
    share = (end_ns - start_ns) / max(tuples, 1)
    return ((start_ns + share * np.arange(1, tuples + 1)) // 1000).astype(np.int64)


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
