"""A quiet console: Spark, PySpark worker and Kafka client logs go to `results/<run_id>/logs/`.

Two sources write to the console unless they are routed:
- the Spark JVM: its log4j output and every line its Python workers print (PySpark 4.2's
  TransformWithStateInPandas driver worker prints "Streaming TransformWithStateInPandas Python
  worker Starting execution of UDF ..." on every query start). PySpark starts the JVM with the
  driver's stdout and stderr, and the JVM copies its Python workers' output to its own stderr.
  `build_session` therefore starts the JVM itself (`pyspark.java_gateway.launch_gateway`, whose
  `popen_kwargs` pyspark provides for this) with both streams on one pipe; `JVM_OUTPUT` reads that
  pipe on a daemon thread and writes each line to the current run's `logs/spark.log`.
- librdkafka (confluent-kafka): its clients log to a Python logger when given one (`KAFKA_LOGGER`,
  passed by every client of a run) and to the process's stderr otherwise. `RunLogs` puts a file
  handler (`logs/driver.log`) on the loggers of the run's driver side, so nothing of theirs reaches
  Python's last-resort console handler. While a broker is down librdkafka repeats "Connection
  refused" every few hundred ms; `KafkaOutage` turns that into two console lines (unreachable,
  reachable again after N s).

The console keeps the progress bars, the warnings the harness itself prints for the user, and the
result table; `RunLogs.summary()` counts what went to the files, for the run's summary.
"""

from __future__ import annotations

import logging
import socket
import threading
import time
from collections.abc import Callable
from collections import Counter, deque
from pathlib import Path

KAFKA_LOGGER = logging.getLogger("bench.kafka")
"""The logger every confluent-kafka client of a run is given (`logger=`)."""

DRIVER_LOGGERS = ("bench", "producers", "py4j", "influxdb_client", "urllib3")
"""Loggers whose records go to `logs/driver.log` during a run instead of the console."""

_OUTAGE_LOGGERS = (KAFKA_LOGGER.name, "producers")
"""The loggers of the run's Kafka clients (the harness's and the replay producer's)."""

PYSPARK_WORKER_MARK = "Python worker"


def classify(line: str) -> str:
    """The category a line of the JVM's output is counted under: `pyspark_worker` (lines printed by
    PySpark's Python workers), `error`, `warning` (log4j levels), or `other`."""
    if PYSPARK_WORKER_MARK in line:
        return "pyspark_worker"
    if " ERROR " in line or line.startswith("ERROR"):
        return "error"
    if " WARN " in line or line.startswith("WARN"):
        return "warning"
    return "other"


class JvmOutput:
    """Reads the Spark JVM's merged stdout and stderr and writes each line to the current target file.

    Lines that arrive while no run has a target (the JVM's start-up, between two runs of a run-all)
    are kept (at most `held_lines`) and written to the next target. Thread-safe.
    """

    def __init__(self, held_lines: int = 10_000):
        self._lock = threading.Lock()
        self._target = None  # an open text file
        self._held: deque[str] = deque(maxlen=held_lines)
        self.counts: Counter = Counter()
        self._thread: threading.Thread | None = None

    def attach(self, stream) -> None:
        """Start draining `stream` (a binary pipe) on a daemon thread. The JVM blocks when its pipe
        is full, so the thread reads until the pipe closes."""

        def drain():
            for raw in iter(stream.readline, b""):
                self.write(raw.decode("utf-8", "replace"))

        self._thread = threading.Thread(target=drain, name="spark-jvm-output", daemon=True)
        self._thread.start()

    @property
    def attached(self) -> bool:
        return self._thread is not None

    def write(self, line: str) -> None:
        with self._lock:
            self.counts[classify(line)] += 1
            if self._target is None:
                self._held.append(line)
            else:
                self._target.write(line)
                self._target.flush()

    def open(self, path: Path) -> None:
        """Send the lines to `path` (appended) from now on, the held lines first."""
        path.parent.mkdir(parents=True, exist_ok=True)
        with self._lock:
            if self._target is not None:
                self._target.close()
            self._target = open(path, "a", encoding="utf-8")
            while self._held:
                self._target.write(self._held.popleft())
            self._target.flush()

    def close(self) -> None:
        """Stop writing to the current target; later lines are held for the next one."""
        with self._lock:
            if self._target is not None:
                self._target.close()
                self._target = None

    def snapshot(self) -> Counter:
        with self._lock:
            return Counter(self.counts)


JVM_OUTPUT = JvmOutput()
"""The one JVM of this Python process (pyspark keeps one gateway per process)."""


_UNREACHABLE = ("Connection refused", "ALL_BROKERS_DOWN", "all broker connections are down")
GRACE_S = 10.0
"""After `reachable again`, clients still report the connections that failed during the outage for a
few seconds: not a new outage."""
# librdkafka's log lines reach Python when the client is next polled, so a client idle during an
# outage delivers them long after it: an outage starts only if the broker does not answer now.


