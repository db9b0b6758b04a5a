"""The query's one sink (`foreachBatch`): final aggregates to `<run>.aggregates` and the run record.

Idempotent per batch id. Spark re-runs a batch whose commit it did not record (a killed driver), with
the same offsets and the same state, hence the same rows. The sink writes Kafka first, then
`results/<run>/aggregates/batch-<id>.parquet` atomically; a batch whose file exists is evaluated
(its state stores must commit) but not written to Kafka again. A crash between the two leaves
duplicate Kafka records, with equal key (`<window_start_ms>|<key>`) and value: readers take the
last value per key (`read_aggregates`).
The dead-letter sink (called by `bench.topology.dead_letters`) follows the same protocol with
`<run>.dlq` and `dlq/batch-<id>.parquet`.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import pandas as pd
from confluent_kafka import Consumer, Producer, TopicPartition

from bench.logs import KAFKA_LOGGER

DLQ_VALUE_MAX_CHARS = 65_536
"""A dead letter carries at most this many characters of its record (`value`, or `value_base64`
when the record is not UTF-8), with `value_bytes` and `value_truncated`: a 1 MB record must not make
the dead-letter topic's write fail (Kafka's default message bound is 1 MB)."""

AGGREGATE_COLUMNS = ["window_start", "window_end", "key", "count", "tuples", "first_ts", "last_ts", "ts_sum_ms", "per_worker"]


def batch_file(folder: Path, batch_id: int) -> Path:
    return folder / f"batch-{batch_id:09d}.parquet"


def write_parquet_atomic(frame: pd.DataFrame, target: Path) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(target.name + ".tmp")
    frame.to_parquet(tmp, index=False)
    tmp.replace(target)


def _ms(ts) -> int:
    return int(pd.Timestamp(ts).tz_localize("UTC").value // 1_000_000) if pd.Timestamp(ts).tzinfo is None \
        else int(pd.Timestamp(ts).value // 1_000_000)


def aggregate_messages(frame: pd.DataFrame, run_id: str, batch_id: int, emitted_ms: int) -> list[tuple[bytes, bytes]]:
    """Kafka (key, value) pairs of final totals: key `<window_start_ms>|<key>`, value JSON."""
    out = []
    for row in frame.itertuples(index=False):
        start = _ms(row.window_start)
        value = {
            "run_id": run_id, "window_start_ms": start, "window_end_ms": _ms(row.window_end),
            "key": row.key, "count": int(row.count), "tuples": int(row.tuples),
            "first_ts_ms": _ms(row.first_ts), "last_ts_ms": _ms(row.last_ts),
            "batch_id": batch_id, "emitted_ms": emitted_ms,
        }
        out.append((f"{start}|{row.key}".encode(), json.dumps(value, separators=(",", ":")).encode()))
    return out


class KafkaWriter:
    """A small idempotent producer that raises when a record is not delivered."""

    def __init__(self, bootstrap_servers: str, timeout_s: float = 60.0):
        self.timeout_s = timeout_s
        self.producer = Producer({
            "bootstrap.servers": bootstrap_servers, "enable.idempotence": True, "acks": "all",
            "linger.ms": 5, "message.timeout.ms": int(timeout_s * 1000), "log.connection.close": False,
        }, logger=KAFKA_LOGGER)

    def close(self) -> None:
        self.producer.flush(self.timeout_s)
        self.producer.close()

    def send(self, topic: str, messages: list[tuple[bytes, bytes]]) -> None:
        errors: list[str] = []

        def report(err, _msg):
            if err is not None:
                errors.append(str(err))

        for key, value in messages:
            while True:
                try:
                    self.producer.produce(topic, key=key, value=value, on_delivery=report)
                    break
                except BufferError:
                    self.producer.poll(0.1)
        left = self.producer.flush(self.timeout_s)
        if errors or left:
            raise RuntimeError(f"{len(errors) + left} record(s) not delivered to {topic}: {errors[:3]}")


class AggregateSink:
    """`foreachBatch` callable of the main query."""

    def __init__(self, run_id: str, results_dir: Path, bootstrap_servers: str, topic: str, observer=None):
        self.run_id = run_id
        self.folder = Path(results_dir) / "aggregates"
        self.topic = topic
        self.kafka = KafkaWriter(bootstrap_servers)
        self.observer = observer

    def close(self) -> None:
        self.kafka.close()

    def __call__(self, batch_df, batch_id: int) -> None:
        # Always evaluated, also for a batch written before: the evaluation is what updates and
        # commits the batch's state stores (Spark 4.2 fails a batch whose stores did not commit).
        self.write(batch_df.toPandas(), batch_id)

    def write(self, fresh: pd.DataFrame, batch_id: int) -> None:
        """Write batch `batch_id`'s final totals (AGGREGATE_COLUMNS), unless its file exists (then
        the observer gets the file's rows, as first written)."""
        target = batch_file(self.folder, batch_id)
        if target.exists():
            frame = pd.read_parquet(target)
        else:
            frame = fresh
            emitted_ms = int(time.time() * 1000)
            frame["emitted_ms"] = emitted_ms
            frame["batch_id"] = batch_id
            if len(frame):
                self.kafka.send(self.topic, aggregate_messages(frame, self.run_id, batch_id, emitted_ms))
            write_parquet_atomic(frame, target)
        if self.observer is not None:
            self.observer.on_aggregates(batch_id, frame)


