"""The JVM grouping stage (`bench.topology.jvm_stage`, bench/topology/jvm/GroupingStage.java) against
the Python stage's pure routing (`grouping_stage.route_batch`) on the session's real Spark.

One batch of tuples of three splitter instances, handed to the stage in a shuffled order, with keys
whose order differs between UTF-16 units and code points: every tuple must get the worker
`route_batch` gives it, the routing summary must be Python's to the pair, and the clock must be
the running maximum of the Kafka timestamps. Across batches and a restart, the stage is checked end to
end by the stream runs (tests/topology/test_e2e.py, tests/simulate: loads equal to the simulator's).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from bench.observer import batches as observed_batches
from bench.observer.batches import routed_figures
from bench.results.batches import timestamps_ms
from bench.stack.resources import ROUTING_SUMMARY, ROUTING_SUMMARY_FILE, routing_summary_keys
from bench.topology import grouping_stage
from bench.topology.grouping_stage import route_batch, routing_summary
from bench.topology.jvm_stage import (JAVA_PORT, JVM_GROUPINGS, JVM_PARAMETERS, apply_grouping, control_column,
                                      control_schema, data_plane, output_schema, parse_port, routed_column)

pytestmark = pytest.mark.spark

KEYS = ["a", "b", "Turkey", "é", "\uff5e", "\U0001f600", "z" * 40, "Ünïcode"]
"""'\uff5e' sorts after '\U0001f600' by UTF-16 units and before it by code points, as Python sorts."""


def tuples(n: int = 3_000, splitters: int = 3, seed: int = 11) -> pd.DataFrame:
    """n tuples, tuple i from Kafka partition i mod (2 x splitters) (so each splitter instance reads
    two partitions), at most 3 tuples per record (`idx`), Kafka timestamps not monotone across
    partitions."""
    rng = np.random.default_rng(seed)
    i = np.arange(n)
    partitions = i % (2 * splitters)
    return pd.DataFrame({
        "splitter": (partitions % splitters).astype(np.int32), "partition": partitions.astype(np.int32),
        "offset": (i // (2 * splitters) // 3).astype(np.int64), "idx": (i // (2 * splitters) % 3).astype(np.int32),
        "event_ms": 1_700_000_000_000 + 10 * i - 5_000 * (partitions % 2) + rng.integers(0, 3, n),
        "key": rng.choice(KEYS, size=n, p=[0.3, 0.1, 0.2, 0.1, 0.1, 0.1, 0.05, 0.05]),
        "count": rng.integers(1, 4, n).astype(np.int64),
    })


def summaries(routed: pd.DataFrame) -> list[str]:
    """The routing summaries of a stage's output (one per splitter instance), canonical JSON, sorted."""
    return sorted(json.dumps(json.loads(s), sort_keys=True) for s in routed["routed"].dropna())


def routing(routed: pd.DataFrame) -> list[tuple]:
    """(worker, key, event ms, count) of every routed tuple, sorted: the routing as a multiset."""
    ms = timestamps_ms(routed["event_ts"]).tolist()
    return sorted(zip(routed["worker"].astype(int), routed["key"], ms, routed["count"].astype(int)))


def stream(spark, table: pd.DataFrame, folder: Path):
    """`table` as one micro-batch of a streaming source (a Parquet file; shuffled rows, 4 tasks), with
    `event_ts` and its watermark as the splitter's output has them."""
    folder.mkdir()
    table.sample(frac=1.0, random_state=3).to_parquet(folder / "tuples.parquet", index=False)
    return (spark.readStream.schema(spark.createDataFrame(table.head(1)).schema).parquet(str(folder))
            .repartition(4)
            .selectExpr("splitter", "partition", "offset", "idx", "timestamp_millis(event_ms) AS event_ts", "key",
                        "count")
            .withWatermark("event_ts", "1 second"))


