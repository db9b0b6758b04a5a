"""The SparkSession of the topology: master, Kafka connector jars, RocksDB state store, Python env.

Nothing here assumes local mode: `master` may be `local[*]`, `local-cluster[N,C,M]`, `spark://...`,
`yarn`, `k8s://...`. The environment variables are only defaults for a driver on this machine.
"""

from __future__ import annotations

import os
import sys
from contextlib import contextmanager
from pathlib import Path
from subprocess import PIPE, STDOUT

from bench.logs import JVM_OUTPUT
from bench.stack import connector
from bench.topology import jvm_stage

ROCKSDB_PROVIDER = "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"
DRIVER_MEMORY = "4g"
DRIVER_JAVA_OPTIONS = f"-XX:+UseParallelGC -Xms{DRIVER_MEMORY}"
"""The driver JVM's collector and its heap's initial size, the maximum (`session_conf`); the Storm
peer's JVM gets the same."""
CLEANER_PERIODIC_GC = "5min"
"""How often Spark's ContextCleaner asks the driver JVM for a full collection
(`spark.cleaner.periodicGC.interval`, Spark's default 30 min; `session_conf`)."""
FILE_SYSTEM_CHECKPOINT_MANAGER = \
    "org.apache.spark.sql.execution.streaming.checkpointing.FileSystemBasedCheckpointFileManager"
LOCAL_FILE_SYSTEM = "bench.topology.LocalCheckpointFileSystem"
"""Hadoop's `file:` file system for a master on this machine (`local_file_system_conf`)."""


def session_conf(master: str, shuffle_partitions: int, jars: list[Path] | None = None,
                 extra: dict[str, str] | None = None, stage_jars: list[Path] | None = None) -> dict[str, str]:
    """The Spark settings the topology needs, as a plain dict (testable without a JVM): the state
    store's (`state_store_conf`), the query's (`query_conf`), the status store's
    (`status_store_conf`), the Python workers' (`python_worker_conf`), `jars` as `spark.jars`, the local file system of a master on this
    machine (`local_file_system_conf`, with `stage_jars`, the JVM stage's jars), and `extra` last
    (it wins).

    The driver JVM (in local mode also the executor) gets a heap of DRIVER_MEMORY and the parallel
    garbage collector (DRIVER_JAVA_OPTIONS) instead of Spark's 1 GiB and the JVM's default G1:
    a micro-batch allocates its records' rows, Arrow buffers and shuffle blocks and drops them
    at its end, the pattern a throughput collector is made for. Cost-0 SHUFFLE over the perf
    topic, 200,000-record batches, three interleaved runs each (2026-11-26, load average 2.5-3.4):
    68,900 records/s median with both defaults, 72,000 with 4 GiB, 73,100 with the parallel
    collector, 76,200 with both (wall time of the run 70.6 -> 65.8 s).

    The heap starts at its maximum (`-Xms`), as a benchmark's JVM should: otherwise the parallel
    collector grows it for as long as its collections take more than 1 % of the time
    (`GCTimeRatio`), and the heap a run measures depends on how long it has run. In a
    3,000,000-record soak the committed heap grew 1,842 -> 2,409 MiB from the first quarter to the
    last, and Spark's RSS with it, while the heap left by full collections was 169-292 MiB
    (2026-12-02).

    With a fixed 4 GiB heap and little garbage surviving, the old generation fills slowly: a
    real-time soak at 2,000 records/s made no full collection in 25 minutes. Spark's ContextCleaner
    frees shuffle files, broadcasts and accumulators only once the JVM has collected their weak
    references, and asks for a full collection every `spark.cleaner.periodicGC.interval` for
    this case ("long-running applications with large driver JVMs, where there is little memory
    pressure on the driver", Spark's configuration guide). Every CLEANER_PERIODIC_GC instead of 30
    minutes, so a long run's memory reaches its steady state within minutes
    (`bench.observer.resources.steady_start`).
    """
    conf = {
        "spark.master": master,
        "spark.driver.memory": DRIVER_MEMORY,
        "spark.driver.extraJavaOptions": DRIVER_JAVA_OPTIONS,
        "spark.cleaner.periodicGC.interval": CLEANER_PERIODIC_GC,
        **state_store_conf(),
        **query_conf(shuffle_partitions),
        **status_store_conf(),
        **python_worker_conf(),
        **local_file_system_conf(master, stage_jars or []),
    }
    if jars:
        conf["spark.jars"] = ",".join(str(j) for j in jars)
    conf.update(extra or {})
    return conf