def _clip(text) -> tuple[str | None, bool]:
    if text is None or (isinstance(text, float) and pd.isna(text)):
        return None, False
    return (text[:DLQ_VALUE_MAX_CHARS], True) if len(text) > DLQ_VALUE_MAX_CHARS else (text, False)


def dead_letter_message(run_id: str, row) -> tuple[bytes, bytes]:
    """Kafka (key, value) of one `splitter.dead_letters` row: key `partition:offset`, value JSON with
    the reason and the record (`value`, or `value_base64` for bytes that are not UTF-8), clipped to
    `DLQ_VALUE_MAX_CHARS`."""
    value, clipped = _clip(row.value)
    b64, b64_clipped = _clip(row.value_base64)
    return f"{row.partition}:{row.offset}".encode(), json.dumps({
        "run_id": run_id, "partition": int(row.partition), "offset": int(row.offset),
        "kafka_ts_ms": _ms(row.kafka_ts), "reason": row.reason, "value": value, "value_base64": b64,
        "value_bytes": int(row.value_bytes), "value_truncated": clipped or b64_clipped,
    }, separators=(",", ":")).encode()


class DeadLetterSink:
    """Writes one batch's dead letters (`splitter.dead_letters` rows) to `<run>.dlq` (key
    `partition:offset`), then `dlq/batch-<id>.parquet`; a batch whose file exists is skipped."""

    def __init__(self, run_id: str, results_dir: Path, bootstrap_servers: str, topic: str):
        self.run_id = run_id
        self.folder = Path(results_dir) / "dlq"
        self.topic = topic
        self.kafka = KafkaWriter(bootstrap_servers)

    def close(self) -> None:
        self.kafka.close()

    def __call__(self, batch_df, batch_id: int) -> None:
        target = batch_file(self.folder, batch_id)
        if target.exists():
            return
        frame = batch_df.toPandas()
        if len(frame):
            self.kafka.send(self.topic, [dead_letter_message(self.run_id, r) for r in frame.itertuples(index=False)])
        write_parquet_atomic(frame[["partition", "offset", "kafka_ts", "reason", "value_bytes"]], target)


def read_topic(bootstrap_servers: str, topic: str, timeout_s: float = 30.0) -> Iterator[tuple[bytes | None, bytes]]:
    """Every record of `topic` from its start to the end it had when the read began, as (key, value),
    in offset order per partition; nothing for a topic that does not exist. Stops after `timeout_s`
    without raising, so a caller that needs the whole topic checks what it got."""
    consumer = Consumer({"bootstrap.servers": bootstrap_servers, "group.id": f"bench-reader-{time.time_ns()}",
                         "enable.auto.commit": False, "auto.offset.reset": "earliest"}, logger=KAFKA_LOGGER)
    try:
        meta = consumer.list_topics(topic, timeout=timeout_s).topics.get(topic)
        if meta is None or meta.error is not None:
            return
        parts = [TopicPartition(topic, p, 0) for p in meta.partitions]
        ends = {p.partition: consumer.get_watermark_offsets(p, timeout=timeout_s)[1] for p in parts}
        consumer.assign(parts)
        done = {p for p, end in ends.items() if end == 0}
        deadline = time.monotonic() + timeout_s
        while len(done) < len(ends) and time.monotonic() < deadline:
            msg = consumer.poll(0.5)
            if msg is None or msg.error():
                continue
            yield msg.key(), msg.value()
            if msg.offset() + 1 >= ends[msg.partition()]:
                done.add(msg.partition())
    finally:
        consumer.close()


def read_aggregates(bootstrap_servers: str, topic: str, timeout_s: float = 30.0) -> dict[str, dict]:
    """The `<run>.aggregates` topic read to its end, last value per key (`<window_start_ms>|<key>`)."""
    return {key.decode(): json.loads(value) for key, value in read_topic(bootstrap_servers, topic, timeout_s)}
