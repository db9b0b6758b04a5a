"""PySpark's worker daemon, started with the topology's libraries already imported.

Spark starts one daemon per executor (`pyspark.daemon`) and forks a Python worker from it for each
task slot that needs one; a worker imports its libraries on its first task. A worker lives as long
as it is busy: one idle for a minute is stopped (`PythonWorkerFactory`'s idle timeout), and a new
query's tasks often start new ones. Each new worker of this topology imported numpy, pandas,
pyarrow, pyspark's Arrow serializers, numba and the groupings, about 0.8 s of CPU, and spent 0.3 s
more on the first numba-compiled routing loop it called (2026-11-25); a query at W = S = A = 10
starts 10-20 of them, which made 5-13 s batches at the start of every run (and of every
`make capacity` step) on two cores.

`spark.python.daemon.module = bench.topology.daemon` (set by `bench.topology.session`) runs this
module instead: it imports those libraries and loads the groupings' compiled loops once, then runs
pyspark's own daemon loop, so every forked worker starts with them in memory (copy-on-write), frozen
out of the garbage collector's way (`bench.topology.python_workers`).

Fork safety: pyspark's daemon imports the worker module only after the fork because a library
that starts a thread on import would leave the child with locks held by a thread that does not
exist there. This module checks, after its imports, that the process still has exactly one OS
thread; if not, it replaces itself (`os.execv`, same stdin/stdout, so the JVM sees nothing) with
pyspark's plain daemon, and the workers import their libraries as before.
"""

from __future__ import annotations

import gc
import importlib
import os
import sys

from pyspark.daemon import manager

PRELOADED = ("numpy", "pandas", "pyarrow", "pyspark.sql.pandas.serializers", "pyspark.worker",
             "numba", "groupings", "bench.topology.grouping_stage")
"""Modules a worker of the topology imports on its first task."""

SINGLE_THREADED = {"OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
                   "JE_ARROW_MALLOC_CONF": "background_thread:false"}
"""Set (unless already set) before the imports: numpy's OpenBLAS starts its thread pool on import,
and pyarrow's jemalloc a background purging thread. A worker runs one task at a time and ten of them
share two cores, so neither pool buys anything here."""


def os_threads() -> int:
    """OS threads of this process (Linux `/proc/self/task`; 1 where that is not available)."""
    try:
        return len(os.listdir("/proc/self/task"))
    except OSError:
        return 1


def preload(modules=PRELOADED) -> list[str]:
    """Import `modules` (a missing optional one, e.g. numba, is skipped), then freeze the heap.
    Returns the modules imported."""
    done = []
    for name in modules:
        try:
            importlib.import_module(name)
        except ImportError:
            continue
        done.append(name)
    if "groupings" in done:
        warm_groupings()
    gc.collect()
    gc.freeze()
    return done


def warm_groupings() -> None:
    """Route four tuples through every grouping, so that numba's compiled loops are loaded (from
    its disk cache) before the fork: the first compiled loop a process calls costs about 0.3 s of
    CPU (numba's dispatcher and LLVM set up), the others a few ms. An error here is left to the
    worker that routes for real (it raises it in its task)."""
    # deferred: imported by `preload`, after `main` set SINGLE_THREADED (numpy starts OpenBLAS's pool on import)
    import numpy as np
    from groupings import GROUPINGS, create_grouping

    keys, now = np.array(["a", "b", "c", "a"], dtype=object), np.arange(4, dtype=np.int64)
    for name in GROUPINGS:
        try:
            create_grouping(name, 2, start_ms=0).route(keys, now)
        except Exception:  # noqa: BLE001 - see the docstring
            pass


def main() -> None:
    for name, value in SINGLE_THREADED.items():
        os.environ.setdefault(name, value)
    preload()
    if os_threads() != 1:
        # A library started a thread: forking now is unsafe. Start pyspark's daemon afresh.
        os.execv(sys.executable, [sys.executable, "-m", "pyspark.daemon", *sys.argv[1:]])
    manager()


if __name__ == "__main__":
    main()
