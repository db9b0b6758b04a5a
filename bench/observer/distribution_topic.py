"""The observer's Kafka output `<run>.distribution`: one JSON message per tick (Storm: the
observer's `EVENT_INFO` stream). A delivery failure is counted and reported, never fatal."""

from __future__ import annotations

import json

from confluent_kafka import Producer

from bench.logs import KAFKA_LOGGER


class DistributionTopic:
    def __init__(self, bootstrap_servers: str, topic: str, run_id: str):
        self.topic = topic
        self.run_id = run_id
        self.sent = 0
        self.failed = 0
        self.last_error: str | None = None
        self.producer = Producer({"bootstrap.servers": bootstrap_servers, "linger.ms": 50,
                                  "message.timeout.ms": 30000, "log.connection.close": False},
                                 logger=KAFKA_LOGGER)

    def _report(self, err, _msg) -> None:
        if err is not None:
            self.failed += 1
            self.last_error = str(err)
        else:
            self.sent += 1

    def send(self, row: dict) -> None:
        value = json.dumps(row, default=str, allow_nan=True).encode()
        try:
            self.producer.produce(self.topic, key=self.run_id.encode(), value=value, on_delivery=self._report)
        except Exception as e:  # BufferError, KafkaException
            self.failed += 1
            self.last_error = str(e)
        self.producer.poll(0)

    def status(self) -> dict:
        return {"topic": self.topic, "sent": self.sent, "failed": self.failed, "last_error": self.last_error}

    def close(self) -> None:
        self.producer.flush(10)
        self.producer.close()