def run_once(routed, folder: Path) -> pd.DataFrame:
    """The rows a streaming DataFrame emits over its input (trigger availableNow), as pandas."""
    out = []
    query = (routed.writeStream.option("checkpointLocation", str(folder)).outputMode("append")
             .foreachBatch(lambda df, _: out.append(df.toPandas())).trigger(availableNow=True).start())
    query.awaitTermination()
    return pd.concat(out, ignore_index=True)


WITH_PARAMETERS = [
    ("KEY_GROUP", {"max_parallelism": 256}),
    ("VNODE", {"vnodes": 64}),
    # every DYNAMIC_KEY parameter, small enough that keys are split within the 30 s of Kafka time
    ("DYNAMIC_KEY", {"distinct_key_count": 3, "warm_up_ms": 0, "check_interval_ms": 500, "initial_pool_size": 1,
                     "maintenance_period_ms": 2_000, "old_promotion_every": 2}),
]
"""Runs with `--param`: each Java grouping that takes parameters, with values other than its defaults."""


@pytest.mark.parametrize(("grouping", "params"), [(g, {}) for g in JVM_GROUPINGS] + WITH_PARAMETERS,
                         ids=[*JVM_GROUPINGS, *(f"{g}-params" for g, _ in WITH_PARAMETERS)])
def test_the_jvm_stage_routes_and_summarizes_as_route_batch(spark, tmp_path, grouping, params):
    table = tuples()
    jvm = run_once(apply_grouping(stream(spark, table, tmp_path / "in"), grouping, 7, "kafka", params),
                   tmp_path / "cp")
    python = pd.concat(route_batch(None, rows, grouping=grouping, workers=7, params=params, clock="kafka",
                                   routed_column="routed")[0]
                       for _, rows in table.groupby("splitter"))
    assert len(jvm) == len(table) and list(jvm.columns) == ["event_ts", "key", "count", "worker", "routed"]
    assert len(summaries(jvm)) == 3  # one per splitter instance and batch
    assert summaries(jvm) == summaries(python)
    assert routing(jvm) == routing(python)
    if params:  # the parameters matter: the grouping with its defaults routes these tuples otherwise
        defaults = pd.concat(route_batch(None, rows, grouping=grouping, workers=7, params={}, clock="kafka",
                                         routed_column="routed")[0]
                             for _, rows in table.groupby("splitter"))
        assert routing(jvm) != routing(defaults)


def test_only_the_java_groupings_with_parameters_java_takes_take_the_jvm():
    assert [data_plane(g, {}) for g in ("KEY", "D_CHOICES", "toy_groupings:RoundRobin")] == ["jvm", "jvm", "python"]
    assert [data_plane(g, p) for g, p in WITH_PARAMETERS] == ["jvm"] * len(WITH_PARAMETERS)
    assert data_plane("D_CHOICES", {"t": 2}) == "python"  # SLB's T is fixed in the Java port
    assert data_plane("VNODE", {"vnodes": 64.0}) == "python"  # not an integer: Python's error, not Java's


def test_the_parameters_java_takes_are_the_java_librarys(spark):
    java = spark.sparkContext._jvm.groupings.Groupings.PARAMETERS
    assert {g: tuple(java.get(g)) for g in java.keySet()} == JVM_PARAMETERS
    assert tuple(spark.sparkContext._jvm.groupings.Groupings.NAMES) == JVM_GROUPINGS


def java_port(spark, text: str) -> dict[str, tuple[str, ...]]:
    """`Groupings.parsePort` of `text`, in the session's JVM."""
    jvm = spark.sparkContext._jvm
    port = jvm.groupings.Groupings.parsePort(jvm.java.io.BufferedReader(jvm.java.io.StringReader(text)))
    return {name: tuple(port.get(name)) for name in port.keySet()}


