"""The topology's PySpark daemon (`bench.topology.daemon`): workers forked with their libraries
imported, from a process that has a single thread when it forks."""

from __future__ import annotations

import os
import subprocess
import sys

from bench.topology import daemon


def test_the_preloaded_daemon_has_one_os_thread_when_it_would_fork():
    code = ("import os\n"
            "from bench.topology import daemon\n"
            "for k, v in daemon.SINGLE_THREADED.items(): os.environ.setdefault(k, v)\n"
            "print(len(daemon.preload()), daemon.os_threads())\n")
    env = {k: v for k, v in os.environ.items() if k not in daemon.SINGLE_THREADED}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)
    assert out.returncode == 0, out.stderr
    imported, threads = map(int, out.stdout.split())
    assert imported == len(daemon.PRELOADED)
    assert threads == 1


def test_spark_tasks_run_in_workers_forked_from_the_preloaded_daemon(spark):
    def probe(_):
        import sys

        main = sys.modules["__main__"]
        yield (getattr(main, "__file__", ""), "pandas" in sys.modules, "groupings" in sys.modules)

    [(daemon_file, has_pandas, has_groupings)] = spark.sparkContext.parallelize([0], 1).mapPartitions(probe).collect()
    assert daemon_file.endswith("bench/topology/daemon.py")
    assert has_pandas and has_groupings
