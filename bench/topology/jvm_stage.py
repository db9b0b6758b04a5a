"""The grouping stage in the JVM (bench/topology/jvm/, `GroupingStage.java`): its jars, built on first
use, and the call that puts it into the query.

ARCHITECTURE.md, "Control plane and data plane": the tuples of a built-in grouping are routed in the
JVM by the Java groupings (groupings/jvm, checked against the same golden vectors as `groupings`),
with their instances in Spark's state store; PySpark builds the query and hands the splitter's
DataFrame to `GroupingStage.apply` through py4j. A grouping with no Java implementation (a variant,
a user's plugin), a parameter the Java port does not take (SLB's `t`, `epsilon`), and every rescale
run take the Python stage (`bench.topology.grouping_stage`); `data_plane` says which, and the run
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


def data_plane(grouping: str, grouping_params: dict, rescale_protocol: str) -> str:
    """"jvm" when the run's grouping stage can run in the JVM (a grouping of JVM_GROUPINGS whose
    parameters are all integers of its JVM_PARAMETERS, no rescale), else "python"."""
    takes = JVM_PARAMETERS.get(grouping, ())
    params_in_java = all(name in takes and isinstance(value, int) and not isinstance(value, bool)
                         for name, value in grouping_params.items())
    jvm = grouping in JVM_GROUPINGS and params_in_java and not rescale_protocol
    return "jvm" if jvm else "python"


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


def apply_grouping(tuples, grouping: str, workers: int, clock: str, params: dict | None = None):
    """`splitter.split` output -> the grouping stage's OUTPUT_SCHEMA rows, routed in the JVM
    (`GroupingStage.apply`) by `grouping` with `params` (JVM_PARAMETERS; None: its defaults);
    `event_ts` is again the event-time column. The session needs `jars()`.

    Raises: py4j's error wrapping IllegalArgumentException for a grouping of no JVM_GROUPINGS or a
    parameter the Java grouping does not take."""
    # deferred: pyspark takes 0.4 s to import, and `jars` (bench.topology.session) needs none of it
    from pyspark.sql import DataFrame

    spark = tuples.sparkSession
    stage = spark._jvm.bench.topology.GroupingStage
    return DataFrame(stage.apply(tuples._jdf, grouping, workers, clock, json.dumps(params or {})), spark)
