"""The run's live outputs beside its record: InfluxDB (through an outage, backfilled from the run
record) and the distribution topic `<run>.distribution`."""

from __future__ import annotations

import time
from collections.abc import Callable

from bench.observer.influx import InfluxWriter
from bench.run.preflight import Prepared

RETRY_S = 5.0
"""While InfluxDB's writes fail, ask whether it answers again at most this often, s."""


def influx_writer(prepared: Prepared, tags: dict[str, str], log=print) -> InfluxWriter | None:
    """The run's InfluxDB writer (None: --no-influx); an unreachable InfluxDB is one warning, and
    the run goes on."""
    if not prepared.influx_url:
        return None
    o = prepared.options
    influx = InfluxWriter(prepared.influx_url, prepared.influx_database, tags, token=o.influx_token,
                          org=o.influx_org, bucket=o.influx_bucket)
    if not influx.reachable():
        log(f"warning: InfluxDB at {prepared.influx_url} is unreachable; the run goes on and its "
            "figures go to the run record (failed writes are counted in summary.json)")
    return influx


class InfluxOutput:
    """An observer output writing each tick to InfluxDB. Writes failed (InfluxDB down): one console
    line; once it answers again, every tick so far is written again from the run record."""

    def __init__(self, influx: InfluxWriter, url: str, rows: Callable[[], list[dict]], log=print):
        """`rows()`: the observer's ticks so far (the run record's), for the backfill."""
        self.influx, self.url, self.rows, self.log = influx, url, rows, log
        self.announced = False
        """The outage has been told on the console (told again after a recovery)."""
        self.last_try = 0.0
        """time.monotonic() of the last reachability check during an outage."""

    def __call__(self, row: dict) -> None:
        influx = self.influx
        influx.write_row(row)
        if influx.pending_backfill and not self.announced:
            self.announced = True
            self.log(f"InfluxDB at {self.url} unreachable ({influx.last_error}); its points are "
                     "kept in metrics.parquet and written when it answers")
        if influx.pending_backfill and time.monotonic() - self.last_try > RETRY_S:
            self.last_try = time.monotonic()
            if influx.reachable():
                rows = list(self.rows())
                n = influx.backfill(rows)
                self.announced = False
                self.log(f"InfluxDB at {self.url} reachable again: {n:,} points of "
                         f"{len(rows)} ticks written again from the run record")
