"""Real-Time Mode spike (docs/topology.md, "Processing latency on a micro-batch engine"): does
PySpark 4.2's `trigger(realTime=...)` accept the operators of the topology?

Each case starts one query on a Kafka topic of the running stack with `trigger(realTime="5 seconds")`
and a Kafka sink (a sink Real-Time Mode supports), lets it run a few seconds and prints
"runs" or the Spark error (first line) that refused it:
  stateless   Kafka -> projection -> Kafka
  pandas_udf  Kafka -> a vectorised pandas UDF (the worker stage's kind) -> Kafka
  tws         Kafka -> groupBy.transformWithStateInPandas (the grouping stage's kind) -> Kafka
  window      Kafka -> watermark -> 15 s event-time window count (the worker/aggregator windows) -> Kafka

Usage: .venv/bin/python docs/spikes/real_time_mode.py <input topic> [case ...]   (with `make up` running)
"""
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator

import pandas as pd
from pyspark.sql import functions as F
from pyspark.sql.streaming import StatefulProcessor

from bench.stack.config import StackConfig
from bench.topology.session import build_session

TOPIC = sys.argv[1]
BOOTSTRAP = StackConfig.from_env().bootstrap_servers
spark = build_session("local[8]", shuffle_partitions=2)
source = (spark.readStream.format("kafka").option("kafka.bootstrap.servers", BOOTSTRAP)
          .option("subscribe", TOPIC).option("startingOffsets", "earliest").load())


class Count(StatefulProcessor):
    def init(self, handle):
        self.n = handle.getValueState("n", "n long")

    def handleInputRows(self, key, rows: Iterator[pd.DataFrame], timerValues):
        n = (self.n.get() or (0,))[0] + sum(len(f) for f in rows)
        self.n.update((n,))
        yield pd.DataFrame({"k": [key[0]], "n": [n]})

    def close(self):
        pass


@F.pandas_udf("long")
def work(values: pd.Series) -> pd.Series:
    return values.str.len()


def case(name: str):
    df = source.select(F.col("partition").alias("k"), F.col("value").cast("string").alias("v"), "timestamp")
    if name == "pandas_udf":
        df = df.select(F.col("k"), work("v").alias("n"))
    elif name == "tws":
        df = df.groupBy("k").transformWithStateInPandas(Count(), "k int, n long", "Update", "None")
    elif name == "window":
        df = (df.withWatermark("timestamp", "2 seconds").groupBy(F.window("timestamp", "15 seconds"), "k")
              .count().select("k", F.col("count").alias("n")))
    else:
        df = df.select("k", F.length("v").alias("n"))
    return df.select(F.col("k").cast("string").alias("key"), F.col("n").cast("string").alias("value"))


for name in sys.argv[2:] or ("stateless", "pandas_udf", "tws", "window"):
    checkpoint = tempfile.mkdtemp(prefix=f"rtm-{name}-")
    try:
        query = (case(name).writeStream.format("kafka").option("kafka.bootstrap.servers", BOOTSTRAP)
                 .option("topic", f"rtm-spike-{uuid.uuid4().hex[:6]}").option("checkpointLocation", checkpoint)
                 .outputMode("update").trigger(realTime="5 seconds").start())
        time.sleep(15)
        error = query.exception()
        query.stop()
        print(f"{name}: " + ("runs" if error is None else "fails: " + " / ".join(l for l in str(error).splitlines() if "Exception" in l or "[" in l)[:900]))
    except Exception as e:  # refused at start
        print(f"{name}: refused: {str(e).splitlines()[0][:400]}")