def test_both_languages_follow_a_change_of_the_one_list_of_java_groupings(spark):
    """JAVA_PORT is the one source of the Java groupings' names and parameters: edited (a grouping
    added, one dropped, a parameter added, the order changed), both Java's and Python's readings of
    it follow, and they are equal; read as shipped, it is what both sides hold."""
    text = JAVA_PORT.read_text(encoding="utf-8")
    assert java_port(spark, text) == parse_port(text) == {g: JVM_PARAMETERS.get(g, ()) for g in JVM_GROUPINGS}
    edited = "\n".join(line.replace("VNODE = vnodes", "VNODE = vnodes, replicas") for line in text.splitlines()
                       if not line.startswith("SHUFFLE")) + "\n  # a comment\nNEW_ONE =\nFIRST_ONE = a,b\n"
    expected = {**{g: JVM_PARAMETERS.get(g, ()) for g in JVM_GROUPINGS if g != "SHUFFLE"},
                "VNODE": ("vnodes", "replicas"), "NEW_ONE": (), "FIRST_ONE": ("a", "b")}
    assert java_port(spark, edited) == parse_port(edited) == expected
    assert list(java_port(spark, edited)) == list(parse_port(edited)) == list(expected)
    for broken, error in (("KEY\n", "without '='"), ("KEY =\nKEY = a\n", "names KEY twice"),
                          ("KEY = a,\n", "empty parameter name"), ("KEY = a,,b\n", "empty parameter name")):
        with pytest.raises(ValueError, match=error):
            parse_port(broken)
        with pytest.raises(Exception, match=error):
            java_port(spark, broken)



def java_summary_keys(spark, text: str) -> dict[str, str]:
    """`RoutingSummary.parseKeys` of `text`, in the session's JVM: field -> JSON key."""
    jvm = spark.sparkContext._jvm
    keys = jvm.bench.topology.RoutingSummary.parseKeys(jvm.java.io.StringReader(text))
    return {field: keys.get(field) for field in keys.keySet()}


def test_both_languages_follow_a_change_of_the_routing_summarys_keys(spark, monkeypatch):
    """ROUTING_SUMMARY_FILE is the one source of the routing summary's JSON keys: as shipped, the JVM
    stage's, the Python stage's and the observer's are its; edited, both languages' readings follow
    and agree, and the Python writer and the observer's reader follow them too."""
    text = ROUTING_SUMMARY_FILE.read_text(encoding="utf-8")
    summary_class = spark.sparkContext._jvm.bench.topology.RoutingSummary
    shipped = {field: summary_class.KEYS.get(field) for field in summary_class.FIELDS}
    assert java_summary_keys(spark, text) == routing_summary_keys(text)._asdict() == ROUTING_SUMMARY._asdict()
    assert ROUTING_SUMMARY._asdict() == shipped
    edited = text.replace("loads = loads", "loads = weight_per_worker").replace("pairs = pairs", " pairs=routed_pairs ")
    expected = {**ROUTING_SUMMARY._asdict(), "loads": "weight_per_worker", "pairs": "routed_pairs"}
    assert java_summary_keys(spark, edited) == routing_summary_keys(edited)._asdict() == expected
    for broken, error in ((text.replace("released = released", ""), "released"),
                          (text + "placed = placed\n", "placed"),
                          (text.replace("tuples = tuples", "tuples = loads"), "one key|key of its own")):
        with pytest.raises(ValueError, match=error):
            routing_summary_keys(broken)
        with pytest.raises(Exception, match=error):
            java_summary_keys(spark, broken)
    keys = routing_summary_keys(edited)
    monkeypatch.setattr(grouping_stage, "ROUTING_SUMMARY", keys)  # the modules' reading of the edited file
    monkeypatch.setattr(observed_batches, "ROUTING_SUMMARY", keys)
    written = routing_summary(np.array([1, 0, 1]), np.array(["b", "a", "c"]), np.array([2, 1, 3]), 3)
    assert sorted(written) == sorted([keys.loads, keys.tuples, keys.pairs])
    assert routed_figures([json.dumps(written)], 3) == ([1, 5, 0], [1, 2, 0], [("a", 0), ("b", 1), ("c", 1)])

