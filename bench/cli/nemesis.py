"""`python -m bench nemesis`: one run under random faults from a seed, then the checker (`bench.nemesis`)."""

from __future__ import annotations

import secrets
import shlex
import signal
import sys
from pathlib import Path

from bench.cli._arguments import add_run_flag

DEFAULT_MINUTES = 15.0


def add_parsers(subparsers) -> None:
    p = subparsers.add_parser(
        "nemesis", help="one long run under random faults from a seed, checked for lost and duplicated records",
        description="Run the topology on a paced dataset prefix while a nemesis, from a seed that replays it "
                    "exactly, SIGKILLs or SIGSTOPs the driver, its Spark JVM, the Kafka broker and InfluxDB at "
                    "random instants and starts rescales at random points of the input; resume the run with the "
                    "same RUN_ID after every driver death; then check the aggregates against an independent "
                    "count of the input, the loads against bench simulate, InfluxDB against metrics.parquet.",
    )
    p.add_argument("--seed", type=int, help="the faults' seed (default: a random one, printed)")
    p.add_argument("--faults", type=int, default=20, help="faults, rescales included (default %(default)s)")
    add_run_flag(p, "mode")
    add_run_flag(p, "grouping", default="KEY_GROUP", also="one that owns its keys, so that it rescales")
    add_run_flag(p, "dataset", default="US_FLIGHTS_3M")
    add_run_flag(p, "rate", default=1000.0)
    p.add_argument("--minutes", type=float, default=DEFAULT_MINUTES,
                   help="input span, minutes: the prefix replayed is rate x 60 x minutes records, and the faults "
                        "fall within it (default %(default)s)")
    add_run_flag(p, "workers")
    add_run_flag(p, "cost_ms", default=0.0, also="0: a resumed run catches up its backlog at once")
    add_run_flag(p, "run_id", also="default nemesis-<seed>-<mode>")
    add_run_flag(p, "results_dir")
    p.add_argument("--run-args", default="", help="more `bench run` options, one string (e.g. '--trigger-s 0.5')")
    p.add_argument("--plan-only", action="store_true", help="print the seed's faults and stop")
    p.set_defaults(handler=main)


def main(args) -> int:
    # deferred: the checker reads parquet and Kafka; `python -m bench` builds every command's parser
    from bench.nemesis import check
    from bench.nemesis.plan import PROTOCOLS, plan_faults
    from bench.nemesis.processes import start_services
    from bench.nemesis.runner import NemesisRun, run_nemesis, write_record
    from bench.results import record
    from bench.stack import StackConfig

    seed = args.seed if args.seed is not None else secrets.randbelow(2**31)
    if args.rate <= 0 or args.minutes <= 0:
        print("error: --rate and --minutes must be positive (the faults fall within a paced input)", file=sys.stderr)
        return 2
    span_s = 60.0 * args.minutes
    try:
        plan = plan_faults(seed, args.faults, span_s, span_s, args.workers, PROTOCOLS)
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(f"nemesis seed {seed} (replay these faults with --seed {seed}): {len(plan.faults)} faults"
          f"{f', rescales with {plan.protocol}' if plan.protocol else ''}")
    for fault in plan.faults:
        when = f"input +{fault.at_s:7.1f} s" if fault.target == "rescale" else f"+{fault.at_s:7.1f} s"
        print(f"  {fault.index + 1:2d}. {when}  {fault.describe()}")
    if args.plan_only:
        return 0
    stack = StackConfig.from_env()
    start_services(stack)
    results_dir = (args.results_dir or Path(record.RESULTS_DIR)).resolve()
    run_id = args.run_id or f"nemesis-{seed}-{args.mode}"
    argv = [sys.executable, "-m", "bench", "run", "--grouping", args.grouping, "--dataset", args.dataset,
            "--limit", str(int(args.rate * span_s)), "--rate", f"{args.rate:g}", "--mode", args.mode,
            "--workers", str(args.workers), "--cost-ms", f"{args.cost_ms:g}", "--no-progress",
            "--timeout-s", f"{4 * span_s + 1800:g}", "--results-dir", str(results_dir),
            "--bootstrap-servers", stack.bootstrap_servers, "--influx-url", stack.influx_url,
            "--influx-database", stack.influx_database, *shlex.split(args.run_args)]
    if plan.schedule():
        argv += ["--rescale", plan.schedule(), "--protocol", plan.protocol]
    run = NemesisRun(run_id, argv, results_dir, stack, plan)
    # SIGTERM and SIGINT (also when started in the background, where SIGINT comes ignored) end the
    # loop as Ctrl-C does: paused processes continued, killed services started, the run interrupted.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    try:
        history = run_nemesis(run, echo=lambda line: print(line, flush=True))
    except RuntimeError as e:
        print(f"nemesis: {e}", file=sys.stderr)
        return 1
    verdict = check.check_run(run.folder, stack.influx_database, plan.schedule())
    path = write_record(run, history, verdict)
    faults = sum(1 for e in history.entries if e["kind"] == "fault")
    resumes = sum(1 for e in history.entries if e["kind"] == "recovery" and "resumed" in e["text"])
    print(f"nemesis seed {seed}: {faults} process faults applied, {len(plan.rescales)} rescale(s) scheduled, "
          f"{resumes} automatic resume(s)")
    for line in check.describe(verdict):
        print(f"  {line}")
    print(f"{'PASSED' if verdict['ok'] else 'FAILED'}: {path}")
    return 0 if verdict["ok"] else 1
