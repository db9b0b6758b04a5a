"""What a run holds over time, for a soak: the resident memory of the Python driver and of Spark's
JVMs, the driver JVM's heap, and the size of the run's checkpoint folder, sampled at every observer
tick (metrics.parquet, InfluxDB) beside the batch time and the state store's memory that Spark's
progress gives.

`growth` says whether each stayed flat: the median of the last quarter of a run's ticks in its
steady state against the median of the first quarter (summary.json `resources`); `steady_start`
says when the steady state begins.

Before each sample the driver frees its reference cycles and hands the memory it has freed back to
the system (`release_free_memory`), so that its resident memory, and the JVM's live heap, follow what
it holds rather than what its collector and allocators keep for later.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import gc
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import psutil

from bench.results.ticks import SOAK_COLUMNS

MIB = 1 << 20
RESOURCE_COLUMNS = ("driver_rss_mib", "spark_rss_mib", "spark_heap_committed_mib", "spark_heap_used_mib",
                    "spark_heap_live_mib", "spark_full_gcs", "checkpoint_mib")
"""The tick columns a `ResourceProbe` adds: the driver's (this Python process's) resident memory, that
of Spark's JVM and of every process it started (executors of a local cluster), the driver JVM's heap
as its collector has sized it (committed), as it is filled at the tick (used: live objects and
garbage not yet collected) and as the latest full collection left it (live: what survived the
collection of the whole heap; None before the first), in MiB, the count of the JVM's full
collections so far, and the bytes under the run's checkpoint folder (offset and commit logs, state
store files), in MiB. A JVM's resident memory follows the pages of its heap it has touched, and its
committed heap what its collector has sized (the topology's starts at its maximum,
`bench.topology.session.DRIVER_JAVA_OPTIONS`): a leak shows in the live heap. The live heap also
holds what Spark's `ContextCleaner` frees only once a collection has found its owner unreachable
(the broadcast task binaries, shuffle statuses and accumulators of the batches since the previous
full collection): a full collection and another a few seconds later left 228 and 133 MiB where
single ones had left 399 (soak-mb-8, 2026-12-02)."""
FLAT_GROWTH_PCT = 10.0
"""A series is flat when its last quarter's median is at most this much above its first quarter's, %."""
PEAK_QUANTILE = 0.9
"""A quarter's peak: this quantile of its ticks (one stray tick does not make a peak)."""
LOWEST_IS_THE_MEASURE = {
    "spark_heap_live_mib": "a full collection's leftover also holds what Spark's cleaner had yet to free "
                           "since the one before, so the lowest is the live set",
}
"""Series every tick of which bounds what it measures from above, so that a quarter's lowest tick is
its best figure (`growth`: `lowest_growth_pct`), and why. The live heap: Spark's `ContextCleaner` frees
a batch's broadcasts, shuffle statuses and accumulators only after a collection has found their
owners unreachable, so each full collection also leaves the cleaner's backlog since the previous
one (soak-mb-10, one every 5 minutes: 252-480 MiB after single ones, 225 and 144 MiB after two 20 s
apart, 2026-12-02); a leak raises the lowest too."""


def _malloc_trim() -> Callable[[int], int] | None:
    """glibc's `malloc_trim`, None where the C library has none (musl, macOS)."""
    try:
        return ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6").malloc_trim
    except (OSError, AttributeError):
        return None


MALLOC_TRIM = _malloc_trim()