def test_the_python_stage_outputs_the_jvm_stages_schema(spark, tmp_path):
    """One output schema for both grouping stages, the JVM's (`GroupingStage.OUTPUT`): on the same input,
    the Python stage's DataFrame has the JVM stage's schema, summary column included."""
    routed_in_java = apply_grouping(stream(spark, tuples(10), tmp_path / "java"), "KEY", 7, "kafka")
    routed_in_python = grouping_stage.apply_grouping(stream(spark, tuples(10), tmp_path / "python"), "KEY", 7, {},
                                                     "kafka")
    # names and types: nullability and the event-time column's watermark metadata are the engine's
    assert routed_in_python.schema.simpleString() == routed_in_java.schema.simpleString() == \
        output_schema(spark).simpleString()
    jvm = spark.sparkContext._jvm.bench.topology.GroupingStage
    assert routed_column(spark) == jvm.ROUTED == output_schema(spark).fieldNames()[-1]
    assert control_column(spark) == jvm.CONTROL and control_column(spark) in control_schema(spark).fieldNames()


def test_a_parameter_the_java_grouping_does_not_take_is_refused_before_the_query_runs(spark, tmp_path):
    with pytest.raises(Exception, match=r"D_CHOICES takes no parameter \[t\] in the Java port"):
        apply_grouping(stream(spark, tuples(10), tmp_path / "in"), "D_CHOICES", 7, "kafka", {"t": 2})


def test_a_grouping_with_no_java_implementation_is_refused_by_the_stage(spark, tmp_path):
    with pytest.raises(Exception, match="no Java grouping toy_groupings:RoundRobin"):
        apply_grouping(stream(spark, tuples(10), tmp_path / "in"), "toy_groupings:RoundRobin", 7, "kafka")


RESCALES = [("KEY", (9,)), ("KEY_GROUP", (9, 5)), ("VNODE", (["+7", "+8"], ["-0"]))]
"""A rescale per rescalable grouping from 7 workers: KEY's worker count, Flink's new parallelisms,
RisingWave's added and removed parallel units (the last switch's routing is the one in force)."""


@pytest.mark.parametrize(("grouping", "targets"), RESCALES, ids=[g for g, _ in RESCALES])
def test_a_due_switch_installs_the_control_planes_routing_before_the_batch(spark, tmp_path, grouping, targets):
    from bench.rescale.plan import java_routing, routing_at
    from bench.topology.jvm_stage import rescale_spec

    table = tuples()
    routings = tuple(java_routing(routing_at(grouping, 7, {}, list(targets[:k]))) for k in range(1, len(targets) + 1))
    width = 12
    # STOP_THE_WORLD's switches, both due at batch 0: every instance installs the last routing first
    spec = rescale_spec(routings, tuple((0, t) for t in targets), width)
    jvm = run_once(apply_grouping(stream(spark, table, tmp_path / "in"), grouping, 7, "kafka", {}, spec),
                   tmp_path / "cp")
    last = routing_at(grouping, 7, {}, list(targets))  # the control plane's routing after the last event
    owners = table.assign(worker=[last.owner_of(k) for k in table["key"]])
    expected = [json.dumps(routing_summary(rows["worker"].to_numpy(), rows["key"].to_numpy(),
                                           rows["count"].to_numpy(), width), sort_keys=True)
                for _, rows in owners.groupby("splitter")]
    assert summaries(jvm) == sorted(expected)
    assert routing(jvm) == sorted(zip(owners["worker"], owners["key"], owners["event_ms"], owners["count"]))
    unscaled = pd.concat(route_batch(None, rows, grouping=grouping, workers=7, params={}, clock="kafka",
                                     routed_column="routed")[0]
                         for _, rows in table.groupby("splitter"))
    assert routing(jvm) != routing(unscaled)  # the switch mattered
    # a switch not due yet (batch 5) leaves the routing as it was
    later = rescale_spec(routings, tuple((5, t) for t in targets), width)
    waiting = run_once(apply_grouping(stream(spark, table, tmp_path / "in2"), grouping, 7, "kafka", {}, later),
                       tmp_path / "cp2")
    assert routing(waiting) == routing(unscaled)