def state_store_conf() -> dict[str, str]:
    """The state stores and checkpoints.

    - RocksDB state store: transformWithStateInPandas refuses the default HDFS-backed provider.
      With changelog checkpointing (Spark's recommended setting for stateful queries; an existing
      checkpoint can switch to it): a commit writes the changed rows instead of a RocksDB snapshot.
      That halved the state stores' commit time in the cost-0 pipeline (from 600-750 ms to
      280-380 ms of task time per 200,000-record batch, three stateful stages, A = 2).
    - Checkpoint files written through Hadoop's `FileSystem` API, not `FileContext` (Spark's
      default): without Hadoop's native library, a `FileContext` rename on the local file system
      starts a `readlink` process for its source and its target, and again for their `.crc`
      files (Java Flight Recorder: 784 processes in one cost-0 run). `FileSystem.rename` is
      `File.renameTo`, an atomic rename that replaces the target on POSIX file systems. Spark
      writes every offset, commit and changelog file this way: per 200,000-record batch (A = 1),
      the offset and commit logs fell from 50-90 ms each to 12-24 ms and each state store's
      commit from 35-75 ms to 2-9 ms (2026-11-22). The topology's checkpoints are local
      directories (`TopologyConfig.checkpoint_dir`). On HDFS or an object store `FileContext`
      would be the right choice: there `FileSystem.rename` does not replace a target atomically.
    """
    return {
        "spark.sql.streaming.stateStore.providerClass": ROCKSDB_PROVIDER,
        "spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled": "true",
        "spark.sql.streaming.checkpointFileManagerClass": FILE_SYSTEM_CHECKPOINT_MANAGER,
    }


def local_file_system_conf(master: str, stage_jars: list[Path]) -> dict[str, str]:
    """Checkpoint files without a `chmod` process each, for a master whose JVMs run on this machine
    (`local...`, `local-cluster[...]`); {} for any other master or without `stage_jars`.

    Hadoop's `RawLocalFileSystem` sets the permissions of every file it creates by starting a
    `chmod` process when Hadoop's native library is not loaded (pyspark ships none): every
    offset-log and commit-log entry, every state store's changelog and snapshot file, and their
    `.crc` files, each waited for by the thread that wrote it. `LocalCheckpointFileSystem` (the JVM
    stage's jar) is Hadoop's `LocalFileSystem` setting the same bits through `java.nio`. Hadoop
    loads the class when Spark first opens a `file:` path, before `spark.jars` are loaded, so the
    stage's jars go on the JVMs' class path (`extraClassPath`), which is why the setting needs a
    master on this machine. Measured (2026-11-28, `make bench`'s conditions and the 1 s probe of
    docs/performance.md): the offset and commit logs fell from 11-12 ms each per batch to 1-2 ms.
    """
    if not stage_jars or not master.startswith("local"):
        return {}
    class_path = ":".join(str(jar) for jar in stage_jars)
    return {"spark.hadoop.fs.file.impl": LOCAL_FILE_SYSTEM, "spark.driver.extraClassPath": class_path,
            "spark.executor.extraClassPath": class_path}


STATUS_STORE_RETAINED = 100
"""Finished jobs, stages, SQL executions and DAG graphs the driver's status store keeps (`status_store_conf`)."""


def status_store_conf() -> dict[str, str]:
    """How much of the finished work the driver's status store keeps: the last STATUS_STORE_RETAINED
    jobs, stages, SQL executions and DAG graphs (a stage's tasks, at most 52 here, go with it).

    Spark keeps its status store (the data of the web UI and the status API) with the UI off too,
    and by default keeps 1,000 jobs, 1,000 stages, 1,000 SQL executions and every DAG graph
    (SPARK-25814: a driver that ran out of heap in that store). A micro-batch query runs at least
    one SQL execution, with its jobs, stages and tasks, per batch, so the driver's live heap grew
    with the batches: in a 3,000,000-record soak the heap left by full collections rose 110 -> 358
    MiB over its first 158 batches, and the class histogram then held 114,088 SQLPlanMetric (the
    retained executions' plan metrics) and 753,634 ConcurrentHashMap nodes (2026-12-01). Nothing
    of this project reads finished work from the store (the real-time run reads the active stages
    only); the Spark UI, when a user turns it on, shows the last 100 of each.
    """
    kept = str(STATUS_STORE_RETAINED)
    return {
        "spark.ui.retainedJobs": kept,
        "spark.ui.retainedStages": kept,
        "spark.sql.ui.retainedExecutions": kept,
        "spark.ui.dagGraph.retainedRootRDDs": kept,
    }


