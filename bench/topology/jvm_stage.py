"""The grouping stage in the JVM (bench/topology/jvm/, `GroupingStage.java`): its jars, built on first
use, and the call that puts it into the query.

docs/architecture.md, "Control plane and data plane": the tuples of a built-in grouping are routed in the
JVM by the Java groupings (groupings/jvm, checked against the same golden vectors as `groupings`),
with their instances in Spark's state store; PySpark builds the query and hands the splitter's
DataFrame to `GroupingStage.apply` through py4j. A rescale run hands it every routing of its
schedule, as the control plane computed them (`rescale_spec`), and a live rescale's switches and
HANDOFF steps as control rows. A grouping with no Java implementation (a variant, a user's plugin)
and a parameter the Java port does not take (SLB's `t`, `epsilon`) take the Python stage
(`bench.topology.grouping_stage`), which does not rescale; `data_plane` says which, and the run
records it.

The stages are a module of the repository's Maven reactor (bench/topology/jvm/pom.xml, built with the
Java groupings by `bench.stack.maven.topology_jars`, which `make install` runs), with Spark as a
provided dependency; their jar, the Java groupings' and HdrHistogram's go into `spark.jars`, which
ships them to a cluster's executors too (`bench.topology.session`).
"""

from __future__ import annotations

import json
from pathlib import Path

from bench.stack import maven
from bench.stack.resources import parse_properties


JAVA_PORT = maven.GROUPINGS_JVM_DIR / "src" / "main" / "resources" / "groupings" / "java-port.properties"
"""The groupings of the Java library and the integer parameters each takes: the one list that both
`groupings.Groupings` (NAMES, PARAMETERS, from its jar) and this module read."""


def parse_port(text: str) -> dict[str, tuple[str, ...]]:
    """JAVA_PORT's format (`Groupings.parsePort`): one line per grouping, `NAME = p1, p2` (nothing after
    `=`: no parameter); blank lines and lines starting with `#` are skipped. Returns grouping name ->
    its parameters, in the order of the lines.

    Raises: ValueError for a line without `=`, a name given twice or an empty parameter name."""
    port: dict[str, tuple[str, ...]] = {}
    for name, rest in parse_properties(text, JAVA_PORT.name).items():
        port[name] = tuple(p.strip() for p in rest.split(",")) if rest else ()
        if "" in port[name]:
            raise ValueError(f"an empty parameter name for {name} in {JAVA_PORT.name}")
    return port


_PORT = parse_port(JAVA_PORT.read_text(encoding="utf-8"))

JVM_GROUPINGS: tuple[str, ...] = tuple(_PORT)
"""The groupings of the Java library, in JAVA_PORT's order (`groupings.Groupings.NAMES`)."""

JVM_PARAMETERS: dict[str, tuple[str, ...]] = {name: params for name, params in _PORT.items() if params}
"""The parameters (`--param`, integers) the Java groupings take, by grouping, for those that take any
(`groupings.Groupings.PARAMETERS`); SLB's `t` and `epsilon` are not among them."""


def data_plane(grouping: str, grouping_params: dict) -> str:
    """"jvm" when the run's grouping stage can run in the JVM (a grouping of JVM_GROUPINGS whose
    parameters are all integers of its JVM_PARAMETERS), else "python"."""
    takes = JVM_PARAMETERS.get(grouping, ())
    params_in_java = all(name in takes and isinstance(value, int) and not isinstance(value, bool)
                         for name, value in grouping_params.items())
    return "jvm" if grouping in JVM_GROUPINGS and params_in_java else "python"


def rescale_spec(routings: tuple, switches: tuple, width: int, handoff: bool = False,
                 channel: Path | None = None) -> str:
    """The JVM stage's `rescale` argument (`GroupingStage.apply`), JSON: the routing in force after
    each event of the schedule (`TopologyConfig.rescale_routings`), the switch batches of
    STOP_THE_WORLD's `switches` so far ((switch batch, target), in order), the routing summaries'
    width M, `handoff` for a HANDOFF (its routers keep the hand-off's state, `Handoff.java`), and
    for a real-time query's SHARED_STATE, LEARNER or HANDOFF the rescale channel's folder, whose
    barrier its routers keep (`ChannelBarrier.java`). `{}` for a run without a rescale."""
    if not routings:
        return "{}"
    spec = {"width": width, "routings": list(routings), "switch_batches": [int(b) for b, _ in switches],
            "handoff": handoff}
    if channel is not None:
        spec["channel"] = str(channel)
    return json.dumps(spec)


JVM_OPERATOR = "transformWithStateExec"
"""The `operatorName` a JVM `transformWithState` writes into a checkpoint's operator metadata (a
Python one writes another: PySpark 4.2's `TransformWithStateInPySparkExec`)."""

