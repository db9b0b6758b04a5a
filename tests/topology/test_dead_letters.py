"""Dead letters from the main query's progress (`bench.topology.dead_letters`).

The integration test feeds `DeadLetters` the progress dicts Spark would deliver, over the shared
end-to-end input topic (its 5 malformed records are the last records of the partitions), against
the real Kafka broker and Spark session.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from bench.topology.dead_letters import range_to_read
from tests.conftest import E2E_DATASET
from tests.conftest import E2E_MALFORMED as MALFORMED


@pytest.mark.parametrize("covered, start, end, malformed, expected", [
    ({}, {}, {0: 10, 1: 4}, 0, None),  # first batch, clean: nothing to read
    ({}, {}, {0: 10, 1: 4}, 2, {}),  # first batch, malformed records: read from the earliest offsets
    ({0: 10, 1: 4}, {0: 10, 1: 4}, {0: 20, 1: 9}, 1, {0: 10, 1: 4}),  # read the batch's range
    ({0: 10, 1: 4}, {0: 10, 1: 4}, {0: 20, 1: 9}, None, {0: 10, 1: 4}),  # no metrics: read to be sure
    ({0: 10, 1: 4}, {0: 15, 1: 4}, {0: 20, 1: 9}, 0, {0: 10, 1: 4}),  # a gap: read from the coverage
    ({}, {0: 15, 1: 4}, {0: 20, 1: 9}, 0, {}),  # a gap from the start of the topic
    ({0: 20, 1: 9}, {0: 20, 1: 9}, {0: 20, 1: 9}, None, None),  # a batch without input records
])
def test_range_to_read(covered, start, end, malformed, expected):
    assert range_to_read(covered, start, end, malformed) == expected


def progress(batch_id: int, start: dict[int, int] | None, end: dict[int, int], topic: str, malformed: int) -> dict:
    offsets = lambda o: None if o is None else json.dumps({topic: {str(p): v for p, v in o.items()}})  # noqa: E731
    return {"batchId": batch_id, "sources": [{"startOffset": offsets(start), "endOffset": offsets(end)}],
            "observedMetrics": {"splitter": {"records": 1, "malformed": malformed}}}


@pytest.mark.integration
@pytest.mark.spark
def test_a_lost_progress_event_and_a_restart_lose_no_dead_letter(stack, spark, tmp_path, input_topic):
    from bench.run.input import ensure_topics
    from bench.topology.config import TopologyConfig
    from bench.topology.dead_letters import DeadLetters
    from bench.results.batches import read_batches
    from bench.topology.sink import read_aggregates
    from datasets import get_dataset
    from producers.broker import end_offsets

    topic = input_topic.name
    run_id = f"dlq-{int(time.time())}"
    config = TopologyConfig(run_id=run_id, grouping="KEY", dataset=E2E_DATASET, topic=topic,
                            bootstrap_servers=stack.bootstrap_servers, checkpoint_dir=tmp_path / "checkpoint",
                            results_dir=tmp_path / run_id).validate()
    ensure_topics(stack.bootstrap_servers, {config.dlq_topic: 1})
    sql = get_dataset(E2E_DATASET).splitter_sql
    ends = end_offsets(stack.bootstrap_servers, topic)
    first = {p: 100 for p in ends}

    reader = DeadLetters(spark, config, sql)
    reader.on_progress(progress(0, None, first, topic, malformed=0))  # clean: not read
    # The event of batch 1 (every malformed record) is lost; batch 2 reads nothing new but shows the gap.
    reader.on_progress(progress(2, ends, ends, topic, malformed=0))
    reader.close()
    assert reader.error is None and reader.batches_read == 1 and reader.covers(ends)
    letters = read_batches(Path(config.results_dir) / "dlq")
    assert len(letters) == len(MALFORMED) and set(letters["reason"]) >= {"invalid json"}
    assert len(read_aggregates(stack.bootstrap_servers, config.dlq_topic)) == len(MALFORMED)

    # A restarted driver resumes from dlq/covered.json: nothing left to read.
    again = DeadLetters(spark, config, sql)
    assert again.covers(ends)
    again.on_progress(progress(3, ends, ends, topic, malformed=0))
    again.close()
    assert again.error is None and again.batches_read == 0
