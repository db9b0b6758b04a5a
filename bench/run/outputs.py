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
    line; once it answers again, every tick so far is written again from the run record. A resumed
    run writes the earlier attempts' ticks again at its first tick that InfluxDB answers: a killed
    attempt's last points may have been in its writer's batch, never sent (make nemesis, seed 60,
    2026-12-06: one tick of a SIGKILLed driver missing from InfluxDB). The points are a pure function
    of the rows, so a point written twice is one point."""

    def __init__(self, influx: InfluxWriter, url: str, rows: Callable[[], list[dict]], log=print):
        """`rows()`: the observer's ticks so far (the run record's, the earlier attempts' included),
        for the backfill."""
        self.influx, self.url, self.rows, self.log = influx, url, rows, log
        self.earlier_unsent: bool | None = None
        """The earlier attempts' ticks are still to be written again (None before the first tick)."""
        self.announced = False
        """The outage has been told on the console (told again after a recovery)."""
        self.last_try = 0.0
        """time.monotonic() of the last reachability check during an outage."""

    def __call__(self, row: dict) -> None:
        influx = self.influx
        influx.write_row(row)
        if self.earlier_unsent is None:
            self.earlier_unsent = len(self.rows()) > 1  # the record held ticks before this attempt's first
        if influx.pending_backfill and not self.announced:
            self.announced = True
            self.log(f"InfluxDB at {self.url} unreachable ({influx.last_error}); its points are "
                     "kept in metrics.parquet and written when it answers")
        if (influx.pending_backfill or self.earlier_unsent) and time.monotonic() - self.last_try > RETRY_S:
            self.last_try = time.monotonic()
            if influx.reachable():
                rows = list(self.rows())
                n = influx.backfill(rows)
                self.announced = False
                self.log(f"InfluxDB at {self.url}{'' if self.earlier_unsent else ' reachable again'}: {n:,} points "
                         f"of {len(rows)} ticks written again from the run record")
                self.earlier_unsent = False