def release_free_memory() -> None:
    """Free what this process holds for nothing and return it to the system: a full collection of
    Python's reference cycles, then glibc's `malloc_trim(0)` (the free pages of every arena, not only
    the top of the heap) and Arrow's `release_unused` on its default pool (mimalloc).

    - The collection frees JVM objects too. py4j's `JavaObject` caches the `JavaMember` of each
      method called on it, and each member points back at it: a proxy that was used is freed only
      by Python's cyclic collector, and until then py4j's gateway keeps its JVM object, such as the
      Dataset of each `foreachBatch` call with its plans, RDDs and accumulators. Python collects its
      oldest generation rarely (5 times in a 7-minute run), so the driver JVM's live heap grew over
      a 3,000,000-record soak (254 -> 420 MiB); about 540,000 records into a run, one collection
      (154 Python objects) took the JVM's heap after a full collection from 249 to 143 MiB
      (2026-12-02).
    - A driver frees most of what each batch and tick allocate, but glibc keeps the freed pages of its
      per-thread arenas and of a fragmented heap, so its resident memory kept every peak: in a
      3,000,000-record soak, `malloc_trim` gave back 44 of 346 MiB at once (2026-12-01). The same
      remedy as Dask's workers ("Memory not released back to the OS", Dask's worker memory docs).

    Costs 30-70 ms with the driver's modules loaded (the collection; the trim about 10 ms); safe from
    any thread."""
    gc.collect()
    if MALLOC_TRIM is not None:
        MALLOC_TRIM(0)
    import pyarrow  # deferred: only a run with Spark's Arrow transfers has a pool to trim; cheap once imported

    pyarrow.default_memory_pool().release_unused()


def folder_bytes(folder: Path) -> int:
    """The bytes of every file under `folder` (0 when it does not exist); files that vanish while
    it is read (Spark deletes old state files and logs) are left out."""
    total = 0
    for root, _dirs, files in os.walk(folder):
        for name in files:
            try:
                total += os.stat(os.path.join(root, name)).st_size
            except FileNotFoundError:
                pass
    return total


def tree_rss(pid: int) -> int | None:
    """Resident bytes of process `pid` and of all its descendants; None when `pid` is gone."""
    try:
        root = psutil.Process(pid)
        processes = [root, *root.children(recursive=True)]
    except psutil.NoSuchProcess:
        return None
    total = 0
    for process in processes:
        try:
            total += process.memory_info().rss
        except psutil.NoSuchProcess:
            pass
    return total


@dataclass
class ResourceProbe:
    """One sample per call (the observer's `resources`): RESOURCE_COLUMNS as a dict, after
    `release_free_memory`.

    Args: spark_pid: the Spark JVM's process id (`jvm_pid`), None for none (its column is then None);
        checkpoint_dir: the run's checkpoint folder; heap: a callable giving the JVM's heap
        (committed, used, live) in bytes, live None before the first full collection, and the count
        of full collections (`jvm_heap`), None for none; an error it raises (the JVM gone at the end
        of a run) leaves the four columns None."""

    spark_pid: int | None
    checkpoint_dir: Path
    heap: Callable[[], tuple[int, int, int | None]] | None = None

    def __call__(self) -> dict:
        release_free_memory()
        spark = tree_rss(self.spark_pid) if self.spark_pid is not None else None
        try:
            committed, used, live, full_gcs = self.heap() if self.heap is not None else (None,) * 4
        except Exception:  # Py4J's errors: the gateway closed as the run stops
            committed, used, live, full_gcs = (None,) * 4
        return {
            "driver_rss_mib": round(psutil.Process().memory_info().rss / MIB, 1),
            "spark_rss_mib": None if spark is None else round(spark / MIB, 1),
            "spark_heap_committed_mib": None if committed is None else round(committed / MIB, 1),
            "spark_heap_used_mib": None if used is None else round(used / MIB, 1),
            "spark_heap_live_mib": None if live is None else round(live / MIB, 1),
            "spark_full_gcs": full_gcs,
            "checkpoint_mib": round(folder_bytes(self.checkpoint_dir) / MIB, 2),
        }


def jvm_pid(spark) -> int:
    """The process id of `spark`'s JVM (the driver's; with `local[*]` the executors' too)."""
    return int(spark._jvm.java.lang.ProcessHandle.current().pid())


