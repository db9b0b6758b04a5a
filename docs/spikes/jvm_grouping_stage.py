"""JVM grouping stage spike (ARCHITECTURE.md, "Control plane and data plane"; issue 37): can the
grouping stage run in the JVM, a Java StatefulProcessor routing with the project's Java groupings
(`groupings/jvm`), built from PySpark through py4j, chained into the event-time window stage, its
grouping instances restored from Spark's state store every batch and across a query restart, and
route exactly as the Python groupings do?

JvmGroupingStage.java (beside this file) is the stage: transformWithState keyed by splitter, the
instance Java-serialized in a ValueState, `event_ts` re-declared as the event-time column. The input
is 20,000 Zipf-skewed tuples of 2 splitters (Kafka partition = splitter), 10 ms apart, in 8 JSON files
read one per batch; the query (stage -> 1 s event-time windows per worker and key) runs on the first
4 files, stops, and resumes from its checkpoint on the rest, with two late "flush" tuples that move
the watermark past every window. Each window count is compared with the Python grouping's routing of
the same tuples (`groupings.create_grouping`, one instance per splitter, Kafka order).

Usage: .venv/bin/python docs/spikes/jvm_grouping_stage.py [GROUPING ...]   (default: the six of the
Java port, `groupings.Groupings.NAMES`; needs `make install`, not the stack). Prints per grouping "exact" or the
differences. Measured 2026-11-27 (PySpark 4.2.0, JDK 17): all six exact (docs/performance.md, "What
bounds the ratio").
"""
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

import numpy as np
import pandas as pd
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from bench.stack.maven import GROUPINGS_JVM_DIR, build
from bench.topology.session import build_session, connector_jars
from groupings import create_grouping

WORKERS, SPLITTERS, TUPLES, FILES, STEP_MS, T0_MS = 10, 2, 20_000, 8, 10, 1_700_000_000_000
SCHEMA = "splitter int, partition int, offset long, event_ms long, key string, count long"


def stage_jar(groupings_jar: Path, folder: Path) -> Path:
    """JvmGroupingStage.java compiled against pyspark's jars and the Java groupings, as a jar."""
    pyspark_jars = Path(__import__("pyspark").__file__).parent / "jars"
    classes = folder / "classes"
    subprocess.run(["javac", "-d", str(classes), "-cp", f"{pyspark_jars}/*:{groupings_jar}",
                    str(Path(__file__).with_name("JvmGroupingStage.java"))], check=True)
    subprocess.run(["jar", "cf", str(folder / "stage.jar"), "-C", str(classes), "."], check=True)
    return folder / "stage.jar"


def tuples() -> pd.DataFrame:
    i = np.arange(TUPLES)
    ranks = np.minimum(np.random.default_rng(7).zipf(1.3, TUPLES), 500)
    return pd.DataFrame({"splitter": i % SPLITTERS, "partition": i % SPLITTERS, "offset": i // SPLITTERS,
                         "event_ms": T0_MS + i * STEP_MS, "key": [f"K{r:03d}" for r in ranks], "count": 1})


def python_counts(table: pd.DataFrame, grouping: str) -> Counter:
    """(worker, key) -> tuples, routed by the Python grouping, one instance per splitter."""
    counts = Counter()
    for _, part in table.sort_values(["partition", "offset"]).groupby("splitter"):
        instance = create_grouping(grouping, WORKERS, start_ms=int(part.event_ms.iloc[0]))
        workers = instance.route(part.key.to_numpy(), part.event_ms.to_numpy())
        counts.update(zip((int(w) for w in workers), part.key))
    return counts


def jvm_counts(spark, table: pd.DataFrame, grouping: str, folder: Path) -> Counter:
    """(worker, key) -> tuples, from the windows the JVM stage's query emitted over its two runs."""
    inbox, checkpoint = folder / "in", folder / "checkpoint"
    inbox.mkdir(parents=True)
    flush = pd.DataFrame({"splitter": [0, 1], "partition": [0, 1], "offset": [TUPLES, TUPLES],
                          "event_ms": [T0_MS + 3_600_000] * 2, "key": ["flush"] * 2, "count": 1})
    size = TUPLES // FILES
    files = [table.iloc[i * size:(i + 1) * size] for i in range(FILES)]
    files += [flush, flush.assign(event_ms=T0_MS + 7_200_000, offset=TUPLES + 1)]
    emitted = []
    for run in (files[:FILES // 2], files[FILES // 2:]):
        for part in run:
            part.to_json(inbox / f"{len(list(inbox.iterdir())):03d}.json", orient="records", lines=True)
        source = (spark.readStream.schema(SCHEMA).option("maxFilesPerTrigger", 1).json(str(inbox))
                  .withColumn("event_ts", F.timestamp_millis("event_ms")).withWatermark("event_ts", "1 second"))
        routed = DataFrame(spark._jvm.spikes.JvmGroupingStage.apply(source._jdf, grouping, WORKERS), spark)
        windows = routed.groupBy(F.window("event_ts", "1 second"), "worker", "key").agg(F.sum("count").alias("n"))
        query = (windows.writeStream.outputMode("append").option("checkpointLocation", str(checkpoint))
                 .foreachBatch(lambda df, _: emitted.extend(df.collect())).trigger(availableNow=True).start())
        query.awaitTermination()
    counts = Counter()
    for row in emitted:
        if row.key != "flush":
            counts[(row.worker, row.key)] += row.n
    return counts


def main(names: list[str]) -> None:
    with tempfile.TemporaryDirectory(prefix="jvm-stage-") as tmp:
        folder = Path(tmp)
        groupings_jar = build(GROUPINGS_JVM_DIR, "stream-groupings.jar", "the Java groupings")[0]
        jars = [*connector_jars(), groupings_jar, stage_jar(groupings_jar, folder)]
        spark = build_session("local[2]", shuffle_partitions=2, extra={"spark.jars": ",".join(map(str, jars))})
        table = tuples()
        for name in names:
            expected, got = python_counts(table, name), jvm_counts(spark, table, name, folder / name)
            loads = [sum(n for (w, _), n in got.items() if w == worker) for worker in range(WORKERS)]
            if got == expected:
                print(f"{name}: exact: {sum(got.values())} tuples, per-(worker, key) counts equal the Python "
                      f"grouping's; loads {loads}")
            else:
                wrong = sorted(set(got.items()) ^ set(expected.items()))[:10]
                print(f"{name}: differs: {sum(got.values())} of {sum(expected.values())} tuples; first "
                      f"differences {wrong}")


if __name__ == "__main__":
    main(sys.argv[1:] or ["SHUFFLE", "KEY", "PARTIAL_KEY", "DYNAMIC_KEY", "KEY_GROUP", "VNODE"])
