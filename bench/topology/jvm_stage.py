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

The stage is compiled with `javac` against the jars of the installed pyspark, the Spark that runs
it, so it never needs Spark from Maven; its jar and the Java groupings' go into `spark.jars`, which
ships them to a cluster's executors too (`bench.topology.session`).
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import importlib.util
import json
import subprocess
import tempfile
from pathlib import Path

from bench.stack import maven, tools
from bench.stack.artifacts import hdr_histogram_jars

JVM_GROUPINGS = ("SHUFFLE", "KEY", "PARTIAL_KEY", "DYNAMIC_KEY", "D_CHOICES", "W_CHOICES", "KEY_GROUP", "VNODE")
"""The groupings of the Java library (`groupings.Groupings.NAMES`, checked by a test)."""

JVM_PARAMETERS: dict[str, tuple[str, ...]] = {
    "DYNAMIC_KEY": ("distinct_key_count", "warm_up_ms", "check_interval_ms", "initial_pool_size",
                    "maintenance_period_ms", "old_promotion_every"),
    "KEY_GROUP": ("max_parallelism",),
    "VNODE": ("vnodes",),
}
"""The parameters (`--param`, integers) the Java groupings take, by grouping
(`groupings.Groupings.PARAMETERS`, checked by a test); SLB's `t` and `epsilon` are not among them."""

STAGE_DIR = Path(__file__).with_name("jvm")
"""GroupingStage.java under src/main/java; the built jar under target/."""

STAGE_JAR = STAGE_DIR / "target" / "grouping-stage.jar"
GROUPINGS_JAR = "stream-groupings.jar"


CONTROL_COLUMN = "control"
"""The column of a control row (`GroupingStage.CONTROL_INPUT`) that carries a live rescale's switch
record (`bench.topology.rescale_channel`); NULL on tuple rows."""


def data_plane(grouping: str, grouping_params: dict) -> str:
    """"jvm" when the run's grouping stage can run in the JVM (a grouping of JVM_GROUPINGS whose
    parameters are all integers of its JVM_PARAMETERS), else "python"."""
    takes = JVM_PARAMETERS.get(grouping, ())
    params_in_java = all(name in takes and isinstance(value, int) and not isinstance(value, bool)
                         for name, value in grouping_params.items())
    return "jvm" if grouping in JVM_GROUPINGS and params_in_java else "python"


def rescale_spec(routings: tuple, switches: tuple, width: int, handoff: bool = False) -> str:
    """The JVM stage's `rescale` argument (`GroupingStage.apply`), JSON: the routing in force after
    each event of the schedule (`TopologyConfig.rescale_routings`), the switch batches of
    STOP_THE_WORLD's `switches` so far ((switch batch, target), in order), the routing summaries'
    width M, and `handoff` for a HANDOFF (its routers keep the hand-off's state, `Handoff.java`).
    `{}` for a run without a rescale."""
    if not routings:
        return "{}"
    return json.dumps({"width": width, "routings": list(routings), "switch_batches": [int(b) for b, _ in switches],
                       "handoff": handoff})


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
    """The Java groupings' jar, HdrHistogram's and the stages' (GroupingStage, WorkerTask, WorkerState),
    built when missing or older than their sources.

    Raises: ToolMissing (java, javac, mvn); StackError when Maven cannot resolve HdrHistogram;
    RuntimeError with the compiler's errors."""
    groupings_jar = maven.build(maven.GROUPINGS_JVM_DIR, GROUPINGS_JAR, "the Java groupings", quiet)[0]
    libraries = [groupings_jar, *hdr_histogram_jars(quiet=quiet)]
    sources = sorted((STAGE_DIR / "src" / "main" / "java").rglob("*.java"))
    digest = hashlib.sha256(importlib.metadata.version("pyspark").encode())
    for library in libraries:
        digest.update(library.name.encode() + b"\0" + library.read_bytes())
    for source in sources:
        digest.update(source.name.encode() + b"\0" + source.read_bytes())
    stamp = STAGE_JAR.with_suffix(".built")
    with maven.build_lock():
        if stamp.is_file() and stamp.read_text().strip() == digest.hexdigest() and STAGE_JAR.is_file():
            return [*libraries, STAGE_JAR]
        tools.require(tools.JAVAC)
        if not quiet:
            print("compiling the JVM grouping stage (bench/topology/jvm) ...", flush=True)
        spark_jars = Path(importlib.util.find_spec("pyspark").origin).parent / "jars"
        with tempfile.TemporaryDirectory(prefix="grouping-stage-") as classes:
            compiled = subprocess.run(["javac", "--release", "17", "-nowarn", "-d", classes, "-cp",
                                       ":".join([f"{spark_jars}/*", *map(str, libraries)]), *map(str, sources)],
                                      capture_output=True, text=True, check=False)
            if compiled.returncode != 0:
                raise RuntimeError("javac could not compile the JVM grouping stage:\n" + compiled.stderr[-2000:])
            STAGE_JAR.parent.mkdir(parents=True, exist_ok=True)
            subprocess.run(["jar", "cf", str(STAGE_JAR), "-C", classes, "."], check=True)
        stamp.write_text(digest.hexdigest() + "\n")
    return [*libraries, STAGE_JAR]


def apply_grouping(tuples, grouping: str, workers: int, clock: str, params: dict | None = None,
                   rescale: str = "{}", controls=None, real_time: bool = False):
    """`splitter.split` output -> the grouping stage's OUTPUT_SCHEMA rows, routed in the JVM
    (`GroupingStage.apply`) by `grouping` with `params` (JVM_PARAMETERS; None: its defaults);
    `event_ts` is again the event-time column. The session needs `jars()`.

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


def control_schema(spark):
    """`GroupingStage.CONTROL_INPUT`, read from the session's JVM: a switch record's row on the JVM
    stage's input (pyspark type)."""
    # deferred: as in apply_grouping
    from pyspark.sql import types as T

    return T.StructType.fromJson(json.loads(spark._jvm.bench.topology.GroupingStage.CONTROL_INPUT.json()))