STATE_VARIABLES = {"grouping": "grouping stage", "per_key": "worker-state operator"}
"""The state variable that names each transformWithState operator of the topology."""


def written_planes(checkpoint: Path) -> dict[str, str]:
    """Which kind of operator wrote each transformWithState operator of a query checkpoint, from its
    operator metadata (`state/<operator>/_metadata/v2/<batch>`: a line `v2`, then JSON with
    `operatorName` and the state variables): STATE_VARIABLES' name -> "jvm" or "python". Operators
    not yet written (a checkpoint without a committed batch) are missing."""
    planes: dict[str, str] = {}
    for path in sorted(Path(checkpoint).glob("state/*/_metadata/v2/*")):
        if path.name.startswith("."):
            continue
        text = path.read_text().split("\n", 1)
        info = json.loads(text[1]) if len(text) == 2 and text[1].strip() else {}
        name = info.get("operatorInfo", {}).get("operatorName", "")
        variables = json.loads(info.get("operatorPropertiesJson") or "{}").get("stateVariables", [])
        for variable in variables:
            if variable.get("stateName") in STATE_VARIABLES:
                planes[variable["stateName"]] = "jvm" if name == JVM_OPERATOR else "python"
    return planes


def jars(quiet: bool = True) -> list[Path]:
    """The stages' jar (GroupingStage, WorkerTask, WorkerState), the Java groupings' and HdrHistogram's,
    built by Maven when missing or older than their sources (`bench.stack.maven.topology_jars`).

    Raises: ToolMissing (java, mvn); RuntimeError with Maven's error lines when the build fails."""
    return maven.topology_jars(quiet)


def apply_grouping(tuples, grouping: str, workers: int, clock: str, params: dict | None = None,
                   rescale: str = "{}", controls=None, real_time: bool = False):
    """`splitter.split` output -> the grouping stage's OUTPUT rows (`output_schema`), routed in the JVM
    (`GroupingStage.apply`) by `grouping` with `params` (JVM_PARAMETERS; None: its defaults);
    `event_ts` is again the event-time column, except in Real-Time Mode without `controls`, where the
    operator runs with no time mode: the caller defines the watermark on its output and none on
    `tuples` (Spark refuses a watermark below another). The session needs `jars()`.

    Args: rescale: `rescale_spec`; controls: a live rescale's switch rows (`control_schema`,
        `rescale_channel.switch_rows`), or None; real_time: the query runs in Real-Time Mode (one
        row per call: each task keeps its instances in memory, and no routing summary is built).
    Raises: pyspark.errors.IllegalArgumentException (the JVM's, converted by PySpark) for a grouping
        of no JVM_GROUPINGS, a parameter the Java grouping does not take, or a routing it cannot
        install."""
    # deferred: pyspark takes 0.4 s to import, and `jars` (bench.topology.session) needs none of it
    from pyspark.sql import DataFrame

    spark = tuples.sparkSession
    stage = spark._jvm.bench.topology.GroupingStage
    return DataFrame(stage.apply(tuples._jdf, grouping, workers, clock, json.dumps(params or {}), rescale,
                                 None if controls is None else controls._jdf, real_time), spark)


def output_schema(spark):
    """`GroupingStage.OUTPUT`, read from the session's JVM: the routed tuples of either grouping stage
    (this one, and the Python one of `bench.topology.grouping_stage`), pyspark type."""
    return java_schema(spark.sparkContext._jvm.bench.topology.GroupingStage.OUTPUT)


def routed_column(spark) -> str:
    """`GroupingStage.ROUTED`, read from the session's JVM: the OUTPUT column that carries one
    splitter instance's routing summary per batch (on one row; NULL on the others)."""
    return spark.sparkContext._jvm.bench.topology.GroupingStage.ROUTED


def control_schema(spark):
    """`GroupingStage.CONTROL_INPUT`, read from the session's JVM: a switch record's row on the JVM
    stage's input (pyspark type)."""
    return java_schema(spark.sparkContext._jvm.bench.topology.GroupingStage.CONTROL_INPUT)


def control_column(spark) -> str:
    """`GroupingStage.CONTROL`, read from the session's JVM: the column of a control row that carries a
    live rescale's switch record (`bench.topology.rescale_channel`); NULL on tuple rows."""
    return spark.sparkContext._jvm.bench.topology.GroupingStage.CONTROL


def java_schema(java_struct):
    """A Java `StructType` (read through py4j) as a pyspark StructType: a schema written once, in Java."""
    # deferred: as in apply_grouping
    from pyspark.sql import types as T

    return T.StructType.fromJson(json.loads(java_struct.json()))