def query_conf(shuffle_partitions: int) -> dict[str, str]:
    """The query's planning and execution.

    - `spark.sql.shuffle.partitions` = the aggregator parallelism A: it fixes the state-store
      partition count of every stateful stage at the first run of a checkpoint.
    - Adaptive execution off: it may coalesce the worker stage's partitions and break
      "worker w is exactly one task".
    - Arrow batches to Python workers bounded by their row count only
      (`spark.sql.execution.arrow.maxRecordsPerBatch`, 10,000): with a byte bound (Spark's default,
      `maxBytesPerBatch`), the JVM recomputes the size of the Arrow batch after every row it writes.
      In the splitter stage's `pack` that check cost 0.24-0.43 s per 200,000 tuples on two cores,
      half of the round trip or more (batch micro-benchmark, two A/B pairs, medians of 6 runs).
    """
    return {
        "spark.sql.shuffle.partitions": str(shuffle_partitions),
        "spark.sql.adaptive.enabled": "false",
        "spark.sql.execution.arrow.maxBytesPerBatch": str(2**31 - 1),  # Int.MaxValue: no byte bound
        "spark.sql.session.timeZone": "UTC",
        "spark.ui.showConsoleProgress": "false",
        "spark.ui.enabled": "false",
        "spark.sql.streaming.noDataMicroBatches.enabled": "true",
    }


def python_worker_conf() -> dict[str, str]:
    """The Python workers: this interpreter (`PYSPARK_PYTHON` if set), the driver's PYTHONPATH,
    and PySpark's worker daemon replaced by `bench.topology.daemon`, which imports the workers'
    libraries before it forks them (about 1.1 s of CPU saved per new worker: see that module)."""
    conf = {
        "spark.python.daemon.module": "bench.topology.daemon",
        "spark.pyspark.python": os.environ.get("PYSPARK_PYTHON", sys.executable),
        "spark.executorEnv.PYSPARK_PYTHON": os.environ.get("PYSPARK_PYTHON", sys.executable),
    }
    if os.environ.get("PYTHONPATH"):
        # Executors of a local-cluster start from a fresh environment: hand them the driver's.
        conf["spark.executorEnv.PYTHONPATH"] = os.environ["PYTHONPATH"]
    return conf


def connector_record() -> dict | None:
    """What a run record states about the Kafka connector a session loads (`bench.stack.connector`'s
    record of the cached one: official, or built from which sources); None when none is cached."""
    return connector.cached_record()


def connector_jars() -> list[Path]:
    """Spark's Kafka connector jars from the project's cache (`bench.stack.connector`: the official
    artifact, or the one built from sources)."""
    return list(connector.connector().jars)


def build_session(master: str = "local[*]", shuffle_partitions: int = 10, app_name: str = "stream-groupings-bench",
                  extra: dict[str, str] | None = None):
    """A SparkSession for the topology (getOrCreate: an existing session is reused as is, so tests
    can share one; its shuffle partition count is set per query by `bench.topology.job`). It ships
    (`spark.jars`) the Kafka connector's jars and the JVM stage's with the Java groupings
    (`bench.topology.jvm_stage.jars`, built on first use)."""
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    # deferred: pyspark takes 0.4 s to import; `session_conf` and the perf peers' settings need no JVM
    from pyspark.sql import SparkSession

    stage_jars = jvm_stage.jars()
    conf = session_conf(master, shuffle_partitions, [*connector_jars(), *stage_jars], extra, stage_jars)
    launch_jvm_quietly(conf)
    builder = SparkSession.builder.appName(app_name)
    for key, value in conf.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def launch_jvm_quietly(conf: dict[str, str]) -> bool:
    """Start the Spark JVM with its stdout and stderr on a pipe that `bench.logs.JVM_OUTPUT` drains
    into the current run's `logs/spark.log`, instead of the console (see `bench.logs`).

    Uses pyspark's own `launch_gateway(conf, popen_kwargs)` and hands the gateway to
    `SparkContext._ensure_initialized`, the call a `SparkContext` makes first. Does nothing when
    this process already has a JVM (one per process: a stopped session's JVM is reused as is).
    Returns True if it started the JVM.
    """
    # deferred: pyspark takes 0.4 s to import; `session_conf` and the perf peers' settings need no JVM
    from pyspark import SparkConf, SparkContext
    from pyspark.java_gateway import launch_gateway

    if SparkContext._gateway is not None:
        return False
    spark_conf = SparkConf(loadDefaults=False)
    for key, value in conf.items():
        spark_conf.set(key, value)
    gateway = launch_gateway(spark_conf, popen_kwargs={"stdout": PIPE, "stderr": STDOUT})
    JVM_OUTPUT.attach(gateway.proc.stdout)
    SparkContext._ensure_initialized(gateway=gateway)
    return True


@contextmanager
def session_settings(spark, settings: dict[str, str]):
    """`settings` set on `spark` (a SparkSession) inside the block, the earlier values (or none) back after it."""
    before = {key: spark.conf.get(key, None) for key in settings}
    for key, value in settings.items():
        spark.conf.set(key, value)
    try:
        yield
    finally:
        for key, value in before.items():
            if value is None:
                spark.conf.unset(key)
            else:
                spark.conf.set(key, value)
