"""Real-Time Mode spike for the JVM data plane (docs/topology.md, "Real-Time Mode on Spark 4.3"):
does PySpark 4.3's `trigger(realTime=...)` run the topology's JVM path, prefix by prefix, and what
processing latency does it give at `make bench`'s conditions?

Each case starts one query on a recorded input topic of the running stack with
`trigger(realTime="10 seconds")`, update mode (the only one Real-Time Mode has) and a Kafka sink,
lets it run 25 s and prints "runs" (with the input rows of its progress events) or the error that
refused it:
  split     spout -> splitter (Spark SQL, posexplode, observed metrics)
  route     + the JVM grouping stage (GroupingStage.java: a Java transformWithState keyed by splitter)
  place     + repartitionById(W, worker) and the placement check
  work      + the worker's JVM column (the cost's sleeps, the done time)
  observe   + the worker stage's observed latency histograms (CollectMetrics)
  wwindow   + the worker windows (event-time window per (window, worker, key))
  full      + the aggregator windows (the whole query of `bench.topology.job.build_main`)

`--paced BATCH_S` instead runs `observe` in Real-Time Mode with BATCH_S-second batches on a fresh
topic of 10 partitions, starts the project's producer 20 s later (by default NYC_FLIGHTS, 30,000
records at 500 rec/s, DYNAMIC_KEY, cost 1 ms, W = S = 10: the conditions of `make bench`;
`--dataset`, `--grouping`, `--rate`, `--seconds`, `--cost-ms` change them), and prints each
tuple's processing latency as the harness defines LAT (its worker's done time minus its Kafka
timestamp) after the first 10 s of input and after the first 20 s (`--warmup-s`), from the rows the
query wrote;
the per-worker loads (tuples' counts by worker); the rows go to a CSV.

One departure from the topology, for Real-Time Mode: the splitter's `in_slot_tasks` coalesce is
left out (Real-Time Mode refuses `CoalesceExec`; with P <= slots it changes nothing). On 2026-11-28
it ran in a separate environment with pyspark 4.3.0 and the 4.2.0 connector; the project has since
moved to pyspark 4.3.0 with a connector built for it (docs/stack.md), and the real-time mode it led
to is `bench/topology/realtime.py` (docs/topology.md, "Two execution modes").

Usage, with `make up` running:
  PYTHONPATH=. .venv/bin/python docs/spikes/real_time_mode_jvm.py <input topic> [case ...]
  PYTHONPATH=. .venv/bin/python docs/spikes/real_time_mode_jvm.py <input topic> --paced 300 [--rate R --cost-ms C]
"""
import argparse
import dataclasses
import tempfile
import time
import uuid

from pyspark.sql import functions as F

from bench.run.input import ensure_topics
from bench.run.options import RunOptions
from bench.run.preflight import prepare
from bench.stack.config import StackConfig
from bench.topology import aggregator, jvm_stage, spout, splitter, worker
from bench.topology.session import build_session

splitter.in_slot_tasks = lambda df: df  # Real-Time Mode refuses CoalesceExec

CASES = ("split", "route", "place", "work", "observe", "wwindow", "full")
parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("topic", help="a recorded input topic (the cases read it; --paced only borrows its settings)")
parser.add_argument("cases", nargs="*", default=CASES, help=f"any of {', '.join(CASES)} (default all)")
parser.add_argument("--paced", type=int, metavar="BATCH_S", help="measure latency with real-time batches of BATCH_S s")
parser.add_argument("--grouping", default="DYNAMIC_KEY", help="a Java grouping (default DYNAMIC_KEY)")
parser.add_argument("--dataset", default="NYC_FLIGHTS", help="the topic's dataset (default NYC_FLIGHTS)")
parser.add_argument("--rate", type=float, default=500.0, help="--paced: input rate, records/s (default 500)")
parser.add_argument("--seconds", type=float, default=60.0, help="--paced: input span, s (default 60)")
parser.add_argument("--cost-ms", type=float, default=1.0, help="--paced: worker cost per tuple, ms (default 1)")
parser.add_argument("--warmup-s", type=float, default=10.0,
                    help="--paced: input left out of the figures, s (default 10; also given after twice this)")
args = parser.parse_args()
if set(args.cases) - set(CASES):
    parser.error(f"unknown case(s) {sorted(set(args.cases) - set(CASES))}; choose from {', '.join(CASES)}")
stack = StackConfig.from_env()
prepared = prepare(RunOptions(grouping=args.grouping, dataset=args.dataset, topic=args.topic, replay=False,
                              run_id=f"rtm-{uuid.uuid4().hex[:6]}", bootstrap_servers=stack.bootstrap_servers,
                              results_dir=tempfile.mkdtemp(prefix="rtm-results-")), ensure_stack=False)
config = prepared.config
ensure_topics(config.bootstrap_servers, {config.control_topic: 1})  # the spout reads it too
# Real-Time Mode runs every task of every stage at once: 10 (read) + 10 (route) + 10 (workers) slots.
spark = build_session("local[64]", 10)


