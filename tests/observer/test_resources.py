"""A soak's figures (bench/observer/resources.py): the memory of the driver and of Spark's processes,
the checkpoint's size, and whether each stayed flat after the warm-up."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pandas as pd
import psutil

from bench.observer.resources import (FLAT_GROWTH_PCT, MALLOC_TRIM, ResourceProbe, describe_growth, folder_bytes,
                                     growth, jvm_heap, release_free_memory, steady_start, tree_rss)


def test_folder_bytes_sums_every_file_below_and_a_missing_folder_is_empty(tmp_path):
    (tmp_path / "state" / "0").mkdir(parents=True)
    (tmp_path / "offsets").mkdir()
    (tmp_path / "state" / "0" / "1.delta").write_bytes(b"x" * 1000)
    (tmp_path / "offsets" / "0").write_bytes(b"y" * 24)
    assert folder_bytes(tmp_path) == 1024
    assert folder_bytes(tmp_path / "absent") == 0


def test_tree_rss_counts_the_children_and_none_for_a_process_that_is_gone():
    child = subprocess.Popen([sys.executable, "-c", "import time; b = bytearray(64 << 20); b[::4096] = bytes([1]) * 16384; print(flush=True); "
                              "time.sleep(30)"], stdout=subprocess.PIPE)
    try:
        child.stdout.readline()  # its 64 MiB are allocated, every page written
        assert tree_rss(os.getpid()) >= psutil.Process().memory_info().rss + (64 << 20)
    finally:
        child.kill()
        child.wait()
    assert tree_rss(child.pid) is None


def test_freed_memory_goes_back_to_the_system_before_a_sample():
    """60 MiB of 600-byte objects (above pymalloc's 512, so glibc's) freed but for the last, which
    pins the heap's top: glibc keeps the pages until `release_free_memory` trims them."""
    assert MALLOC_TRIM is not None, "this Linux's C library has no malloc_trim"
    process = psutil.Process()
    blocks = [bytes(600) for _ in range(100_000)]
    last = blocks[-1]
    del blocks
    kept = process.memory_info().rss
    release_free_memory()
    assert process.memory_info().rss < kept - (20 << 20), (kept >> 20, process.memory_info().rss >> 20)
    assert len(last) == 600


def test_the_probe_samples_the_driver_and_the_checkpoint(tmp_path):
    (tmp_path / "commits").mkdir()
    (tmp_path / "commits" / "0").write_bytes(b"z" * (3 << 20))
    sample = ResourceProbe(None, tmp_path)()
    assert sample["driver_rss_mib"] > 10 and sample["spark_rss_mib"] is None and sample["checkpoint_mib"] == 3.0
    assert sample["spark_heap_committed_mib"] is None and sample["spark_heap_used_mib"] is None
    assert sample["spark_heap_live_mib"] is None and sample["spark_full_gcs"] is None
    sample = ResourceProbe(os.getpid(), tmp_path, lambda: (512 << 20, 100 << 20, 40 << 20, 3))()
    assert sample["spark_rss_mib"] > 10 and (sample["spark_heap_committed_mib"], sample["spark_heap_used_mib"]) == (512, 100)
    assert (sample["spark_heap_live_mib"], sample["spark_full_gcs"]) == (40, 3)


def test_a_heap_probe_that_fails_leaves_its_columns_empty(tmp_path):
    def gone():
        raise ConnectionError("the gateway closed")

    sample = ResourceProbe(None, tmp_path, gone)()
    assert sample["spark_heap_committed_mib"] is None and sample["driver_rss_mib"] > 10


def test_the_heap_probe_reads_the_live_heap_after_a_full_collection(spark):
    """The session's JVM (the parallel collector): committed and used at once, live once a full
    collection ran (System.gc() is one, "PS MarkSweep"), never above the committed heap."""
    heap = jvm_heap(spark)
    before = heap()[3]
    spark._jvm.java.lang.System.gc()
    committed, used, live, full_gcs = heap()
    assert committed >= used > 0 and live is not None and 0 < live <= committed, (committed, used, live)
    assert full_gcs > before


def ticks(values: dict[str, list[float]], every_s: float = 10.0) -> pd.DataFrame:
    n = len(next(iter(values.values())))
    return pd.DataFrame({"time_ms": (np.arange(n) * every_s * 1000).astype(int), **values})


