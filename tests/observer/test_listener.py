"""`ProgressListener` registered with a real Spark session: it receives each batch's progress, in its
JSON form, with the observed metrics, for the query it is named after only, until it is detached."""

from __future__ import annotations

import time

import pytest

pytestmark = pytest.mark.spark


def _wait(condition, timeout_s: float = 60.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.1)


def test_listener_receives_progress_with_observed_metrics_until_detached(spark, tmp_path):
    from pyspark.sql import functions as F

    from bench.observer.listener import ProgressListener

    seen: list[dict] = []
    listener = ProgressListener([seen.append], query_name="listener-test")
    listener.attach(spark)

    def start(name: str):
        observed = (spark.readStream.format("rate").option("rowsPerSecond", 50).load()
                    .observe("probe", F.count(F.lit(1)).alias("rows"), F.max("value").alias("max_value")))
        return (observed.writeStream.queryName(name).foreachBatch(lambda df, _id: df.count())
                .option("checkpointLocation", str(tmp_path / name)).trigger(processingTime="200 milliseconds")
                .start())

    other = start("other-query")
    query = start("listener-test")
    try:
        _wait(lambda: sum(1 for p in seen if p["observedMetrics"].get("probe", {}).get("rows")) >= 2)
        assert {p["name"] for p in seen} == {"listener-test"}
        assert [p["batchId"] for p in seen] == sorted(p["batchId"] for p in seen)
        probe = next(p for p in seen if p["observedMetrics"].get("probe", {}).get("rows"))["observedMetrics"]["probe"]
        assert probe["rows"] > 0 and probe["max_value"] >= 0
        assert listener.latest["batchId"] == max(p["batchId"] for p in seen)

        listener.detach(spark)
        settled = len(seen)
        last = query.lastProgress["batchId"]
        _wait(lambda: query.lastProgress["batchId"] >= last + 3)
        assert len(seen) <= settled + 1  # at most the event that was already on its way
        listener.detach(spark)  # a second detach is a no-op
    finally:
        query.stop()
        other.stop()
