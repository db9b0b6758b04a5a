"""The state-transfer channel `<run>.state`: per-key worker state that changes worker in a rescale.

A transformWithState operator reaches only the state of the grouping key it is called for, so a
key whose owner changes cannot be moved inside the query from one worker's slot to another's. Its
state goes through Kafka instead: the driver (or, later, an old owner) writes one record per
(rescale epoch, slot, kind, chunk) to `<run>.state`; a rescale run's query reads that topic as a
second Kafka source, and the worker-state operator (`WorkerState.java`) applies each record to its
slot's MapState as it reads it: in a micro-batch, in the batch that reads it, before that batch's
tuples; in Real-Time Mode, while the tuples flow (an install merges, so a moved key's tuples that
reach its new owner first are kept):

- `{"epoch": e, "slot": s, "chunk": c, "extract": [key, ...]}`: the old owner drops the keys' entries;
- `{"epoch": e, "slot": s, "chunk": c, "install": [[key, count, sum, first_ts_ms, last_ts_ms], ...]}`:
  the new owner merges them into its entries (it has none for a key that moves to it);
- `{"epoch": e, "slot": -2, "wake": true, "splitter": i}` (a real-time query's live rescale): for
  splitter instance i's router, which reads the rescale channel when it comes (`ChannelBarrier.java`),
  so that an epoch requested or a HANDOFF step published while no tuple flows gets its barrier, and a
  HANDOFF's held tuples are released at every router; the grouping stage passes it on to no worker.

Each slot keeps the ids (`<epoch>|<kind>|<chunk>`) of the records it applied
(`transfers_applied`): a record applied already is ignored, so records written twice (a driver
killed between writing and restarting) change nothing. The source's offsets are in the query's
checkpoint like the input's: a record is read by exactly one batch.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from bench.topology.spout import CONSUMER_OPTIONS

TRANSFER_COLUMN = "transfer"
"""The worker-state operator's input column carrying a transfer record (NULL on tuple rows)."""
CHUNK_ENTRIES = 2_000
"""Entries per record (far below Kafka's 1 MB message limit for keys up to --max-key-bytes)."""
EXTRACT, INSTALL = "extract", "install"
WAKE_SLOT = -2
"""The `slot` of a wake record (module text); the epochs' completion markers have slot -1."""


def topic(run_id: str) -> str:
    return f"{run_id}.state"


def records(epoch: int, extracts: dict[int, list[str]], installs: dict[int, list[tuple]],
            slot_workers: dict[int, int] | None = None) -> list[tuple[str, str]]:
    """Kafka (key, value) records of one rescale epoch.

    Args: epoch: the rescale's number (1 for the first event); extracts: slot -> keys its worker
        drops; installs: slot -> `(key, count, sum, first_ts_ms, last_ts_ms)` entries it puts;
        slot_workers: slot -> its worker, written as each record's `worker` (the real-time query
        routes a record to its worker: `GroupingStage.OUTPUT`), or None.
    Returns: records keyed `<epoch>|<slot>|<kind>|<chunk>`, extracts first.
    """
    out = []
    for kind, by_slot in ((EXTRACT, extracts), (INSTALL, installs)):
        for slot in sorted(by_slot):
            entries = list(by_slot[slot])
            for chunk, start in enumerate(range(0, len(entries), CHUNK_ENTRIES)):
                part = entries[start:start + CHUNK_ENTRIES]
                body = part if kind == EXTRACT else [[str(e[0]), *map(int, e[1:])] for e in part]
                record = {"epoch": epoch, "slot": slot, "chunk": chunk, kind: body}
                if slot_workers is not None:
                    record["worker"] = slot_workers[slot]
                out.append((f"{epoch}|{slot}|{kind}|{chunk}", json.dumps(record, separators=(",", ":"))))
    return out


def write(bootstrap_servers: str, run_id: str, recs: Sequence[tuple[str, str]], epoch: int,
          timeout_s: float = 30.0) -> None:
    """Write an epoch's records (idempotent producer, all acknowledged), then its completion marker
    (`<epoch>|done`): `written_epochs` counts an epoch only with its marker, so a driver killed in
    the middle writes the whole epoch again. Records of one epoch that are read twice in the same
    batch change nothing (an extract or install applied twice is applied once).

    Raises: RuntimeError: a record was not acknowledged within `timeout_s`.
    """
    # deferred: Spark's Python workers import this module (the rescale channel's reader) and never
    # write: no Kafka client there
    from confluent_kafka import Producer

    errors: list[str] = []
    producer = Producer({"bootstrap.servers": bootstrap_servers, "enable.idempotence": True, "linger.ms": 5})
    for key, value in recs:
        producer.produce(topic(run_id), key=key.encode(), value=value.encode(), partition=0,
                         on_delivery=lambda err, _msg: errors.append(str(err)) if err else None)
    left = producer.flush(timeout_s)
    if left or errors:
        raise RuntimeError(f"state transfer to {topic(run_id)}: {left} records unacknowledged, errors {errors[:3]}")
    producer.produce(topic(run_id), key=f"{epoch}|done".encode(), value=json.dumps({"epoch": epoch, "slot": -1}).encode(),
                     partition=0)
    if producer.flush(timeout_s):
        raise RuntimeError(f"state transfer to {topic(run_id)}: the marker of epoch {epoch} was not acknowledged")