def test_growth_compares_the_first_and_the_last_quarter_of_the_steady_state():
    flat = [500.0] * 3 + [100.0, 101.0, 99.0, 100.0, 102.0, 100.0, 101.0, 100.0]  # 3 warm-up ticks, then flat
    leak = [100.0 + 10 * i for i in range(11)]
    checkpoint = [1.0, 2.0, 3.0, 2.0] + [2.5, 2.0] * 3 + [2.5]  # fills, then Spark's maintenance deletes
    g = growth(ticks({"spark_rss_mib": flat, "driver_rss_mib": leak, "checkpoint_mib": checkpoint}), warm_up_s=0)
    assert g["spark_rss_mib"]["ticks"] == 8 and g["spark_rss_mib"]["flat"] and g["spark_rss_mib"]["from_s"] == 30.0
    assert g["spark_rss_mib"]["first_quarter"] == 100.5 and g["spark_rss_mib"]["last_quarter"] == 100.5
    assert g["driver_rss_mib"] == {"first_quarter": 135.0, "last_quarter": 195.0, "growth_pct": 44.4, "flat": False,
                                   "peak_growth_pct": 43.2, "ticks": 8, "from_s": 30.0}
    assert g["checkpoint_mib"]["growth_pct"] == 0.0
    line = describe_growth(g)
    assert line.startswith("resources in the steady state (from 30 s), first to last quarter of 8 ticks")
    assert f"grew more than {FLAT_GROWTH_PCT:g} %: driver RSS" in line and "Spark RSS 100.5 -> 100.5 MiB (+0.0 %)" in line


def test_the_steady_state_waits_for_the_warm_up_the_second_full_collection_and_the_first_deletion():
    base = {"checkpoint_mib": [1.0, 2.0, 1.5, 2.0, 2.5, 2.0, 2.5, 2.0], "spark_full_gcs": [4, 4, 4, 4, 5, 5, 6, 6]}
    assert steady_start(ticks(base), warm_up_s=0) == (60_000, ["0 s", "the Spark JVM's second full collection",
                                                                "the checkpoint's first deletion"])
    assert steady_start(ticks(base), warm_up_s=65)[0] == 65_000
    assert steady_start(ticks({**base, "spark_full_gcs": [4] * 6 + [5] * 2}), warm_up_s=0)[0] is None  # one only
    assert growth(ticks({**base, "checkpoint_mib": [float(i) for i in range(8)]}), warm_up_s=0) == {}  # no deletion
    assert steady_start(ticks({"spark_rss_mib": [1.0] * 8}), warm_up_s=20)[0] == 20_000  # nothing else to wait for


def test_a_series_that_stays_at_zero_is_flat_and_one_that_leaves_it_is_not():
    g = growth(ticks({"state_memory_bytes": [0.0] * 12, "spark_rss_mib": [0.0] * 6 + [5.0] * 6}), warm_up_s=0)
    assert g["state_memory_bytes"]["flat"] and g["state_memory_bytes"]["growth_pct"] is None
    assert not g["spark_rss_mib"]["flat"]


def test_state_memory_that_grows_over_flat_sst_files_is_said_to_be_no_state():
    grows, flat = [10.0 * (i + 1) for i in range(12)], [5.0] * 12
    assert "not state" in describe_growth(growth(ticks({"state_memory_bytes": grows, "state_sst_bytes": flat}), 0))
    assert "not state" not in describe_growth(growth(ticks({"state_memory_bytes": grows, "state_sst_bytes": grows}), 0))
    assert "not state" not in describe_growth(growth(ticks({"state_memory_bytes": grows}), 0))


def test_a_batch_time_that_grows_over_a_flat_time_per_row_is_said_to_be_fuller_batches():
    grows, flat = [1000.0 * (i + 1) for i in range(12)], [660.0] * 12
    line = describe_growth(growth(ticks({"batch_duration_ms": grows, "batch_us_per_row": flat}), 0))
    assert "grew more than 10 %: batch time (" in line and "held more rows" in line
    assert "held more rows" not in describe_growth(growth(ticks({"batch_duration_ms": grows, "batch_us_per_row": grows}), 0))


