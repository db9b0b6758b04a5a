"""A run's logs: every client's log lines to `results/<run_id>/logs/run.log`, one console line per outage.

Kafka clients (librdkafka, through `logger=` on the loggers `bench.kafka` and `producers`) repeat
"Connection refused" every few hundred ms while a broker is down, and influxdb-client logs each
failed write with its HTTP body and retry tracebacks. During a run, Python's logging goes to the
run's log file only; the console gets one line when Kafka becomes unreachable and one when it
answers again (`KafkaOutage`).
"""

from __future__ import annotations

import logging
import socket
import threading
import time
from collections.abc import Callable
from contextlib import contextmanager
from pathlib import Path

KAFKA_LOGGER = "bench.kafka"
"""The Python logger the harness's Kafka clients log to (`logger=` of confluent_kafka clients)."""

_UNREACHABLE = ("Connection refused", "ALL_BROKERS_DOWN", "all broker connections are down")
GRACE_S = 10.0
"""After `reachable again`, clients still report the connections that failed during the outage for a
few seconds: not a new outage."""
# librdkafka's log lines reach Python when the client is next polled, so a client idle during an
# outage delivers them long after it: an outage starts only if the broker does not answer now.
QUIET = ("py4j", "urllib3", "asyncio")


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


@contextmanager
def run_logging(log_dir: Path, bootstrap_servers: str, console: Callable[[str], None] = print):
    """Within the block: Python logging (INFO and up) to `log_dir/run.log` instead of the console,
    and a `KafkaOutage` (yielded) on the Kafka loggers."""
    log_dir.mkdir(parents=True, exist_ok=True)
    handler = logging.FileHandler(log_dir / "run.log", encoding="utf-8")
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger()
    saved = root.level, [(name, logging.getLogger(name).level) for name in QUIET]
    # Handlers already on the root (a console handler set up by a caller) would print client noise.
    others = list(root.handlers)
    for h in others:
        root.removeHandler(h)
    root.addHandler(handler)
    root.setLevel(logging.INFO)
    for name in QUIET:
        logging.getLogger(name).setLevel(logging.WARNING)
    outage = KafkaOutage(bootstrap_servers, console)
    kafka_loggers = [logging.getLogger(KAFKA_LOGGER), logging.getLogger("producers")]
    for lg in kafka_loggers:
        lg.addHandler(outage)
    try:
        yield outage
    finally:
        for lg in kafka_loggers:
            lg.removeHandler(outage)
        root.removeHandler(handler)
        handler.close()
        for h in others:
            root.addHandler(h)
        root.setLevel(saved[0])
        for name, level in saved[1]:
            logging.getLogger(name).setLevel(level)
