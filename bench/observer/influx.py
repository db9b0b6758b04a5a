"""The observer's InfluxDB writer (influxdb-client, batching, with an error callback).

influxdb-client's batching writer drops a failed batch silently unless an error callback is set:
this one counts every failed batch and keeps the last message, so the run goes on, its figures
still reach the run record, and the summary says what InfluxDB missed. InfluxDB 1.8 serves the v2
write API with token `user:password` (empty: no auth) and bucket `<database>/<retention policy>`.
"""

from __future__ import annotations

import logging
import threading

log = logging.getLogger(__name__)


class InfluxWriter:
    def __init__(self, url: str, database: str, tags: dict[str, str], *, token: str = "", org: str = "-",
                 bucket: str | None = None, flush_interval_ms: int = 1000, timeout_ms: int = 5000):
        """Args: url: InfluxDB base URL; database: 1.8 database (bucket `<database>/autogen` unless
        `bucket` is given, e.g. for InfluxDB 2.x); tags: added to every point; token, org: 2.x auth."""
        from influxdb_client import InfluxDBClient
        from influxdb_client.client.write_api import WriteOptions

        self.url = url
        self.bucket = bucket or f"{database}/autogen"
        self.tags = dict(tags)
        self.points_sent = 0
        self.failed_batches = 0
        self.last_error: str | None = None
        self._lock = threading.Lock()
        self.client = InfluxDBClient(url=url, token=token, org=org, timeout=timeout_ms)
        self.write_api = self.client.write_api(
            write_options=WriteOptions(batch_size=500, flush_interval=flush_interval_ms, max_retries=2,
                                       retry_interval=500, max_retry_time=5000),
            success_callback=self._on_success, error_callback=self._on_error,
        )

    def _on_success(self, conf, data) -> None:
        pass

    def _on_error(self, conf, data, exception) -> None:
        with self._lock:
            self.failed_batches += 1
            self.last_error = f"{type(exception).__name__}: {exception}"
        log.warning("InfluxDB write to %s failed: %s", self.url, exception)

    def reachable(self) -> bool:
        try:
            return bool(self.client.ping())
        except Exception:
            return False

    def write(self, measurement: str, fields: dict, time_ms: int, tags: dict | None = None) -> None:
        from influxdb_client import Point, WritePrecision

        point = Point(measurement).time(time_ms, WritePrecision.MS)
        for k, v in {**self.tags, **(tags or {})}.items():
            point = point.tag(k, str(v))
        n = 0
        for k, v in fields.items():
            if v is None or (isinstance(v, float) and v != v):
                continue
            if isinstance(v, float) and v in (float("inf"), float("-inf")):
                continue
            point = point.field(k, v)
            n += 1
        if n == 0:
            return
        try:
            self.write_api.write(bucket=self.bucket, record=point)
            self.points_sent += 1
        except Exception as e:  # the batching writer raises only when closed or misconfigured
            self._on_error(None, None, e)

    def status(self) -> dict:
        with self._lock:
            return {"url": self.url, "bucket": self.bucket, "points_sent": self.points_sent,
                    "failed_batches": self.failed_batches, "last_error": self.last_error}

    def close(self) -> None:
        try:
            self.write_api.close()  # flushes what is pending (errors go to the callback)
        finally:
            self.client.close()