def test_a_routing_the_grouping_cannot_install_is_refused_before_the_query(spark, tmp_path):
    from pyspark.errors import IllegalArgumentException

    spec = json.dumps({"width": 7, "routings": [{"owners": [0, 1]}], "switch_batches": []})
    with pytest.raises(IllegalArgumentException, match="has 128 groups, got an owner table of 2"):
        apply_grouping(stream(spark, tuples(30), tmp_path / "in"), "KEY_GROUP", 7, "kafka", {}, spec)
    with pytest.raises(IllegalArgumentException, match="KEY cannot install the routing"):
        apply_grouping(stream(spark, tuples(30), tmp_path / "in2"), "KEY", 7, "kafka", {}, spec)
    handoff = json.dumps({"width": 7, "routings": [{"workers": 9}], "switch_batches": [], "handoff": True})
    with pytest.raises(IllegalArgumentException, match="a HANDOFF is a live rescale"):
        apply_grouping(stream(spark, tuples(30), tmp_path / "in3"), "KEY", 7, "kafka", {}, handoff)
    controls = spark.createDataFrame([], control_schema(spark))
    with pytest.raises(IllegalArgumentException, match="HANDOFF hands over key groups or vnodes; KEY has none"):
        apply_grouping(stream(spark, tuples(30), tmp_path / "in4"), "KEY", 7, "kafka", {}, handoff, controls)


def test_the_routers_of_a_real_time_query_keep_the_rescale_channels_barrier(spark, tmp_path):
    """ChannelBarrier.java (SHARED_STATE, LEARNER and HANDOFF in real-time mode): a request is claimed
    for the batch after the first call's, a claim made first holds, a batch at or after its switch
    batch routes by the published switch, a HANDOFF's step published without a request is claimed
    only in a HANDOFF, and a barrier whose epoch the driver gave up fails the call."""
    from py4j.protocol import Py4JJavaError

    from bench.topology.rescale_channel import Channel

    barrier = spark.sparkContext._jvm.bench.topology.ChannelBarrier
    channel = Channel(tmp_path / "channel")
    folder = str(channel.folder)

    def due(batch: int, fresh: bool, handoff: bool = False) -> int:
        return barrier.due(folder, batch, fresh, handoff).switchNo()

    assert due(3, False) == 0
    channel.request(1)
    assert due(3, False) == 0  # kept for batch 3: read again at batch 4's first call
    assert channel.barrier(1) is None
    assert due(3, True) == 0  # a control row (the driver's wake) reads it now
    assert channel.barrier(1)["switch_batch"] == 4 and channel.barrier_wall_ms(1) > 0
    channel.publish(1, [], switch=(1, {"owners": [0]}))
    assert due(4, False) == 1
    (channel.folder / "barrier-2.json").write_text(json.dumps({"wall_ms": 1, "switch_batch": 9}))
    channel.request(2)
    assert due(5, False) == 1
    assert channel.barrier(2)["switch_batch"] == 9  # the first claim holds

    steps = Channel(tmp_path / "steps")
    steps.publish(1, [], switch=(1, {"owners": [0]}), handoff={"pending": {"3": 0}, "hold": [3]})
    assert barrier.due(str(steps.folder), 6, True, False).steps().size() == 0 and steps.barrier(1) is None
    assert barrier.due(str(steps.folder), 6, True, True).steps().size() == 0  # claimed for batch 7
    assert steps.barrier(1)["switch_batch"] == 7
    applied = barrier.due(str(steps.folder), 7, False, True)
    assert applied.switchNo() == 1 and [json.loads(s.toString())["handoff"]["hold"] for s in applied.steps()] == [[3]]

    channel.abort()
    with pytest.raises(Py4JJavaError, match="gave the run up at the barrier"):
        due(9, False)
    assert not list(channel.folder.glob(".barrier-*"))
