"""Concurrent writers of one run record (the observer's ticker thread and the driver loop)."""

from __future__ import annotations

import threading

import pandas as pd

from bench.results.record import RunRecord


def test_concurrent_metric_writes_never_collide(tmp_path) -> None:
    record = RunRecord("concurrent-writes", root=tmp_path)
    errors: list[BaseException] = []

    def write(n: int) -> None:
        try:
            for i in range(40):
                record.write_metrics(pd.DataFrame({"tick": list(range(n + i))}))
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=write, args=(n,)) for n in (1, 2, 3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert sorted(p.name for p in record.path.iterdir()) == ["metrics.parquet"]
    assert len(pd.read_parquet(record.path / "metrics.parquet")) >= 40
