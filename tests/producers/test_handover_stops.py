"""A hand-over stops at the first record the client does not take, so that no partition gets a
record behind a missing one (producers/client.py). No broker: a real librdkafka client whose
bootstrap address answers nothing, so its queue (5 records here) fills and stays full."""

from __future__ import annotations

import pytest

from datasets.base import SourceRecord
from producers.client import ReplayClient, producer_config
from producers.handover import Handover
from producers.interrupt import StopFlag
from producers.pacing import Schedule, ScheduleStart
from tests.producers.test_cli_offline import _closed_port

QUEUE = 5


def _client(stall_s: float) -> ReplayClient:
    cfg = producer_config(f"127.0.0.1:{_closed_port()}", 1.0, {"queue.buffering.max.messages": QUEUE, "log_level": 0})
    return ReplayClient("nowhere", cfg, stall_s=stall_s)


def _records(n: int, event_ms: bool) -> list[SourceRecord]:
    return [SourceRecord(b"r%d" % i, 1_000 + i if event_ms else None) for i in range(n)]


@pytest.mark.parametrize("rate", [None, 1_000_000.0], ids=["unlimited", "paced"])
@pytest.mark.parametrize("event_ms", [False, True], ids=["no-event-time", "event-time"])
def test_a_record_the_full_queue_never_takes_stops_the_hand_over_there(rate, event_ms):
    client = _client(stall_s=0.2)
    handover = Handover(client, Schedule(rate=rate), 2, None, ScheduleStart.at(), StopFlag())
    try:
        handover.run(iter(_records(40, event_ms)))
        assert handover.gave_up
        assert client.delivery.failed == 1
        assert any("stayed full for 0.2 s" in e for e in client.delivery.errors), client.delivery.errors
        # the queue took QUEUE records; the next one was given up and nothing after it was handed
        assert sum(handover.per_partition) == handover.handed == QUEUE + 1 < 40
        # what the queue holds, counted by its purge's delivery reports (len(producer) also counts the
        # client's error events for the closed port: one more now and then)
        client.producer.purge()
        assert client.producer.flush(5) == 0
        assert client.delivery.failed == 1 + QUEUE
    finally:
        client.producer.purge()

