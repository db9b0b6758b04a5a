"""The run record: one folder per run under `results/`, the durable result of a run.

    results/<run_id>/run.json         full config, versions, git revision, machine, dataset summary
    results/<run_id>/metrics.parquet  one row per observer tick
    results/<run_id>/summary.json     final figures

Columns and fields are documented in `results/README.md`. InfluxDB and Grafana are live views;
these files are the record.
"""

from __future__ import annotations

import json
import math
import os
import re
import secrets
import tempfile
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path

import pandas as pd

from bench.results import environment

RESULTS_DIR = Path(os.environ.get("BENCH_RESULTS_DIR", environment.REPO_ROOT / "results"))
_RUN_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")


def new_run_id(grouping: str, dataset: str, now: datetime | None = None) -> str:
    """`<UTC yyyymmddThhmmss>-<grouping>-<dataset>-<4 hex>`, e.g. `20261121T163000-key-nyc_flights-1a2b`."""
    now = now or datetime.now(timezone.utc)
    label = re.sub(r"[^a-z0-9._-]", "-", grouping.lower())[:64]  # a plugin's `module:Class` spec has a ':'
    return f"{now:%Y%m%dT%H%M%S}-{label}-{dataset.lower()}-{secrets.token_hex(2)}"


def check_run_id(run_id: str) -> str:
    """Raises ValueError unless `run_id` is 1-128 characters of [A-Za-z0-9._-] (it names a folder and topics)."""
    if not _RUN_ID.match(run_id):
        raise ValueError(f"run id {run_id!r} must be 1-128 characters of letters, digits, '.', '_' or '-'")
    return run_id


def _json_safe(value):
    if isinstance(value, float) and not math.isfinite(value):
        return None if math.isnan(value) else ("inf" if value > 0 else "-inf")
    if isinstance(value, dict):
        return {str(k): _json_safe(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_json_safe(v) for v in value]
    if hasattr(value, "item"):  # numpy scalars
        return _json_safe(value.item())
    return value


class RunRecord:
    """Writer of one run's folder (created on first write).

    Args: run_id: checked with `check_run_id`; root: the results folder (`results/` by default,
        `BENCH_RESULTS_DIR` overrides); kafka_connector: gives, at each write of `run.json`, what
        it records under `versions` of Spark's Kafka connector (`bench.stack.connector.cached_record`;
        None for none).
    """

    def __init__(self, run_id: str, root: Path | None = None,
                 kafka_connector: Callable[[], dict | None] = lambda: None):
        self.run_id = check_run_id(run_id)
        self.path = Path(root or RESULTS_DIR) / run_id
        self.kafka_connector = kafka_connector

    def _write_json(self, name: str, payload: dict) -> Path:
        self.path.mkdir(parents=True, exist_ok=True)
        target = self.path / name
        tmp = target.with_suffix(".tmp")
        tmp.write_text(json.dumps(_json_safe(payload), indent=2, sort_keys=False) + "\n")
        tmp.replace(target)  # readers never see half a file
        return target

    def write_run(self, mode: str, config: dict, dataset: dict, extra: dict | None = None) -> Path:
        """Write `run.json`: mode (`stream` | `simulate`), config, dataset summary, and the environment.

        Rewriting it (a run completes, or resumes) keeps the first `created_utc`.
        """
        created = datetime.now(timezone.utc).isoformat(timespec="seconds")
        previous = self.path / "run.json"
        if previous.is_file():
            try:
                created = json.loads(previous.read_text()).get("created_utc") or created
            except ValueError:
                pass  # a damaged file is replaced whole
        return self._write_json("run.json", {
            "run_id": self.run_id,
            "mode": mode,
            "created_utc": created,
            "config": config,
            "dataset": dataset,
            "git": environment.git_revision(),
            "versions": environment.versions(self.kafka_connector()),
            "machine": environment.machine(),
            **(extra or {}),
        })

    def write_metrics(self, rows: list[dict] | pd.DataFrame) -> Path:
        """Write `metrics.parquet` (one row per observer tick)."""
        return self._write_parquet("metrics.parquet", rows)

    def write_state(self, columns: dict | pd.DataFrame) -> Path:
        """Write `state.parquet`: the workers' final per-key state (`key`, `worker`, `count`, `sum`,
        `first_ts_ms`, `last_ts_ms`; one row per key and worker holding state of it)."""
        return self._write_parquet("state.parquet", columns)

    def _write_parquet(self, name: str, rows: list[dict] | dict | pd.DataFrame) -> Path:
        self.path.mkdir(parents=True, exist_ok=True)
        frame = rows if isinstance(rows, pd.DataFrame) else pd.DataFrame(rows)
        target = self.path / name
        # A temporary name of its own per write: concurrent writers never rename each other's file.
        fd, tmp_name = tempfile.mkstemp(prefix=f".{name}.", suffix=".tmp", dir=self.path)
        os.close(fd)
        tmp = Path(tmp_name)
        try:
            frame.to_parquet(tmp, index=False)
            tmp.replace(target)
        finally:
            tmp.unlink(missing_ok=True)
        return target

    def write_summary(self, summary: dict) -> Path:
        """Write `summary.json` (final figures)."""
        return self._write_json("summary.json", {"run_id": self.run_id, **summary})