def test_too_few_ticks_or_no_samples_give_no_figure():
    assert growth(ticks({"spark_rss_mib": [1.0] * 7}), warm_up_s=0) == {}
    assert growth(ticks({"spark_rss_mib": [None] * 20}), warm_up_s=0) == {}
    assert growth(pd.DataFrame(), warm_up_s=0) == {}
    assert describe_growth({}) is None


def test_a_jvm_object_pinned_by_a_python_cycle_is_freed_before_a_sample(spark):
    """A py4j proxy on which a method was called sits in a cycle with the member it cached: until
    Python's cyclic collector runs, py4j's gateway keeps the JVM object (a `foreachBatch`'s Dataset
    with its plans), and `release_free_memory` runs that collector. py4j tells the JVM from its
    finalizer thread, which looks for work about once a second."""
    import gc
    import time

    jvm = spark.sparkContext._jvm

    def freed_within(seconds: float) -> bool:
        deadline = time.monotonic() + seconds
        while True:
            jvm.java.lang.System.gc()
            if reference.refersTo(None) or time.monotonic() > deadline:
                return reference.refersTo(None)
            time.sleep(0.2)

    gc.disable()  # Python's own collections would free it at a moment of their choosing
    try:
        target = jvm.java.util.ArrayList()
        target.add(1)  # caches the member `add`, which points back at the proxy
        reference = jvm.java.lang.ref.WeakReference(target)
        del target
        assert not freed_within(3.0), "only the proxy's cycle holds the JVM object, and nothing collected it"
        release_free_memory()
        assert freed_within(30.0)
    finally:
        gc.enable()


def test_a_saw_tooth_whose_peaks_stay_is_told_from_growth():
    # soak-rt-7's SST files between compactions: four levels of 3 ticks each, over and over. The
    # quarters' medians depend on where each quarter falls in the cycle; the peaks do not.
    cycle = [5.2] * 3 + [8.0] * 3 + [10.8] * 3 + [13.7] * 3
    sst = cycle * 4 + [13.7] * 3 + [5.2] * 3 + [8.0] * 3 + [10.8] * 3  # 60 ticks, last quarter off-phase
    g = growth(ticks({"state_sst_bytes": sst, "state_memory_bytes": [60.0 + i for i in range(60)]}), 0)
    assert not g["state_sst_bytes"]["flat"] and g["state_sst_bytes"]["peak_growth_pct"] == 0.0
    line = describe_growth(g)
    assert "(state store SST files: up and down, their peaks did not grow; " in line
    assert "not state" in line  # the memory grew over SST files that did not
    # a leak raises the peaks too: no saw-tooth, and no memory explained by it
    leak = growth(ticks({"state_sst_bytes": [v + i for i, v in enumerate(sst)],
                         "state_memory_bytes": [60.0 + i for i in range(60)]}), 0)
    assert leak["state_sst_bytes"]["peak_growth_pct"] > 10
    assert "peaks did not grow" not in describe_growth(leak) and "not state" not in describe_growth(leak)


def test_a_live_heap_whose_lowest_stays_is_told_from_growth():
    # soak-mb-10's live heap: each full collection (every 5 minutes) left the cleaner's backlog too,
    # 252-480 MiB; two collections 20 s apart left 225 and 144 MiB. Ticks hold the latest leftover.
    live = [330.0] * 14 + [480.0, 225.0] * 1 + [225.0] * 13 + [252.0] * 15 + [380.0] * 28 + [144.0] * 14 + [410.0] * 14
    g = growth(ticks({"spark_heap_live_mib": live}), 0)["spark_heap_live_mib"]
    assert not g["flat"] and g["peak_growth_pct"] > 10 and g["lowest_growth_pct"] < 0
    line = describe_growth({"spark_heap_live_mib": g})
    assert "(Spark heap live: its lowest did not grow (a full collection's leftover also holds" in line
    # a leak raises the lowest too; other series have no lowest figure
    leak = growth(ticks({"spark_heap_live_mib": [100.0 + 5 * i for i in range(100)],
                         "spark_rss_mib": [100.0 + 5 * i for i in range(100)]}), 0)
    assert leak["spark_heap_live_mib"]["lowest_growth_pct"] > 10 and "lowest_growth_pct" not in leak["spark_rss_mib"]
    assert "lowest did not grow" not in describe_growth(leak)
