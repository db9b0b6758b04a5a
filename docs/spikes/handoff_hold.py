"""HANDOFF spike (docs/rescaling.md, "HANDOFF on micro-batches"): a router (transformWithStateInPandas
with an event-time output column) holds every row for K batches, then releases it; a 2 s event-time
window follows. Does Spark accept rows released after the watermark passed them?

Usage: .venv/bin/python docs/spikes/handoff_hold.py K "<watermark delay>"   e.g. 3 "1 second"
Prints the query's exception (measured: EMITTING_ROWS_OLDER_THAN_WATERMARK_NOT_ALLOWED) or none.
"""
import sys, tempfile, time
import pandas as pd
from pyspark.sql import functions as F, types as T
from pyspark.sql.streaming import StatefulProcessor
from bench.topology.session import build_session

HOLD, DELAY = int(sys.argv[1]), sys.argv[2]
spark = build_session("local[2]", shuffle_partitions=2)

class Hold(StatefulProcessor):
    def init(self, handle):
        self.held = handle.getListState("held", T.StructType([T.StructField("ts_ms", T.LongType()), T.StructField("value", T.LongType()), T.StructField("age", T.LongType())]))
    def handleInputRows(self, key, rows, timerValues):
        frames = [f for f in rows if len(f)]
        old = list(self.held.get()) if self.held.exists() else []
        keep, out = [], []
        for ts, v, age in old:
            (out if age + 1 >= HOLD else keep).append((ts, v, age + 1))
        for f in frames:
            for ts, v in zip(f["timestamp"], f["value"]):
                keep.append((int(pd.Timestamp(ts).value // 10**6), int(v), 0))
        if keep:
            self.held.put(keep)
        else:
            self.held.clear()
        if out:
            yield pd.DataFrame({"timestamp": pd.to_datetime([o[0] for o in out], unit="ms", utc=True), "value": [o[1] for o in out]})
    def close(self):
        pass

src = (spark.readStream.format("rate").option("rowsPerSecond", 20).load()
       .withWatermark("timestamp", DELAY).withColumn("k", F.col("value") % 2))
routed = src.groupBy("k").transformWithStateInPandas(Hold(), "timestamp timestamp, value long", "Append", "None",
                                                     eventTimeColumnName="timestamp")
agg = routed.groupBy(F.window("timestamp", "2 seconds")).agg(F.count("*").alias("n"))
q = (agg.writeStream.format("memory").queryName("out").outputMode("append")
     .option("checkpointLocation", tempfile.mkdtemp(prefix="spike-hold-"))
     .trigger(processingTime="2 seconds").start())
t = time.time()
try:
    while time.time() - t < 40 and q.exception() is None:
        time.sleep(2)
    err = q.exception()
    print("EXCEPTION" if err else "no exception", str(err)[:1500] if err else "")
    lp = q.recentProgress
    dropped = sum(int(op.get("numRowsDroppedByWatermark", 0)) for p in lp for op in p.get("stateOperators", []))
    print("batches", len(lp), "dropped by watermark", dropped, "rows out", spark.sql("select sum(n) from out").collect())
finally:
    q.stop()