def jvm_heap(spark):
    """A callable giving `spark`'s driver JVM heap in bytes over Py4J (`java.lang.management`):
    (committed, used) from the MemoryMXBean, live, the heap in use after the latest full
    collection (the sum over the heap's pools of its GcInfo's usage after the collection; None
    before the first), and the count of full collections (None without a full collector). The full
    collector is the one that manages every heap pool: the parallel collector's "PS MarkSweep" (the
    young one, "PS Scavenge", manages eden and the survivors); of several (G1's), the one named
    "Old"."""
    management = spark._jvm.java.lang.management.ManagementFactory
    bean = management.getMemoryMXBean()
    pools = [pool.getName() for pool in management.getMemoryPoolMXBeans() if pool.getType().name() == "HEAP"]
    full = _full_collector(list(management.getGarbageCollectorMXBeans()), pools)

    def heap() -> tuple[int, int, int | None, int | None]:
        usage = bean.getHeapMemoryUsage()
        info = full.getLastGcInfo() if full is not None else None
        live = None if info is None else sum(int(info.getMemoryUsageAfterGc().get(pool).getUsed()) for pool in pools)
        full_gcs = None if full is None else int(full.getCollectionCount())
        return int(usage.getCommitted()), int(usage.getUsed()), live, full_gcs

    return heap


def _full_collector(collectors: list, heap_pools: list[str]):
    """Of the JVM's GarbageCollectorMXBeans, the one that collects the whole heap (None if none)."""
    whole = [c for c in collectors if set(heap_pools) <= set(c.getMemoryPoolNames())]
    if len(whole) > 1:
        whole = [c for c in whole if "Old" in c.getName()] or whole
    return whole[0] if whole else None


FULL_COLLECTIONS_BEFORE_STEADY = 2
"""The Spark JVM's full collections during a run before its steady state (`steady_start`). Left to
itself the parallel collector makes its first when the old generation is full, and the JVM's
resident memory stops growing there (soak-mb-9: 2,102 -> 4,818 MiB up to its first at 347 s, then
4,818-4,830 MiB). Spark's cleaner asks for one every 5 minutes
(`bench.topology.session.CLEANER_PERIODIC_GC`), which can come before the old generation has ever
been full: soak-mb-10's first came at 266 s with the RSS at 3,864 MiB, its second at 552 s at
4,863, and 4,863-4,905 MiB followed to the end (2026-12-02). By the second, the old generation has
refilled once from a collection's bottom."""
ORDINALS = {1: "first", 2: "second", 3: "third"}


def steady_start(metrics: pd.DataFrame, warm_up_s: float) -> tuple[int | None, list[str]]:
    """When a run's steady state begins (epoch ms, None if it never did) and what it waited for.

    The latest of: the first tick plus `warm_up_s`; the first tick after the Spark JVM's
    FULL_COLLECTIONS_BEFORE_STEADY-th full collection since the run began (`spark_full_gcs` that
    many above its first tick's), because until then the parallel collector has not yet used, and
    the system not yet backed, the part of the heap it fills between two collections, so that the
    JVM's resident memory still grows by its first touch; and the first tick
    whose checkpoint is smaller than the tick's before (Spark's maintenance deleting the state
    versions and logs its retention of 100 batches no longer keeps), because until then the
    checkpoint only grows. A column the ticks do not have (a run before it was sampled, a run
    without Spark) is not waited for; a run in which either never happened never reached a steady
    state (soak-rt-5, real-time mode: no full collection in 25 minutes, the old generation filling
    at 0.85 MiB/s)."""
    if metrics.empty or "time_ms" not in metrics:
        return None, []
    ticks = metrics.sort_values("time_ms")
    times = ticks["time_ms"].to_numpy(dtype=np.int64)
    start, waited = int(times[0] + 1000 * warm_up_s), [f"{warm_up_s:g} s"]
    events = []
    if "spark_full_gcs" in ticks and ticks["spark_full_gcs"].notna().any():
        gcs = pd.to_numeric(ticks["spark_full_gcs"], errors="coerce").to_numpy(dtype=float)
        first = gcs[~np.isnan(gcs)][0]
        events.append((f"the Spark JVM's {ORDINALS[FULL_COLLECTIONS_BEFORE_STEADY]} full collection",
                       np.flatnonzero(gcs >= first + FULL_COLLECTIONS_BEFORE_STEADY)))
    if "checkpoint_mib" in ticks and ticks["checkpoint_mib"].notna().any():
        size = pd.to_numeric(ticks["checkpoint_mib"], errors="coerce").to_numpy(dtype=float)
        events.append(("the checkpoint's first deletion", np.flatnonzero(size[1:] < size[:-1]) + 1))
    for what, at in events:
        if not len(at):
            return None, [*waited, what]
        start = max(start, int(times[at[0]]))
        waited.append(what)
    return start, waited