class KafkaOutage(logging.Handler):
    """Turns librdkafka's repeated connection errors into two console lines:
    `Kafka at <bootstrap> unreachable, retrying ...` and `... reachable again after N s`.

    While an outage is on, a daemon thread (and `check()`, called by the run's wait loop) tries a
    TCP connection to the bootstrap address every `probe_every_s`.
    """

    def __init__(self, bootstrap_servers: str, console: Callable[[str], None], probe_every_s: float = 1.0):
        super().__init__(logging.WARNING)
        self.bootstrap_servers = bootstrap_servers
        self.console = console
        self.probe_every_s = probe_every_s
        self.since: float | None = None
        self.outages = 0
        self._probed = 0.0
        self._ended = -GRACE_S
        self._answered = -GRACE_S
        self._lock = threading.Lock()

    def emit(self, record: logging.LogRecord) -> None:
        if self.since is not None or time.monotonic() - self._ended < GRACE_S:
            return
        if any(s in record.getMessage() for s in _UNREACHABLE):
            if time.monotonic() - self._answered < 1.0 or self._answers():
                self._answered = time.monotonic()
                return  # a stale line: the broker answers
            with self._lock:
                if self.since is not None:
                    return
                self.since = time.monotonic()
                self.outages += 1
            self.console(f"Kafka at {self.bootstrap_servers} unreachable, retrying ...")
            threading.Thread(target=self._watch, name="kafka-outage", daemon=True).start()

    def _watch(self) -> None:
        while self.since is not None:
            time.sleep(max(0.05, self.probe_every_s))
            self.check()

    def _answers(self) -> bool:
        host, _, port = self.bootstrap_servers.split(",")[0].rpartition(":")
        try:
            with socket.create_connection((host or "127.0.0.1", int(port)), timeout=1.0):
                return True
        except (OSError, ValueError):
            return False

    def check(self) -> None:
        if self.since is None or time.monotonic() - self._probed < self.probe_every_s:
            return
        self._probed = time.monotonic()
        if self._answers():
            with self._lock:
                if self.since is None:
                    return
                since, self.since = self.since, None
                self._ended = time.monotonic()
            self.console(f"Kafka at {self.bootstrap_servers} reachable again after {self._ended - since:.0f} s")


class _CountingHandler(logging.FileHandler):
    def __init__(self, path: Path):
        super().__init__(path, encoding="utf-8")
        self.counts: Counter = Counter()

    def emit(self, record: logging.LogRecord) -> None:
        self.counts["kafka_client" if record.name == KAFKA_LOGGER.name else record.levelname.lower()] += 1
        super().emit(record)


class RunLogs:
    """The logs of one run in `folder` (`results/<run_id>/logs/`): use as a context manager.

    On entry: the JVM's output goes to `spark.log`, the driver loggers (`DRIVER_LOGGERS`) to
    `driver.log` and not to the console. On exit both are restored. `summary()` gives line counts.
    Given `bootstrap_servers`, `outage` is a `KafkaOutage` on the Kafka loggers, printing to `console`.
    """

    def __init__(self, folder: Path, bootstrap_servers: str | None = None,
                 console: Callable[[str], None] = print):
        self.folder = Path(folder)
        self.outage = KafkaOutage(bootstrap_servers, console) if bootstrap_servers else None
        self._handler: _CountingHandler | None = None
        self._saved: dict[str, tuple[bool, int]] = {}
        self._jvm_before: Counter = Counter()

    def __enter__(self) -> "RunLogs":
        self.folder.mkdir(parents=True, exist_ok=True)
        self._handler = _CountingHandler(self.folder / "driver.log")
        self._handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
        for name in DRIVER_LOGGERS:
            logger = logging.getLogger(name)
            self._saved[name] = (logger.propagate, logger.level)
            logger.addHandler(self._handler)
            logger.propagate = False
            if logger.level == logging.NOTSET:
                logger.setLevel(logging.INFO)
        if self.outage is not None:
            for name in _OUTAGE_LOGGERS:
                logging.getLogger(name).addHandler(self.outage)
        self._jvm_before = JVM_OUTPUT.snapshot()
        JVM_OUTPUT.open(self.folder / "spark.log")
        return self

    def __exit__(self, *exc) -> None:
        JVM_OUTPUT.close()
        if self.outage is not None:
            for name in _OUTAGE_LOGGERS:
                logging.getLogger(name).removeHandler(self.outage)
        for name, (propagate, level) in self._saved.items():
            logger = logging.getLogger(name)
            logger.removeHandler(self._handler)
            logger.propagate = propagate
            logger.setLevel(level)
        if self._handler is not None:
            self._handler.close()

    def summary(self) -> dict:
        """Lines written so far: `spark` (JVM lines by `classify` category, this run only) and
        `driver` (records by level; librdkafka's under `kafka_client`), and the folder."""
        jvm = JVM_OUTPUT.snapshot()
        jvm.subtract(self._jvm_before)
        return {"folder": str(self.folder),
                "spark": {k: v for k, v in sorted(jvm.items()) if v > 0},
                "driver": dict(sorted(self._handler.counts.items())) if self._handler else {}}


def describe(summary: dict) -> str:
    """One console line for a run's log summary, e.g.
    `logs: results/x/logs/ (spark.log: 120 lines, 4 PySpark worker, 2 WARN; driver.log: 3 Kafka client)`."""
    spark = summary.get("spark") or {}
    driver = summary.get("driver") or {}
    parts = [f"spark.log: {sum(spark.values())} lines"]
    for key, label in (("pyspark_worker", "PySpark worker"), ("warning", "WARN"), ("error", "ERROR")):
        if spark.get(key):
            parts.append(f"{spark[key]} {label}")
    driver_parts = [f"{v} {'Kafka client' if k == 'kafka_client' else k}" for k, v in driver.items()]
    text = ", ".join(parts) + (f"; driver.log: {', '.join(driver_parts)}" if driver_parts else "")
    return f"logs: {summary.get('folder')}/ ({text})"
