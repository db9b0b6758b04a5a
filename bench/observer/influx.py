"""The observer's InfluxDB writer (influxdb-client, batching, with an error callback), and the backfill.

influxdb-client's batching writer drops a failed batch silently unless an error callback is set:
this one counts every failed batch, keeps a one-line message, and logs it once per outage (to the
run's log file, not the console). The run goes on, its figures reach the run record
(`metrics.parquet`), and `backfill` writes them again once InfluxDB answers: the points are a pure
function of the rows (`influx_schema.row_points`), so writing them twice leaves one point each.
InfluxDB 1.8 serves the v2 write API with token `user:password` (empty: no auth) and bucket
`<database>/<retention policy>`.
"""

from __future__ import annotations

import json
import logging
import threading
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterable, Mapping
from pathlib import Path

import pandas as pd

from bench.observer.influx_schema import RUN_TAGS, row_points, run_rescale_points
from bench.stack import StackConfig

log = logging.getLogger(__name__)


def one_line(exception: BaseException, limit: int = 240) -> str:
    """`Type: first line of the message`, at most `limit` characters (no HTTP bodies, no tracebacks).

    For an HTTP error, InfluxDB's own one-line reason (its `X-Influxdb-Error` header, e.g. "partial
    write: field type conflict: ...") follows the status: it says what to do, the status does not.
    """
    text = str(exception).strip().splitlines()[0] if str(exception).strip() else ""
    reason = getattr(exception, "reason", None) or getattr(exception, "status", None)
    if reason and type(exception).__name__ == "ApiException":
        text = f"HTTP {getattr(exception, 'status', '?')} {getattr(exception, 'reason', '')}".strip()
        headers = getattr(exception, "headers", None) or {}
        influx_error = headers.get("X-Influxdb-Error") if hasattr(headers, "get") else None
        if influx_error:
            text = f"{text}: {influx_error}"
    out = f"{type(exception).__name__}: {text}" if text else type(exception).__name__
    return out if len(out) <= limit else out[: limit - 3] + "..."


def _point(measurement: str, tags: Mapping, fields: Mapping, time_ms: int):
    # deferred: influxdb_client takes 0.5-0.8 s to import; the simulator and --no-influx runs never write
    from influxdb_client import Point, WritePrecision

    point = Point(measurement).time(time_ms, WritePrecision.MS)
    for k, v in tags.items():
        point = point.tag(k, str(v))
    for k, v in fields.items():
        point = point.field(k, v)
    return point


class InfluxWriter:
    def __init__(self, url: str, database: str, tags: dict[str, str], *, token: str = "", org: str = "-",
                 bucket: str | None = None, flush_interval_ms: int = 1000, timeout_ms: int = 5000):
        """Args: url: InfluxDB base URL; database: 1.8 database (bucket `<database>/autogen` unless
        `bucket` is given, e.g. for InfluxDB 2.x); tags: added to every point; token, org: 2.x auth."""
        # deferred: influxdb_client takes 0.5-0.8 s to import; the simulator and --no-influx runs never write
        from influxdb_client import InfluxDBClient
        from influxdb_client.client.write_api import WriteOptions

        self.url = url
        self.bucket = bucket or f"{database}/autogen"
        self.tags = dict(tags)
        self.points_sent = 0
        self.failed_batches = 0
        self.backfilled_points = 0
        self.last_error: str | None = None
        self.failures_at_last_backfill = 0
        self._outage_logged = False
        self._lock = threading.Lock()
        self.client = InfluxDBClient(url=url, token=token, org=org, timeout=timeout_ms)
        self.write_api = self.client.write_api(
            write_options=WriteOptions(batch_size=500, flush_interval=flush_interval_ms, max_retries=2,
                                       retry_interval=500, max_retry_time=5000),
            success_callback=self._on_success, error_callback=self._on_error,
        )

    def _on_success(self, conf, data) -> None:
        self._outage_logged = False

    def _on_error(self, conf, data, exception) -> None:
        message = one_line(exception)
        with self._lock:
            self.failed_batches += 1
            self.last_error = message
            first = not self._outage_logged
            self._outage_logged = True
        if first:
            log.warning("InfluxDB write to %s failed (%s); later failures are counted, the points are "
                        "backfilled from metrics.parquet when it answers", self.url, message)

    @property
    def pending_backfill(self) -> bool:
        """Writes failed since the last backfill."""
        return self.failed_batches > self.failures_at_last_backfill

    def reachable(self) -> bool:
        try:
            return bool(self.client.ping())
        except Exception:
            return False

    def write_row(self, row: Mapping) -> None:
        """The points of one observer tick (`influx_schema.row_points`), batched."""
        for measurement, tags, fields, time_ms in row_points(row, self.tags):
            self._write(_point(measurement, tags, fields, time_ms))

    def write_point(self, measurement: str, tags: Mapping, fields: Mapping, time_ms: int) -> None:
        """One point of another measurement (e.g. `rescale`), batched; the writer's tags are added.
        The caller fixes each field's type (InfluxDB refuses a type change)."""
        self._write(_point(measurement, {**self.tags, **tags}, fields, time_ms))

    def _write(self, point) -> None:
        try:
            self.write_api.write(bucket=self.bucket, record=point)
            self.points_sent += 1
        except Exception as e:  # the batching writer raises only when closed or misconfigured
            self._on_error(None, None, e)

    def backfill(self, rows: Iterable[Mapping]) -> int:
        """Write the points of `rows` synchronously (same timestamps and tags as the live writes:
        idempotent). Returns the number of points. Raises the client's exception if InfluxDB refuses."""
        failures = self.failed_batches
        n = write_rows(self.client, self.bucket, rows, self.tags)
        with self._lock:
            self.backfilled_points += n
            self.failures_at_last_backfill = failures
            self._outage_logged = False
        return n

    def status(self) -> dict:
        with self._lock:
            return {"url": self.url, "bucket": self.bucket, "points_sent": self.points_sent,
                    "failed_batches": self.failed_batches, "last_error": self.last_error,
                    "backfilled_points": self.backfilled_points, "pending_backfill": self.pending_backfill}

    def close(self) -> None:
        try:
            self.write_api.close()  # flushes what is pending (errors go to the callback)
        finally:
            self.client.close()

    def finish(self, rows: Iterable[Mapping]) -> int:
        """Flush, then, if writes failed since the last backfill and InfluxDB answers, backfill
        `rows` (the run's ticks); close. Returns the points backfilled (0: none needed or possible)."""
        try:
            self.write_api.close()
            if self.pending_backfill and self.reachable():
                return self.backfill(rows)
            return 0
        except Exception as e:  # noqa: BLE001 - counted; the run record keeps the figures
            self._on_error(None, None, e)
            return 0
        finally:
            self.client.close()


