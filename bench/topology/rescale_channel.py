"""The rescale channel of a live rescale (SHARED_STATE): a barrier between two micro-batches of the
running query, and the rows that carry the new routing and the moved state into the next batch.

Spark has no call that pauses a running query between two batches, and its state data source
reads committed batches only: inside batch B's own sink, `format("statestore").option("batchId", B)`
fails with `[STDS_COMMITTED_BATCH_UNAVAILABLE] No committed batch found` (PySpark 4.2.0, measured).
A source's `latestOffset` is the one place where the query's thread waits for us after a batch
committed and before the next is planned. So the channel is a Python streaming data source
(`pyspark.sql.datasource`, PySpark's public API) over a folder of the query's checkpoint, the
rescale's shared storage. It is a `SimpleDataSourceStreamReader`: its `read` runs in the driver
when the query asks for the latest offset, and PySpark hands the records it read to the JVM with
the batch's plan, so the executors read them without a Python worker (a query restarted in the
middle of a batch reads that batch's records again with `readBetweenOffsets`, in an executor's
Python worker):

- `request-<e>.json` (the driver): rescale epoch e is due.
- `barrier-<e>.json` (the source, in `latestOffset`): the query has committed its last batch B
  and waits; `wall_ms` is when it began to wait. No batch runs until epoch e is published. In a
  real-time query the routers write it (`ChannelBarrier.java`): `switch_batch` S, the real-time
  batch whose routers wait for epoch e, and `wall_ms`, when they claimed it.
- `epoch-<e>.jsonl` (the driver, after it read batch B's committed state): the epoch's records, one
  JSON object per line, written once and atomically (never rewritten): the routers' switch
  `{"epoch": e, "slot": -1, "switch": k, "target": ...}` (the k-th rescale of the run; HANDOFF adds
  or sends alone a `handoff` step: pending, whitelisted and held units), and the
  transfer records of `bench.topology.state_transfer.records` (`slot` >= 0: extract / install at
  that worker slot).
- `abort` (the driver, when it gives up a run): a waiting `latestOffset` raises.

The source's offset is the last published epoch (`{"epoch": e}`), kept in the query's offset log
like the Kafka offsets: batch B + 1 reads epoch e's records exactly once, and a restarted query
reads them again only if it runs that batch again. Only batch B + 1 carries them, so routers and
workers switch in the same batch. An epoch published without a request (LEARNER's warm-up,
HANDOFF's steps) does not pause the query: the next batch planned reads it.

The query reads the channel in two places (the grouping stage and the worker-state operator), so
its plan has two such sources, each with its offset in the log; both are asked in the same planning
round, so both give batch B + 1 the epoch.
"""

from __future__ import annotations

import json
import os
import tempfile
import time
from pathlib import Path

from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T
from pyspark.sql.datasource import DataSource, SimpleDataSourceStreamReader

from bench.topology.state_transfer import control_columns

FORMAT = "bench_rescale_channel"
SCHEMA = "epoch INT, slot INT, record STRING"
SWITCH_SLOT = -1
"""The `slot` of a switch record (for the routers, not a worker slot)."""
WAIT_S = 900.0
"""How long a paused query waits for the driver to publish an epoch before it fails."""


class RescaleAborted(RuntimeError):
    """The driver gave the run up while the query waited at a rescale's barrier."""


def _write_once(path: Path, text: str) -> None:
    """Write `path` atomically unless it exists (a resumed writer keeps the first version)."""
    if path.exists():
        return
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    with os.fdopen(fd, "w") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())
    Path(tmp).replace(path)


class Channel:
    """The driver's side of the channel folder."""

    def __init__(self, folder: Path):
        self.folder = Path(folder)
        self.folder.mkdir(parents=True, exist_ok=True)

    def request(self, epoch: int) -> None:
        _write_once(self.folder / f"request-{epoch}.json", json.dumps({"wall_ms": int(time.time() * 1000)}))

    def barrier_wall_ms(self, epoch: int) -> int | None:
        """When the query began to wait at epoch `epoch`'s barrier (epoch ms), or None while it runs."""
        barrier = self.barrier(epoch)
        return None if barrier is None else barrier["wall_ms"]

    def barrier(self, epoch: int) -> dict | None:
        """Epoch `epoch`'s barrier, or None before it has one: `wall_ms`, and in a real-time query the
        routers' claim (`ChannelBarrier.java`) `switch_batch`, the real-time batch that waits for the
        epoch."""
        path = self.folder / f"barrier-{epoch}.json"
        return json.loads(path.read_text()) if path.exists() else None

    def published(self, epoch: int) -> bool:
        return (self.folder / f"epoch-{epoch}.jsonl").exists()

    def publish(self, epoch: int, transfer_records: list[tuple[str, str]], switch: tuple[int, object] | None = None,
                handoff: dict | None = None) -> int:
        """Publish epoch `epoch`: the transfer records (Kafka-style `(key, json)` pairs of
        `state_transfer.records`) and, for the routers, with `switch` = (k, target) the k-th switch
        and with `handoff` a HANDOFF step (`Handoff.CONTROL_KEY` of the JVM stage), in one record.
        Idempotent: a published epoch is kept as it is. Returns the records' count."""
        router = {"epoch": epoch, "slot": SWITCH_SLOT}
        if switch is not None:
            router.update(switch=switch[0], target=switch[1])
        if handoff is not None:
            router["handoff"] = handoff
        lines = [json.dumps(router, separators=(",", ":"))] if len(router) > 2 else []
        lines += [value for _, value in transfer_records]
        _write_once(self.folder / f"epoch-{epoch}.jsonl", "".join(line + "\n" for line in lines))
        return len(lines)

    def records(self, epoch: int) -> list[dict]:
        """A published epoch's records (parsed)."""
        return [json.loads(line) for line in (self.folder / f"epoch-{epoch}.jsonl").read_text().splitlines() if line]

    def abort(self) -> None:
        (self.folder / "abort").write_text("")

    def reopen(self) -> None:
        """A new driver attempt: a previous attempt's `abort` no longer holds."""
        (self.folder / "abort").unlink(missing_ok=True)


