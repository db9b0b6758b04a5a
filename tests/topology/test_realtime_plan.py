"""The real-time query's plan (`bench.topology.realtime.worker_windows`) defines one event-time
watermark: after the grouping stage without a rescale, on the source with one.

Spark refuses a watermark defined below another once the watermark has moved ("Redefining watermark
is disallowed"), which only a second real-time batch shows; this reads the plan instead, so a
watermark put back on the source fails here without running the query."""

from __future__ import annotations

import re

import pytest

from bench.topology.config import TopologyConfig
from bench.topology.realtime import worker_windows
from datasets import get_dataset


def watermarks(frame) -> list[str]:
    """The columns of the analyzed plan's EventTimeWatermark nodes, top of the plan first."""
    plan = frame._jdf.queryExecution().analyzed().treeString()
    return re.findall(r"^\W*EventTimeWatermark\b.*?\b(\w+)#\d+", plan, flags=re.MULTILINE)


@pytest.mark.parametrize("protocol, column", [("", "event_ts"), ("SHARED_STATE", "kafka_ts")])
def test_the_real_time_query_defines_one_watermark(spark, tmp_path, protocol, column):
    """Without a rescale the grouping stage runs with no time mode and the watermark is defined on its
    output's event_ts; a rescale's stage keeps event time (its state-transfer records take the
    operator's watermark), so the source's kafka_ts carries it."""
    dataset = get_dataset("NYC_FLIGHTS")
    config = TopologyConfig(grouping="KEY", dataset=dataset.name, mode="realtime", rescale_protocol=protocol,
                            run_id="plan", topic="in", bootstrap_servers="127.0.0.1:9",
                            checkpoint_dir=tmp_path, results_dir=tmp_path)
    assert watermarks(worker_windows(spark, config, dataset.splitter_sql)) == [column]