def wake(bootstrap_servers: str, run_id: str, epoch: int, splitters: int = 1, timeout_s: float = 30.0) -> None:
    """Write the wake records of epoch `epoch` (module text): one for each of splitter instances 0
    to `splitters` - 1.

    Raises: RuntimeError: they were not acknowledged within `timeout_s`."""
    from confluent_kafka import Producer  # deferred: as in `write`

    producer = Producer({"bootstrap.servers": bootstrap_servers, "enable.idempotence": True})
    for splitter in range(splitters):
        producer.produce(topic(run_id), key=f"{epoch}|wake".encode(), partition=0, value=json.dumps(
            {"epoch": epoch, "slot": WAKE_SLOT, "wake": True, "splitter": splitter}).encode())
    if producer.flush(timeout_s):
        raise RuntimeError(f"{topic(run_id)}: the wake records of epoch {epoch} were not acknowledged")


def written_epochs(bootstrap_servers: str, run_id: str, timeout_s: float = 10.0) -> set[int]:
    """The epochs written completely to `<run>.state` (their marker is there): a resumed driver does
    not write them again."""
    # deferred: Spark's Python workers import this module (the rescale channel's reader) and never
    # read: no Kafka client there
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": bootstrap_servers, "group.id": f"{run_id}.state-check",
                         "enable.auto.commit": False, "auto.offset.reset": "earliest"})
    try:
        low, high = consumer.get_watermark_offsets(TopicPartition(topic(run_id), 0), timeout=timeout_s)
        seen: set[int] = set()
        if high <= low:
            return seen
        consumer.assign([TopicPartition(topic(run_id), 0, low)])
        position = low
        while position < high:
            msg = consumer.poll(timeout_s)
            if msg is None:
                raise RuntimeError(f"{topic(run_id)}: no record at offset {position} within {timeout_s} s")
            if msg.error():
                continue
            parts = msg.key().decode().split("|")
            if parts[1:] == ["done"]:
                seen.add(int(parts[0]))
            position = msg.offset() + 1
        return seen
    finally:
        consumer.close()


def read(spark, bootstrap_servers: str, run_id: str, input_schema: T.StructType) -> DataFrame:
    """The channel as rows of the worker-state operator's input (`input_schema`: its `slot`, `worker`
    -1, the record in TRANSFER_COLUMN, every other column empty)."""
    raw = (spark.readStream.format("kafka").option("kafka.bootstrap.servers", bootstrap_servers)
           .option("subscribe", topic(run_id)).option("startingOffsets", "earliest")
           .options(**CONSUMER_OPTIONS).load())
    value = F.col("value").cast("string")
    columns = control_columns(input_schema, slot=F.get_json_object(value, "$.slot").cast("int"),
                              worker=F.lit(-1).cast("int"), **{TRANSFER_COLUMN: value})
    return raw.select(*columns).where(F.col("slot") >= 0)  # not the markers


def read_controls(spark, bootstrap_servers: str, run_id: str, control_schema: T.StructType, column: str,
                  consumer_options: dict[str, str]) -> DataFrame:
    """The channel as control rows of the grouping stage (`control_schema`, `jvm_stage.control_schema`:
    splitter 0 or a wake record's own, `partition` -1, the record in `column`), which a real-time
    query's grouping stage passes on to the worker-state operator (`GroupingStage.OUTPUT`), save the
    wake records."""
    raw = (spark.readStream.format("kafka").option("kafka.bootstrap.servers", bootstrap_servers)
           .option("subscribe", topic(run_id)).option("startingOffsets", "earliest")
           .options(**consumer_options).load())
    value = F.col("value").cast("string")
    splitter = F.coalesce(F.get_json_object(value, "$.splitter").cast("int"), F.lit(0))
    columns = control_columns(control_schema, splitter=splitter, partition=F.lit(-1).cast("int"), **{column: value})
    return raw.where(F.get_json_object(value, "$.slot").cast("int") != -1).select(*columns)  # not the markers


def control_columns(schema: T.StructType, **given) -> list:
    """The columns of a control row on a stage's input (`schema`: the grouping stage's packed input,
    the worker-state operator's input): the `given` columns by name, every other one empty (an
    empty list for an array column, NULL otherwise)."""
    def empty(field: T.StructField):
        if isinstance(field.dataType, T.ArrayType):
            return F.array().cast(field.dataType)
        return F.lit(None).cast(field.dataType)

    return [given[f.name].alias(f.name) if f.name in given else empty(f).alias(f.name) for f in schema.fields]
