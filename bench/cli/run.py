"""`python -m bench run` and `python -m bench run-all`: the topology end to end on Kafka and Spark.

Their flags are made from the settings' dataclasses (`bench.run.RunOptions`, `bench.run.CommandSettings`,
`bench.topology.config.TopologySettings`: `add_settings`) and read back into options the same way
(`options_from`): a new setting is one field there.
"""

from __future__ import annotations

import json
import sys

from bench.cli._arguments import parse_assignments
from bench.logs import describe
from bench.run.options import CommandSettings, RunOptions
from bench.settings import flag_arguments, settings_of, value_type
from groupings import GROUPINGS


def add_parsers(subparsers) -> None:
    p = subparsers.add_parser(
        "run", help="run the Spark topology end to end for one grouping",
        description="Replay a dataset into Kafka and run the Storm topology of the DKG experiments as one "
                    "Spark Structured Streaming job, until every record is processed and the last windows "
                    "are closed; writes results/<run_id>/ and prints a summary.",
    )
    add_settings(p, "run")
    p.set_defaults(handler=handle_run)

    a = subparsers.add_parser(
        "run-all", help="every grouping on the same input topic, one comparison table",
        description=f"Replay once, then run each grouping ({', '.join(GROUPINGS)} by default) on the same topic.",
    )
    add_settings(a, "run-all")
    a.set_defaults(handler=handle_run_all)


def add_settings(parser, command: str) -> None:
    """One flag per setting of `RunOptions` and `CommandSettings` that `command` takes, in their
    fields' order: `--<name>` (a switch on by default: `--no-<name>`), the field's type and the
    command line's default, help with unit and default (`bench.settings.Setting`)."""
    for cls in (RunOptions, CommandSettings):
        for f, s in settings_of(cls):
            flag = s.flag_for(f)
            if flag is not None and (not s.commands or command in s.commands):
                parser.add_argument(flag, **flag_arguments(value_type(cls, f), f, s, command))


def options_from(args, grouping: str, run_id: str | None, experiment_id: str | None = None) -> RunOptions:
    """`RunOptions` from the parsed flags: each setting's flag read back (a `--no-<name>` switch
    negated, `K=V` flags parsed, a 0 that means None made None); the grouping, run id and
    experiment id as the command resolved them. A paced run that replays into the derived topic
    gets a topic of its own (`own_topic`). Raises ValueError for a malformed `K=V`."""
    given = {"grouping": grouping, "run_id": run_id, "experiment_id": experiment_id}
    values = {}
    for f, s in settings_of(RunOptions):
        flag = s.flag_for(f)
        if flag is None or f.name in given:
            continue
        raw = getattr(args, flag[2:].replace("-", "_"))
        if value_type(RunOptions, f) is dict:
            raw = parse_assignments(raw)
        elif flag.startswith("--no-") and f.default is True:
            raw = not raw
        values[f.name] = (raw or None) if s.zero_is_none else raw
    own_topic = bool(args.rate) and not args.topic and not args.no_replay
    return RunOptions(**values, **given, own_topic=own_topic)


def _report(summaries: list[dict], as_json: bool) -> int:
    # deferred: the summary module loads pandas (see _run_many)
    from bench.observer.resources import describe_growth
    from bench.run.floor import describe_floor
    from bench.run.summary import format_table

    print()
    print(format_table(summaries))
    for line in filter(None, map(describe_floor, summaries)):
        print(line)
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
                  "(the driver was killed, or a STOP_THE_WORLD rescale stopped the query, between Spark's commit and "
                  "that event): its live figures leave them out; "
                  "the exact figures come from the aggregates", file=sys.stderr)
        replays = [a for a in s.get("attempts") or [] if a.get("topic_state") == "prefix"]
        for a in replays:
            print(f"replay resumed in attempt {a['attempt']}: {a['records_in_topic_before']:,} records were in "
                  f"the topic, {a['records_replayed']:,} replayed")
        if line := describe_growth(s.get("resources") or {}):
            print(line)
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
    return _run_many(args, [g.strip() for g in args.groupings.split(",") if g.strip()], single=False)


def _with_floor(spark, prepared, summary: dict) -> dict:
    """The run's summary with Spark's floor beside it (`bench.run.floor`); a floor that cannot be
    measured is reported and left out, the run's own figures stay as they are."""
    # deferred: the floor's query loads pyspark (see _run_many)
    from bench.run.floor import measure_floor

    print("measuring Spark's floor: the empty query on the same topic ...")
    try:
        return measure_floor(spark, prepared.config, summary)
    except Exception as e:  # noqa: BLE001 - the run completed; only the line beside its table is missing
        print(f"warning: Spark's floor not measured: {str(e).splitlines()[0] if str(e) else type(e).__name__}",
              file=sys.stderr)
        return summary


def _run_many(args, groupings: list[str], single: bool) -> int:
    """Every grouping, `--repeat` times, on the same input topic (replayed once) and Spark session.

    Run ids: `--run-id` as given for one plain run; otherwise `<prefix>[-<grouping>][-r<k>]`.
    All runs share one experiment id (`--experiment-id`, default the prefix).
    """
    # deferred: the run loads pyspark, pandas and the Kafka client (about 1 s of CPU); `python -m bench`
    # imports every command's module to build its parser, and only this command needs them
    from bench.results.record import new_run_id
    from bench.run.input import record_input
    from bench.run.stream import run_stream
    from bench.run.preflight import RunError, prepare
    from bench.run.warm_up import measures_latency, warm_up
    from bench.topology.session import build_session

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
    except KeyboardInterrupt:
        print("interrupted while recording the input: the same command resumes it", file=sys.stderr)
        return 130
    if len(prepared) == 1 and not measures_latency(prepared[0]):
        return _report([run_stream(prepared[0])], args.json)
    summaries = []
    spark = None
    try:
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
            live = measures_latency(p)
            summary = run_stream(p, spark=spark)
            if live and summary["status"] == "completed" and not p.config.realtime:
                summary = _with_floor(spark, p, summary)
            summaries.append(summary)
            if summary["status"] == "interrupted":
                break  # Ctrl-C ends the whole command, not only the run under way
    finally:
        if spark is not None:
            spark.stop()
    return _report(summaries, args.json)
