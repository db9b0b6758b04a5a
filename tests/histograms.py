"""HDR histograms of given latencies, made in Python the way a worker task records them in the JVM
(WorkerTask.java: each value clamped to `bench.latency`'s range)."""

from __future__ import annotations

import numpy as np

from bench import latency


def histogram(latencies_us) -> object:
    """A `bench.latency` histogram holding `latencies_us` (µs, any int array-like)."""
    h = latency.new_histogram()
    values = np.clip(np.asarray(latencies_us, dtype=np.int64), latency.LOWEST_US, latency.HIGHEST_US)
    for value, count in zip(*np.unique(values, return_counts=True)):
        h.record_value(int(value), int(count))
    return h