def case(name: str, config=config):
    frame = splitter.split(spout.read_kafka(spark, config), config, prepared.splitter_sql)
    if name == "split":
        return frame
    frame = jvm_stage.apply_grouping(frame, config.grouping, config.workers, config.grouping_clock)
    if name == "route":
        return frame
    frame = frame.repartitionById(config.workers, F.col("worker")).where(worker.placement_check())
    if name == "place":
        return frame
    frame = frame.withColumn(worker.DONE_COLUMN, worker.processed_at(spark, config.cost_ms, config.cost_every))
    if name == "work":
        return frame
    frame = frame.observe(worker.WORKER_METRICS, F.count(F.lit(1)).alias("rows"),
                          worker.latency_lines(spark).alias("latency"))
    if name == "observe":
        return frame
    frame = frame.groupBy(F.window("event_ts", f"{config.worker_window_s} seconds").alias("wwin"), "worker",
                          "key").agg(F.sum("count").alias("count"))
    if name == "wwindow":
        return frame
    return aggregator.aggregate(frame.withColumn("tuples", F.lit(1)).withColumn("first_ts", F.window_time("wwin"))
                                .withColumn("last_ts", F.window_time("wwin")).withColumn("ts_sum_ms", F.lit(0)),
                                config.aggregator_window_s)


def start(frame, batch_s: int):
    out = f"rtm-spike-{uuid.uuid4().hex[:6]}"
    ensure_topics(config.bootstrap_servers, {out: 1})
    query = (frame.select(F.to_json(F.struct(*frame.columns)).alias("value")).writeStream.format("kafka")
             .option("kafka.bootstrap.servers", config.bootstrap_servers).option("topic", out)
             .option("checkpointLocation", tempfile.mkdtemp(prefix="rtm-checkpoint-")).outputMode("update")
             .trigger(realTime=f"{batch_s} seconds").start())
    return query, out


def accepts(name: str) -> None:
    try:
        query, _ = start(case(name), 10)
    except Exception as e:  # refused at start
        print(f"{name}: refused: {' / '.join(str(e).splitlines()[:3])[:1200]}", flush=True)
        return
    time.sleep(25)
    error, progress = query.exception(), query.recentProgress
    query.stop()
    rows = sum(p["numInputRows"] for p in progress)
    print(f"{name}: " + (f"runs ({len(progress)} progress events, {rows} input rows)" if error is None else
                         "fails: " + " / ".join(line for line in str(error).splitlines()
                                                if "Exception" in line or "[" in line)[:1200]), flush=True)


def paced_latency(batch_s: int, records: int, rate: float, cost_ms: float, warmup_s: float) -> None:
    import numpy as np

    from datasets import get_dataset
    from producers.replay import replay

    paced = dataclasses.replace(config, topic=f"rtm-paced-{uuid.uuid4().hex[:6]}", cost_ms=cost_ms)
    ensure_topics(config.bootstrap_servers, {paced.topic: 10})
    query, out = start(case("observe", paced), batch_s)
    time.sleep(20)  # the query's tasks start; records sent before they poll would wait
    sent = replay(get_dataset(args.dataset), paced.topic, config.bootstrap_servers, partitions=10, rate=rate,
                  limit=records, progress=False, key_stats=False)
    time.sleep(15)
    error, progress = query.exception(), query.recentProgress
    query.stop()
    if error is not None:
        print(f"latency: fails: {str(error).splitlines()[0][:600]}")
        return
    value = F.col("value").cast("string")
    rows = (spark.read.format("kafka").option("kafka.bootstrap.servers", config.bootstrap_servers)
            .option("subscribe", out).load()
            .select(F.get_json_object(value, "$.worker").cast("int").alias("worker"),
                    F.get_json_object(value, "$.count").cast("long").alias("count"),
                    F.get_json_object(value, "$.done_us").cast("long").alias("done_us"),
                    F.unix_millis(F.to_timestamp(F.get_json_object(value, "$.event_ts"))).alias("event_ms"))
            .toPandas())
    rows["latency_ms"] = rows.done_us / 1000.0 - rows.event_ms
    with tempfile.NamedTemporaryFile("w", prefix="rtm-latency-", suffix=".csv", delete=False) as csv_file:
        rows.to_csv(csv_file, index=False)
    csv = csv_file.name
    # The harness warms its session up with a whole run first; this query starts cold, and its JIT
    # took 8-14 s of the input (2026-11-28): the figures after 10 s (the harness's window) and 20 s.
    for skip_s in (warmup_s, 2 * warmup_s):
        lat = rows[rows.event_ms >= sent.first_timestamp_ms + skip_s * 1000].latency_ms
        print(f"latency after the first {skip_s:g} s of input: {len(lat)} of {len(rows)} tuples written "
              f"({records} sent): LAT p50 {np.percentile(lat, 50):.0f} ms, p99 {np.percentile(lat, 99):.0f} ms, "
              f"p99.9 {np.percentile(lat, 99.9):.0f} ms, max {lat.max():.0f} ms", flush=True)
    loads = rows.groupby("worker")["count"].sum().reindex(range(config.workers), fill_value=0)
    print(f"per-worker loads {loads.tolist()}; {len(progress)} real-time batches of {batch_s} s ended; "
          f"rows in {csv}", flush=True)


if args.paced:
    paced_latency(args.paced, int(args.rate * args.seconds), args.rate, args.cost_ms, args.warmup_s)
else:
    for name in args.cases:
        accepts(name)
