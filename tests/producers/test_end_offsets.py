"""`producers.broker.end_offsets` retries what a busy client or a new topic answers for a while, and
nothing else. The Kafka client is replaced by a scripted one: what is tested is the retry, not Kafka
(tests/producers/test_replay_integration.py reads real offsets)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from confluent_kafka import KafkaError, KafkaException

from producers import broker
from producers.broker import BrokerUnreachable, end_offsets


class ScriptedConsumer:
    """A consumer whose `get_watermark_offsets` raises the errors of `script`, one per client, then
    answers (low, high) = (0, 10 * partition)."""

    script: list[int] = []
    made = 0

    def __init__(self, conf, logger=None):
        type(self).made += 1

    def list_topics(self, topic, timeout):
        partitions = {0: None, 1: None}
        return SimpleNamespace(topics={topic: SimpleNamespace(error=None, partitions=partitions)})

    def get_watermark_offsets(self, tp, timeout):
        if self.script:
            raise KafkaException(KafkaError(self.script.pop(0)))
        return 0, 10 * tp.partition

    def close(self):
        pass


@pytest.fixture
def consumer(monkeypatch):
    monkeypatch.setattr(broker, "Consumer", ScriptedConsumer)
    monkeypatch.setattr(broker.time, "sleep", lambda _s: None)
    ScriptedConsumer.made = 0
    return ScriptedConsumer


def test_a_retired_bootstrap_connection_is_retried_with_a_new_client(consumer):
    consumer.script = [KafkaError._DESTROY_BROKER, KafkaError._UNKNOWN_PARTITION, KafkaError.NOT_LEADER_FOR_PARTITION]
    assert end_offsets("127.0.0.1:1", "t") == {0: 0, 1: 10}
    assert consumer.made == 4


def test_another_error_is_a_broker_unreachable_at_once(consumer):
    consumer.script = [KafkaError.TOPIC_AUTHORIZATION_FAILED]
    with pytest.raises(BrokerUnreachable, match="reading the end offsets of 't' failed"):
        end_offsets("127.0.0.1:1", "t")
    assert consumer.made == 1


def test_a_transient_error_past_the_timeout_is_a_broker_unreachable(consumer):
    consumer.script = [KafkaError._TIMED_OUT] * 1000
    with pytest.raises(BrokerUnreachable):
        end_offsets("127.0.0.1:1", "t", timeout_s=0.0)
    assert consumer.made == 1
