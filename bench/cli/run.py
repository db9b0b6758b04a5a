"""`python -m bench run` and `python -m bench run-all`: the topology end to end on Kafka and Spark."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from bench.cli.simulate import parse_assignments
from bench.topology.config import GROUPING_CLOCKS, TopologyConfig
from groupings import GROUPINGS


def _common(p) -> None:
    p.add_argument("--dataset", default="NYC_FLIGHTS", help="dataset name (python -m datasets list); default NYC_FLIGHTS")
    p.add_argument("--dataset-param", action="append", metavar="K=V", help="dataset parameter, repeatable")
    p.add_argument("--param", action="append", metavar="K=V", help="grouping parameter, repeatable")
    p.add_argument("--workers", type=int, default=TopologyConfig.workers, help="worker tasks W (default %(default)s)")
    p.add_argument("--splitters", type=int, default=TopologyConfig.splitters,
                   help="splitter instances S = grouping instances (default %(default)s)")
    p.add_argument("--partitions", type=int, help="input topic partitions P (default S)")
    p.add_argument("--aggregators", type=int, default=TopologyConfig.aggregators,
                   help="aggregator partitions A (default %(default)s)")
    p.add_argument("--cost-ms", type=float, default=TopologyConfig.cost_ms,
                   help="simulated processing cost per tuple, ms (default %(default)s)")
    p.add_argument("--cost-every", type=int, default=TopologyConfig.cost_every,
                   help="sleep --cost-ms once every K tuples (reference xK; default %(default)s)")
    p.add_argument("--rate", type=float, default=500.0,
                   help="replay rate, records/s (default 500; 0 = as fast as possible). With the default Kafka clock "
                        "the rate sets the time span the groupings see")
    p.add_argument("--limit", type=int, default=30000,
                   help="replay only the first N records (default 30000, about 3 minutes end to end with the warm-up; 0 = all)")
    p.add_argument("--topic", help="input topic (default: derived from dataset, limit, rate, partitions)")
    p.add_argument("--no-replay", action="store_true", help="consume an existing topic; fail if it is missing")
    p.add_argument("--bootstrap-servers", help="Kafka (default: the local stack, started if needed)")
    p.add_argument("--master", help="Spark master (default local[N], N = max(workers, splitters, aggregators): one "
                                     "task slot per worker whatever the core count; any master works)")
    p.add_argument("--influx-url", help="InfluxDB URL (default: the local stack's)")
    p.add_argument("--influx-database", help="InfluxDB database (default: the local stack's, groupings)")
    p.add_argument("--influx-token", default="", help="InfluxDB 2.x API token (1.8: empty or user:password)")
    p.add_argument("--influx-org", default="-", help="InfluxDB 2.x organisation")
    p.add_argument("--influx-bucket", help="InfluxDB bucket (default <database>/autogen, the 1.8 name)")
    p.add_argument("--no-influx", action="store_true", help="do not write to InfluxDB")
    p.add_argument("--repeat", type=int, default=1, help="repetitions under one experiment id (default 1)")
    p.add_argument("--experiment-id", help="groups the runs in the records (default: the run id prefix)")
    p.add_argument("--observer-tick-s", type=float, default=10.0, help="observer tick, s (default 10)")
    p.add_argument("--latency-warmup-s", type=float, default=10.0,
                   help="the run's processing latency leaves out the batches that start within this many s of the "
                        "first batch with data (Python workers' start-up; default 10; per-tick figures keep them)")
    p.add_argument("--worker-window-s", type=int, default=TopologyConfig.worker_window_s,
                   help="worker tumbling window, s (default %(default)s)")
    p.add_argument("--aggregator-window-s", type=int, default=TopologyConfig.aggregator_window_s,
                   help="aggregator tumbling window, s (default %(default)s)")
    p.add_argument("--watermark-delay-s", type=int, default=TopologyConfig.watermark_delay_s,
                   help="event-time watermark delay, s (default %(default)s)")
    p.add_argument("--max-offsets-per-trigger", type=int, help="Kafka records per micro-batch at most")
    p.add_argument("--trigger-s", type=float, default=TopologyConfig.trigger_s,
                   help="micro-batch trigger interval, s (default %(default)s)")
    p.add_argument("--max-key-bytes", type=int, default=TopologyConfig.max_key_bytes,
                   help="a record with a longer key (UTF-8 bytes) is a dead letter, reason 'key too long' "
                        "(default %(default)s)")
    p.add_argument("--grouping-clock", choices=GROUPING_CLOCKS, default=TopologyConfig.grouping_clock,
                   help="grouping clock: the tuple's Kafka timestamp (default) or wall time at the splitter")
    p.add_argument("--timeout-s", type=float, default=1800.0, help="give up after this long (default 1800)")
    p.add_argument("--results-dir", type=Path, help="results folder (default results/)")
    p.add_argument("--checkpoint-root", type=Path, help="checkpoints under ROOT/<run_id> (default results/<run_id>/checkpoint)")
    p.add_argument("--worker-state", action="store_true",
                   help="each worker keeps its per-key state in Spark's state store and the run writes it to "
                        "state.parquet (one more stateful stage per batch; a --rescale run always keeps it)")
    p.add_argument("--rescale", metavar="SCHEDULE",
                   help="rescale the stateful workers while the stream runs: '60s:12' (time since the input's "
                        "first Kafka timestamp : new worker count), as bench simulate --rescale")
    p.add_argument("--protocol", default="STOP_THE_WORLD",
                   help="rescale protocol: STOP_THE_WORLD, SHARED_STATE, LEARNER or HANDOFF (docs/rescaling.md)")
    p.add_argument("--handoff-batch", type=int, default=1,
                   help="HANDOFF: units (key groups, vnodes) handed over per round (default 1)")
    p.add_argument("--json", action="store_true", help="print the summary as JSON too")
    p.add_argument("--no-progress", action="store_true")


def add_parsers(subparsers) -> None:
    p = subparsers.add_parser(
        "run", help="run the Spark topology end to end for one grouping",
        description="Replay a dataset into Kafka and run the Storm topology of the DKG experiments as one "
                    "Spark Structured Streaming job, until every record is processed and the last windows "
                    "are closed; writes results/<run_id>/ and prints a summary.",
    )
    p.add_argument("--grouping", default="DYNAMIC_KEY", help=" | ".join(GROUPINGS))
    p.add_argument("--run-id", help="name of the run; the same id resumes a stopped run from its checkpoint")
    _common(p)
    p.set_defaults(handler=handle_run)

    a = subparsers.add_parser(
        "run-all", help="every grouping on the same input topic, one comparison table",
        description=f"Replay once, then run each grouping ({', '.join(GROUPINGS)} by default) on the same topic.",
    )
    a.add_argument("--groupings", default=",".join(GROUPINGS), help="comma-separated list (default: all)")
    a.add_argument("--run-id", help="prefix of the runs' ids (each run is <prefix>-<grouping>)")
    _common(a)
    a.set_defaults(handler=handle_run_all)


def options_from(args, grouping: str, run_id: str | None, experiment_id: str | None = None):
    from bench.run import RunOptions

    return RunOptions(
        grouping=grouping, dataset=args.dataset, dataset_params=parse_assignments(args.dataset_param),
        grouping_params=parse_assignments(args.param), workers=args.workers, splitters=args.splitters,
        aggregators=args.aggregators, partitions=args.partitions, cost_ms=args.cost_ms, cost_every=args.cost_every,
        rate=args.rate or None, limit=args.limit or None, run_id=run_id, topic=args.topic, replay=not args.no_replay,
        own_topic=bool(args.rate) and not args.topic and not args.no_replay,
        bootstrap_servers=args.bootstrap_servers, master=args.master, influx_url=args.influx_url,
        influx_database=args.influx_database, influx_token=args.influx_token, influx_org=args.influx_org,
        influx_bucket=args.influx_bucket, no_influx=args.no_influx, experiment_id=experiment_id,
        observer_tick_s=args.observer_tick_s, latency_warmup_s=args.latency_warmup_s,
        worker_window_s=args.worker_window_s, aggregator_window_s=args.aggregator_window_s,
        watermark_delay_s=args.watermark_delay_s, max_offsets_per_trigger=args.max_offsets_per_trigger,
        trigger_s=args.trigger_s, grouping_clock=args.grouping_clock, timeout_s=args.timeout_s,
        max_key_bytes=args.max_key_bytes, worker_state=args.worker_state,
        rescale=args.rescale, protocol=args.protocol, handoff_batch=args.handoff_batch,
        results_dir=args.results_dir, checkpoint_root=args.checkpoint_root, progress=not args.no_progress,
    )


def _report(summaries: list[dict], as_json: bool) -> int:
    from bench.logs import describe
    from bench.run import format_table

    print()
    print(format_table(summaries))
    for s in summaries:
        if s.get("error"):
            print(f"error ({s['grouping']}): {s['error']}", file=sys.stderr)
        failed = [k for k, v in s["checks"].items() if v is False]
        if failed:
            print(f"checks failed ({s['grouping']}): {', '.join(failed)}", file=sys.stderr)
        if s.get("influx") and s["influx"]["failed_batches"]:
            i = s["influx"]
            done = ("every point written again from the run record" if not i.get("pending_backfill") else
                    f"points missing: python -m bench influx backfill {s['results'].rsplit('/', 1)[-1]}")
            print(f"InfluxDB: {i['failed_batches']} failed write batch(es) ({i['last_error']}); {done}",
                  file=sys.stderr)
            if "field type conflict" in (i["last_error"] or ""):
                print("InfluxDB: this database holds a field of another type (written before the schema of "
                      "bench/observer/influx_schema.py): drop it once (DROP MEASUREMENT observer) or use a new "
                      "database, then backfill (docs/faults.md)", file=sys.stderr)
        if s.get("dead_letters"):
            reasons = ", ".join(f"{reason} {n:,}" for reason, n in (s.get("dead_letters_by_reason") or {}).items())
            print(f"dead letters ({s['grouping']}): {s['dead_letters']:,} in {s['results']}/dlq and "
                  f"{s['results'].rsplit('/', 1)[-1]}.dlq ({reasons})")
        if s.get("observer_missed_batches"):
            print(f"note ({s['grouping']}): the observer missed the progress of batch(es) {s['observer_missed_batches']} "
                  "(the driver was killed between Spark's commit and the event): its live figures leave them out; "
                  "the exact figures come from the aggregates", file=sys.stderr)
        replays = [a for a in s.get("attempts") or [] if a.get("topic_state") == "prefix"]
        for a in replays:
            print(f"replay resumed in attempt {a['attempt']}: {a['records_in_topic_before']:,} records were in "
                  f"the topic, {a['records_replayed']:,} replayed")
        if s.get("logs"):
            print(describe(s["logs"]))
        print(f"run record: {s['results']}")
    if as_json:
        print(json.dumps(summaries, indent=2, default=str))
    ok = all(s["status"] == "completed" and all(v is not False for v in s["checks"].values()) for s in summaries)
    return 0 if ok else 1


def handle_run(args) -> int:
    return _run_many(args, [args.grouping.strip()], single=True)  # prepare() resolves the name (canonical_grouping)


def handle_run_all(args) -> int:
    return _run_many(args, [g.strip().upper() for g in args.groupings.split(",") if g.strip()], single=False)


def _run_many(args, groupings: list[str], single: bool) -> int:
    """Every grouping, `--repeat` times, on the same input topic (replayed once) and Spark session.

    Run ids: `--run-id` as given for one plain run; otherwise `<prefix>[-<grouping>][-r<k>]`.
    All runs share one experiment id (`--experiment-id`, default the prefix).
    """
    from bench.results.record import new_run_id
    from bench.run import RunError, measures_latency, prepare, record_input, run_stream, warm_up

    if args.repeat < 1:
        print(f"error: --repeat must be >= 1, got {args.repeat}", file=sys.stderr)
        return 2
    prefix = args.run_id or new_run_id(groupings[0] if single else "all", args.dataset)
    experiment_id = args.experiment_id or prefix

    def run_id_of(grouping: str, k: int) -> str:
        rid = prefix if single else f"{prefix}-{grouping.lower()}"
        return rid if args.repeat == 1 else f"{rid}-r{k + 1}"

    try:
        prepared = [prepare(options_from(args, g, run_id_of(g, k), experiment_id))
                    for k in range(args.repeat) for g in groupings]
        if not args.rate:
            # Unpaced: every run reads the same recorded topic (recorded once, before the first run).
            record_input(prepared)
        elif len(prepared) > 1 and not prepared[0].topic_exists and args.topic:
            raise RunError(f"--topic {args.topic} does not exist: paced runs of a run-all or --repeat replay each "
                           "into a topic of their own (drop --topic), or record it first and read it (--rate 0)")
    except (RunError, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if len(prepared) == 1 and not measures_latency(prepared[0]):
        return _report([run_stream(prepared[0])], args.json)
    summaries = []
    spark = None
    try:
        from bench.topology.session import build_session

        print(f"starting Spark ({prepared[0].options.master}) ...")
        spark = build_session(prepared[0].options.master, args.aggregators)
        # Every run of a comparison starts with a warm session, not only the second and later ones;
        # so does a single run that measures latency (its first batches would otherwise pay the
        # session's start-up, and the backlog it leaves counts as latency).
        warm_up(spark, prepared[0])
        for p in prepared:
            # Paced: each run replays into its own topic (RunOptions.own_topic) while it consumes it.
            if len(prepared) > 1:
                print(f"== {p.config.grouping} ({p.run_id}) ==")
            summaries.append(run_stream(p, spark=spark))
    finally:
        if spark is not None:
            spark.stop()
    return _report(summaries, args.json)
