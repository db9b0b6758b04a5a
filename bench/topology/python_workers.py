"""The topology's PySpark workers: their libraries kept out of the garbage collector's way.

A reused PySpark worker runs a full `gc.collect()` after every task (`pyspark/daemon.py`, 4.2), and
a full collection walks every container object the process holds. With numpy, pandas, pyarrow and
pyspark.sql imported that is about 73,000 objects and 20-25 ms per task; once DYNAMIC_KEY's
numba-compiled functions are loaded, about 157,000 objects and 60 ms (2026-11-24, this machine
kind). The collection runs after the task has sent its output, but it takes one of the machine's
cores, and the worker takes no task before it ends.

`gc.freeze()` moves every object that exists at its call into a permanent generation that
collections skip; reference counting still frees those objects when they are no longer used, so
what it keeps is at most the cyclic garbage among them. Each Python function of the topology calls
`freeze_after_warm_up` after its first call in a worker process, when its imports are done and its
compiled code is loaded; later collections walk only what was created since.
"""

from __future__ import annotations

import gc

from pyspark import TaskContext

_frozen: set[str] = set()
"""Tags already frozen in this process (a worker process may run several kinds of tasks)."""


def freeze_after_warm_up(tag: str) -> bool:
    """Collect, then freeze the process's objects, once per `tag` per PySpark worker process.

    Does nothing outside a Spark task (the driver, unit tests): the driver's heap is not collected
    after every task. Returns True if this call froze the heap.
    """
    if tag in _frozen or TaskContext.get() is None:
        return False
    _frozen.add(tag)
    gc.collect()
    gc.freeze()
    return True