def growth(metrics: pd.DataFrame, warm_up_s: float) -> dict[str, dict]:
    """Per SOAK_COLUMNS column of a run's ticks (metrics.parquet: `time_ms` and the column), from the
    steady state's start (`steady_start`): the medians of the first and the last quarter, the growth
    between them (%), whether it is at most FLAT_GROWTH_PCT (`flat`), the growth of the quarters'
    peaks (PEAK_QUANTILE, %: `peak_growth_pct`), the ticks and the steady state's start in s after
    the first tick (`from_s`). A column with fewer than 8 such ticks, or none of its values, is left
    out; so is every column of a run that never reached a steady state.

    The peaks tell a saw-tooth from growth. A series that rises and falls in cycles of several
    ticks (RocksDB's SST files between compactions, the heap in use between collections) has
    quarters' medians that depend on where in its cycle each quarter falls (soak-rt-7's SST files:
    5.2, 8.0, 10.8, 13.7 MB, over and over, and quarters' medians 8.0 and 9.4 MB), while its peaks
    stay where they were (13.7 MB in every quarter); a leak raises the peaks too. A series of
    LOWEST_IS_THE_MEASURE also has the growth of its quarters' lowest ticks (`lowest_growth_pct`)."""
    start, _waited = steady_start(metrics, warm_up_s)
    if start is None:
        return {}
    after = metrics[metrics["time_ms"] >= start]
    from_s = round((start - int(metrics["time_ms"].min())) / 1000.0, 1)
    out = {}
    for column in SOAK_COLUMNS:
        if column not in after:
            continue
        values = pd.to_numeric(after[column], errors="coerce").dropna().to_numpy(dtype=float)
        if len(values) < 8:
            continue
        quarter = len(values) // 4
        first, last = float(np.median(values[:quarter])), float(np.median(values[-quarter:]))
        pct = None if first <= 0 else round(100.0 * (last / first - 1.0), 1)
        flat = last <= first if pct is None else pct <= FLAT_GROWTH_PCT  # from 0, only 0 is flat
        first_peak, last_peak = (float(np.quantile(q, PEAK_QUANTILE)) for q in (values[:quarter], values[-quarter:]))
        out[column] = {"first_quarter": round(first, 2), "last_quarter": round(last, 2), "growth_pct": pct,
                       "flat": flat, "peak_growth_pct": None if first_peak <= 0 else
                       round(100.0 * (last_peak / first_peak - 1.0), 1),
                       "ticks": len(values), "from_s": from_s}
        if column in LOWEST_IS_THE_MEASURE:
            first_low, last_low = float(values[:quarter].min()), float(values[-quarter:].min())
            out[column]["lowest_growth_pct"] = None if first_low <= 0 else round(100.0 * (last_low / first_low - 1.0), 1)
    return out


