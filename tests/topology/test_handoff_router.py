"""HANDOFF at the JVM grouping stage's routers (bench/topology/jvm/.../Handoff.java), on the session's
real Spark: pending units go to their old owner, held units' tuples wait in the router's state, a
whitelist sends them to the new owner first and reports them (`released`), every step applies once
per router, and a released tuple below the watermark or a step naming a unit that is not pending is
a clear error.

The stream: one Parquet file per micro-batch (`maxFilesPerTrigger` 1), each with the batch's
tuples and, for a step's batch, its control record once per splitter instance, as the rescale
channel gives them (bench/topology/rescale_channel.py). The whole hand-off in a running query, with
the driver, the state moves and a killed driver, is tests/topology/test_rescale_in_the_running_query.py.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from bench.observer.batches import released_figures
from bench.rescale.ownership import PartialRouting, violations
from bench.rescale.plan import java_routing, routing_at
from bench.results.batches import timestamps_ms
from bench.topology.jvm_stage import apply_grouping, rescale_spec
from groupings.rescaling import handoff_rounds

pytestmark = pytest.mark.spark

KEYS = [f"k{i}" for i in range(60)]
SPLITTERS = 3
T0 = 1_700_000_000_000
BEFORE, AFTER = routing_at("VNODE", 4, {}, []), routing_at("VNODE", 4, {}, [6])
MOVED = [u for u, (a, b) in enumerate(zip(BEFORE.assignment(), AFTER.assignment())) if a != b]
HOT = sorted({int(AFTER.group_of(k)) for k in KEYS} & set(MOVED))
"""The moved vnodes that hold keys of the input (the others have no tuple to hold)."""


def tuples(batch: int, n: int, t0: int, splitters=range(SPLITTERS)) -> pd.DataFrame:
    """n tuples per splitter instance of `splitters` (one Kafka partition each), event time from t0."""
    rng = np.random.default_rng(batch)
    frames = [pd.DataFrame({"splitter": np.int32(s), "partition": np.int32(s),
                            "offset": np.arange(n, dtype=np.int64) + 1_000 * batch, "idx": np.int32(0),
                            "event_ms": t0 + np.arange(n, dtype=np.int64), "key": rng.choice(KEYS, size=n),
                            "count": np.int64(1), "control": None}) for s in splitters]
    return pd.concat(frames, ignore_index=True)


def controls(record: dict) -> pd.DataFrame:
    """A switch-slot record, one copy per splitter instance (`rescale_channel.switch_rows`)."""
    return pd.DataFrame({"splitter": np.arange(SPLITTERS, dtype=np.int32), "partition": np.int32(-1),
                         "offset": None, "idx": None, "event_ms": None, "key": None, "count": None,
                         "control": json.dumps({"slot": -1, **record})})


SCHEMA = pa.schema([("splitter", pa.int32()), ("partition", pa.int32()), ("offset", pa.int64()), ("idx", pa.int32()),
                    ("event_ms", pa.int64()), ("key", pa.string()), ("count", pa.int64()), ("control", pa.string())])


SCHEMA_DDL = ", ".join(f"`{f.name}` {'INT' if f.type == pa.int32() else 'BIGINT' if f.type == pa.int64() else 'STRING'}"
                       for f in SCHEMA)


def write_batches(folder: Path, batches: list[pd.DataFrame]) -> None:
    """One Parquet file per batch, in order (modification times one second apart)."""
    folder.mkdir()
    for b, frame in enumerate(batches):
        path = folder / f"batch-{b:03d}.parquet"
        pq.write_table(pa.Table.from_pandas(frame, schema=SCHEMA, preserve_index=False), path)
        os.utime(path, (1_000_000 + b, 1_000_000 + b))


def run(spark, folder: Path, batches: list[pd.DataFrame], watermark: str = "1 hour") -> dict[int, pd.DataFrame]:
    """The JVM stage (VNODE 4 -> 6 with HANDOFF) over `batches`, one micro-batch each: batch id -> its output."""
    write_batches(folder / "in", batches)
    source = (spark.readStream.schema(SCHEMA_DDL).option("maxFilesPerTrigger", 1).parquet(str(folder / "in"))
              .selectExpr("splitter", "partition", "offset", "idx", "timestamp_millis(event_ms) AS event_ts",
                          "key", "count", "control")
              .withWatermark("event_ts", watermark))
    spec = rescale_spec((java_routing(AFTER),), (), 6, handoff=True)
    routed = apply_grouping(source.where("control IS NULL").drop("control"), "VNODE", 4, "kafka", {}, spec,
                            source.where("control IS NOT NULL"))
    out: dict[int, pd.DataFrame] = {}
    query = (routed.writeStream.option("checkpointLocation", str(folder / "cp")).outputMode("append")
             .foreachBatch(lambda df, b: out.__setitem__(b, df.toPandas())).trigger(availableNow=True).start())
    query.awaitTermination()
    return out


def scaleup(hold: list[int]) -> dict:
    return {"epoch": 1, "switch": 1, "target": 6,
            "handoff": {"pending": {str(u): BEFORE.assignment()[u] for u in MOVED}, "hold": hold}}


def test_a_whole_hand_off_sends_every_tuple_once_held_ones_late_and_never_to_a_worker_without_the_state(
        spark, tmp_path):
    """Rounds of 2 units: step j in batch 2j (with a copy read again in 2j + 1: applied once), a
    plain batch between steps, splitter 2 without a tuple in batch 0 (its first tuples, in batch 1,
    find the routing and the hand-off of batch 0's step). Every tuple comes out exactly once; every routed pair is at
    the owner the ownership check expects; the held tuples come out in the whitelist's batch,
    reported per hold batch; after the last step the router routes as the new routing alone."""
    rounds = handoff_rounds(MOVED, set(HOT), 2)
    batches, switches, released = [], [], set()
    for step in range(len(rounds) + 1):
        record = scaleup(rounds[0]) if step == 0 else {
            "epoch": step + 1, "handoff": {"whitelist": rounds[step - 1], "hold": rounds[step] if step < len(rounds)
                                           else []}}
        if step:
            released |= set(rounds[step - 1])
            switches.append((2 * step, PartialRouting(BEFORE, AFTER, frozenset(released))))
        splitters = range(2) if step == 0 else range(SPLITTERS)
        batches.append(pd.concat([tuples(2 * step, 80, T0 + 1_000 * step, splitters), controls(record)]))
        batches.append(pd.concat([tuples(2 * step + 1, 80, T0 + 1_000 * step + 500), controls(record)]))
    batches.append(tuples(len(batches), 80, T0 + 100_000))  # after the hand-off
    out = run(spark, tmp_path, batches)

    sent = pd.concat(out.values(), ignore_index=True)
    given = out_of(pd.concat(batches))
    as_multiset = lambda f, ms: sorted(zip(f["key"], ms, f["count"].astype(int)))  # noqa: E731
    assert as_multiset(sent, timestamps_ms(sent["event_ts"]).tolist()) == \
        as_multiset(given, given["event_ms"].astype(int).tolist())
    pairs = {b: {"pairs": sorted(set(zip(f["key"], f["worker"].astype(int))))} for b, f in out.items()}
    assert violations(pairs, switches, BEFORE) == []
    assert switches[-1][1].released == frozenset(MOVED)
    last = out[len(batches) - 1]
    assert last["worker"].tolist() == [AFTER.owner_of(k) for k in last["key"]]

    held_in = lambda b, units: int(sum(AFTER.group_of(k) in units for k in out_of(batches[b])["key"]))  # noqa: E731
    for step in range(1, len(rounds) + 1):
        hold_batch, units = 2 * step - 2, set(rounds[step - 1])
        assert not any(AFTER.group_of(k) in units for k in out[hold_batch]["key"])  # kept, not sent
        expected = [[b, held_in(b, units)] for b in (hold_batch, hold_batch + 1) if held_in(b, units)]
        assert released_figures(out[2 * step]["routed"].dropna().tolist()) == expected
    assert sum(n for b in out for _, n in released_figures(out[b]["routed"].dropna().tolist())) > 0


def out_of(batch: pd.DataFrame) -> pd.DataFrame:
    """A batch's tuple rows (its control rows left out)."""
    return batch[batch["control"].isna()]


def test_a_released_tuple_below_the_watermark_is_a_clear_error(spark, tmp_path):
    """Held at T0, the watermark 100 s later by the time of release (delay 1 s): Spark would refuse
    to emit it, so the router says which option to raise."""
    batches = [pd.concat([tuples(0, 80, T0), controls(scaleup(HOT))]),
               tuples(1, 80, T0 + 100_000),
               pd.concat([tuples(2, 10, T0 + 101_000), controls({"epoch": 2, "handoff": {"whitelist": HOT}})])]
    with pytest.raises(Exception, match="past the watermark .* raise --watermark-delay-s"):
        run(spark, tmp_path, batches, watermark="1 second")


def test_a_step_naming_a_unit_that_is_not_pending_is_refused(spark, tmp_path):
    not_moved = next(u for u in range(len(MOVED) + 1) if u not in MOVED)
    batches = [pd.concat([tuples(0, 20, T0), controls(scaleup([]))]),
               pd.concat([tuples(1, 20, T0 + 1_000), controls({"epoch": 2, "handoff": {"whitelist": [not_moved]}})])]
    with pytest.raises(Exception, match=f"unit {not_moved} whitelisted but not pending"):
        run(spark, tmp_path, batches)