def observer_points(url: str, database: str, run_id: str, timeout_s: float = 5.0) -> int | None:
    """The number of observer ticks InfluxDB holds for `run_id` (points of measurement `observer`
    with its `run_id` tag, counted by `time_ms`, a field of every tick, through the v1 `/query`
    API); None when InfluxDB does not answer or refuses the query (a run then goes on, and writes
    nothing there while it stays unreachable)."""
    query = urllib.parse.urlencode({"db": database, "q": f"SELECT count(time_ms) FROM observer WHERE run_id = '{run_id}'"})
    try:
        with urllib.request.urlopen(f"{url.rstrip('/')}/query?{query}", timeout=timeout_s) as resp:
            result = json.load(resp)["results"][0]
    except (urllib.error.URLError, OSError, ValueError, KeyError, IndexError):
        return None
    if "error" in result:
        return None
    series = result.get("series") or []
    return int(series[0]["values"][0][1]) if series else 0


def write_rows(client, bucket: str, rows: Iterable[Mapping], tags: Mapping[str, str], chunk: int = 5000) -> int:
    """Write the points of `rows` with a synchronous writer, `chunk` points a request; returns the count."""
    # deferred: influxdb_client takes 0.5-0.8 s to import; the simulator and --no-influx runs never write
    from influxdb_client.client.write_api import SYNCHRONOUS

    api = client.write_api(write_options=SYNCHRONOUS)
    points, n = [], 0
    for row in rows:
        for measurement, ptags, fields, time_ms in row_points(row, tags):
            points.append(_point(measurement, ptags, fields, time_ms))
            if len(points) >= chunk:
                api.write(bucket=bucket, record=points)
                n, points = n + len(points), []
    if points:
        api.write(bucket=bucket, record=points)
        n += len(points)
    return n


def write_points(url: str, database: str, points: Iterable[tuple[str, Mapping, Mapping, int]], *,
                 token: str = "", org: str = "-", bucket: str | None = None) -> int:
    """Write `(measurement, tags, fields, time_ms)` points synchronously (for measurements outside a
    run's ticks, e.g. `capacity_step`); the caller fixes each field's type. Returns the count.
    Raises: the client's exception if InfluxDB refuses or does not answer."""
    # deferred: influxdb_client takes 0.5-0.8 s to import; the simulator and --no-influx runs never write
    from influxdb_client import InfluxDBClient
    from influxdb_client.client.write_api import SYNCHRONOUS

    records = [_point(*p) for p in points]
    with InfluxDBClient(url=url, token=token, org=org, timeout=30_000) as client:
        client.write_api(write_options=SYNCHRONOUS).write(bucket=bucket or f"{database}/autogen", record=records)
    return len(records)


def backfill_run(run_dir, url: str | None = None, database: str | None = None, *, token: str = "",
                 org: str = "-", bucket: str | None = None) -> int:
    """Write a run record's points to InfluxDB again, as the run wrote them live: every tick of a
    stream run (`<run_dir>/metrics.parquet`, with the run's tags from `run.json`) and the `rescale`
    point of each event of a rescale run (stream or simulate: `influx_schema.run_rescale_points`; a
    simulate run writes no ticks to InfluxDB, so none are backfilled). Same timestamps and tags: a second backfill
    leaves one point each. The URL and database default to the run's own, then the local stack's.
    Returns the number of points. Raises FileNotFoundError (no run record) or the client's error."""
    # deferred: influxdb_client takes 0.5-0.8 s to import; the simulator and --no-influx runs never write
    from influxdb_client import InfluxDBClient

    run_dir = Path(run_dir)
    run = json.loads((run_dir / "run.json").read_text())
    config = run["config"]
    rows = pd.read_parquet(run_dir / "metrics.parquet").to_dict("records")
    summary_path = run_dir / "summary.json"
    summary = json.loads(summary_path.read_text()) if summary_path.is_file() else None
    if url is None or database is None:
        stack = StackConfig.from_env()
        url = url or config.get("influx_url") or stack.influx_url
        database = database or stack.influx_database
    bucket = bucket or f"{database}/autogen"
    n = 0
    if run.get("mode") != "simulate":
        with InfluxDBClient(url=url, token=token, org=org, timeout=30_000) as client:
            n = write_rows(client, bucket, rows, {k: str(config[k]) for k in RUN_TAGS})
    rescale = run_rescale_points(run, summary, (r["time_ms"] for r in rows))
    if rescale:
        n += write_points(url, database, rescale, token=token, org=org, bucket=bucket)
    return n