LABELS = {"driver_rss_mib": ("driver RSS", "MiB"), "spark_rss_mib": ("Spark RSS", "MiB"),
          "spark_heap_committed_mib": ("Spark heap committed", "MiB"),
          "spark_heap_used_mib": ("Spark heap used", "MiB"), "spark_heap_live_mib": ("Spark heap live", "MiB"),
          "checkpoint_mib": ("checkpoint", "MiB"),
          "state_memory_bytes": ("state store memory", "bytes"),
          "state_sst_bytes": ("state store SST files", "bytes"), "batch_duration_ms": ("batch time", "ms"),
          "batch_us_per_row": ("batch time per row", "µs")}


GROWTH_EXPLAINED = (
    ("state_memory_bytes", "state_sst_bytes",
     "the state store's memory over SST files that did not grow: RocksDB's memtables and block caches, not state"),
    ("batch_duration_ms", "batch_us_per_row",
     "the batch time over a time per row that did not grow: batches that held more rows, each row no dearer"),
)
"""(series, its reference, what `describe_growth` says when the series grew and its reference did not:
neither its median nor its peaks, `steady`)."""


def steady(g: dict) -> bool:
    """A series of `growth` that did not grow: flat, a saw-tooth whose peaks grew at most
    FLAT_GROWTH_PCT, or a series of LOWEST_IS_THE_MEASURE whose lowest did not grow (`lowest_flat`)."""
    return g["flat"] or sawtooth(g) or lowest_flat(g)


def lowest_flat(g: dict) -> bool:
    """A series of `growth` whose quarters' medians grew more than FLAT_GROWTH_PCT and whose lowest
    ticks, its measure (LOWEST_IS_THE_MEASURE), did not."""
    lowest = g.get("lowest_growth_pct")
    return not g["flat"] and lowest is not None and lowest <= FLAT_GROWTH_PCT


def sawtooth(g: dict) -> bool:
    """A series of `growth` whose quarters' medians grew more than FLAT_GROWTH_PCT and whose peaks did not."""
    peak = g.get("peak_growth_pct")
    return not g["flat"] and peak is not None and peak <= FLAT_GROWTH_PCT


def describe_growth(resources: dict[str, dict]) -> str | None:
    """One line of a run's `growth` figures (None without any): each series' first-quarter and
    last-quarter medians and its growth, and which are not flat; which of those went up and down with
    peaks that did not grow (`sawtooth`), or whose lowest ticks, their measure, did not
    (`lowest_flat`); a state store memory that grew over SST files that did not (`steady`) is said
    to be memory that is not state (Spark's figure for RocksDB is its memtables, block cache and
    table readers), and a batch time that grew while the time per row did not, batches that held
    more rows."""
    if not resources:
        return None
    parts, grown = [], []
    for column, g in resources.items():
        label, unit = LABELS[column]
        pct = "n/a" if g["growth_pct"] is None else f"{g['growth_pct']:+.1f} %"
        parts.append(f"{label} {g['first_quarter']:,.1f} -> {g['last_quarter']:,.1f} {unit} ({pct})")
        if not g["flat"]:
            grown.append(label)
    ticks = max(g["ticks"] for g in resources.values())
    from_s = max(g.get("from_s", 0.0) for g in resources.values())
    verdict = f"grew more than {FLAT_GROWTH_PCT:g} %: {', '.join(grown)}" if grown else "all flat"
    sawteeth = [LABELS[column][0] for column, g in resources.items() if sawtooth(g)]
    whys = [f"{', '.join(sawteeth)}: up and down, their peaks did not grow"] if sawteeth else []
    whys += [f"{LABELS[column][0]}: its lowest did not grow ({LOWEST_IS_THE_MEASURE[column]})"
             for column, g in resources.items() if not sawtooth(g) and lowest_flat(g)]
    whys += [why for grew, stayed, why in GROWTH_EXPLAINED if grew in resources and stayed in resources
             and not steady(resources[grew]) and steady(resources[stayed])]
    if whys:
        verdict += f" ({'; '.join(whys)})"
    return (f"resources in the steady state (from {from_s:,.0f} s), first to last quarter of {ticks} ticks: "
            f"{'; '.join(parts)}; {verdict}")