class _Reader(SimpleDataSourceStreamReader):
    def __init__(self, folder: str):
        self.folder = Path(folder)

    def _epochs(self, prefix: str) -> list[int]:
        return sorted(int(p.name[len(prefix) + 1:].split(".")[0]) for p in self.folder.glob(f"{prefix}-*"))

    def initialOffset(self) -> dict:
        return {"epoch": 0}

    def read(self, start: dict) -> tuple:
        """The records of the epochs published after `start`, and the last one's offset; at a
        barrier (an epoch requested and not published) it waits for the publication first."""
        epochs = self._epochs("request") + self._epochs("epoch")
        if not epochs:
            return iter(()), {"epoch": int(start["epoch"])}
        epoch = max(epochs)
        published = self.folder / f"epoch-{epoch}.jsonl"
        if not published.exists():  # requested: the barrier
            _write_once(self.folder / f"barrier-{epoch}.json", json.dumps({"wall_ms": int(time.time() * 1000)}))
            deadline = time.monotonic() + WAIT_S
            while not published.exists():
                if (self.folder / "abort").exists():
                    raise RescaleAborted(f"rescale epoch {epoch}: the driver gave the run up at the barrier")
                if time.monotonic() > deadline:
                    raise TimeoutError(f"rescale epoch {epoch}: not published within {WAIT_S:g} s of the barrier")
                time.sleep(0.02)
        end = {"epoch": max(epoch, int(start["epoch"]))}
        return self.readBetweenOffsets(start, end), end

    def readBetweenOffsets(self, start: dict, end: dict):
        """`epoch, slot, record` of every record of the epochs in (start, end], read now."""
        rows = []
        for epoch in range(int(start["epoch"]) + 1, int(end["epoch"]) + 1):
            for line in (self.folder / f"epoch-{epoch}.jsonl").read_text().splitlines():
                if line:
                    rows.append((epoch, int(json.loads(line)["slot"]), line))
        return iter(rows)

    def commit(self, end: dict) -> None:
        pass


class RescaleChannelSource(DataSource):
    """`spark.readStream.format(FORMAT).option("folder", ...)`: rows `epoch, slot, record`."""

    @classmethod
    def name(cls) -> str:
        return FORMAT

    def schema(self) -> str:
        return SCHEMA

    def simpleStreamReader(self, schema) -> SimpleDataSourceStreamReader:
        return _Reader(self.options["folder"])


def read(spark, folder: Path) -> DataFrame:
    """The channel as a streaming DataFrame (`epoch, slot, record`)."""
    spark.dataSource.register(RescaleChannelSource)
    Path(folder).mkdir(parents=True, exist_ok=True)
    return spark.readStream.format(FORMAT).option("folder", str(folder)).load()


def switch_rows(channel: DataFrame, splitters: int, input_schema: T.StructType, column: str) -> DataFrame:
    """The switch records as rows of the grouping stage's input (`input_schema`, which has `column`):
    one copy per splitter instance, `partition` -1, the record in `column`, every other column empty."""
    columns = control_columns(input_schema, splitter=F.explode(F.sequence(F.lit(0), F.lit(splitters - 1))),
                              partition=F.lit(-1).cast("int"), **{column: F.col("record")})
    return channel.where(F.col("slot") == SWITCH_SLOT).select(*columns)


def transfer_rows(channel: DataFrame, input_schema: T.StructType, column: str) -> DataFrame:
    """The transfer records as rows of the worker-state operator's input (`input_schema` columns,
    `worker` -1, the tuple's columns NULL) with the record in `column`, as `state_transfer.read`
    gives them."""
    columns = control_columns(input_schema, slot=F.col("slot"), worker=F.lit(-1).cast("int"),
                              **{column: F.col("record")})
    return channel.where(F.col("slot") >= 0).select(*columns)
