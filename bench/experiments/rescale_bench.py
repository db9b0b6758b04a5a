"""`make rescale-bench`: the rescale protocols on Spark side by side on one recorded topic, under the
same conditions, beside the simulator's figures for the same topic and schedule.

- One topic: `--limit` records of `--dataset` on `--partitions` partitions, recorded once at
  `--record-rate` records/s (kept for later benches), so that its Kafka timestamps are spread
  evenly; every run reads it as fast as it can.
- Two events, each half-way through the topic's Kafka timestamps (so about half of the batches come
  after it), each in runs of its own: the scale-out `W -> W + 2`, and the scale-in `W + 2 -> W`,
  which moves the same units back. S = A = W in both.
- Spark: on the scale-out, every routing x every protocol that runs on Spark (bench/rescale/setup.py
  SPARK_PROTOCOLS; HANDOFF once per `--handoff-batches`, 1 and 64 by default); on the scale-in,
  `--scale-in-routings` (KEY_GROUP) x `--scale-in-protocols` (STOP_THE_WORLD, SHARED_STATE, LEARNER);
  `--runs` times each. Each run is a `bench run` process of its own (its own Spark JVM, as a user
  runs it). The cells are interleaved round by round, so that a change of the machine's load hits
  every protocol alike. The load average before and after each run is recorded.
- Peers (`--peers flink,kstreams`, bench.peers.rescale): Apache Flink and Kafka Streams
  rescaling the same per-key state their own way on the same records (the topic replayed into a
  fresh one per run at the pace of its timestamps), on both events, `--runs` times each, in the
  same rounds as the Spark cells; each run's final state checked against the harness's run of the
  same event.
- Simulator: every protocol of part 1 (HANDOFF with batch 1 and 64) once per routing and event,
  `bench simulate --from-topic` on the same topic with the same schedule, with the calibrated cost
  model.

Output, results/compare/rescale-bench-<stamp>/:
- rescale-bench.md: per event, routing and protocol, the medians over the runs of the pause and its
  steps, HANDOFF's p99 hold delay and rescale time, the state moved, exactness, and the
  simulator's figures; the order of the protocols by pause, on Spark and in the simulator; with
  peers, their table (`rescale_peers.table_markdown`) and the order across the engines per event
  (bench.experiments.rescale_table);
- rescale-bench.json: every row, and each event's schedule and peer runs;
- `make compare`'s rescale figures over all the runs.

Run: `python -m bench.experiments.rescale_bench [--runs 3] [--routings VNODE,KEY_GROUP] [--protocols ...]
[--handoff-batches 1,64] [--scale-in-routings KEY_GROUP] [--scale-in-protocols ...] [--peers flink,kstreams]`.
(A runner of its own, not a section of `make perf`: it drives whole runs.)
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

import pandas as pd

from bench.cli import simulate as simulate_command
from bench.cli._arguments import add_run_flag
from bench.compare.rescale import load_events, rescale_figures
from bench.experiments.rescale_table import cell_name, cell_rows, engines_order, event_label, table_markdown
from bench.peers import rescale as rescale_peers
from bench.rescale.kafka_clock import topic_span_ms
from bench.rescale.setup import SPARK_PROTOCOLS
from bench.results import record as run_record
from bench.results.reader import load_metrics, load_runs
from bench.stack import Stack, StackConfig
from datasets import get_dataset
from producers import expected_records, inspect_topic, replay
from producers.recorded import read_recorded

DATASET, LIMIT, PARTITIONS, RECORD_RATE = "NYC_FLIGHTS", 10_000, 10, 2000.0
"""The bench's recorded topic by default: 10,000 NYC_FLIGHTS records on 10 partitions, recorded at
2,000 records/s (`record_topic`)."""

SIMULATED = [("STOP_THE_WORLD", 1), ("SHARED_STATE", 1), ("LEARNER", 1), ("HANDOFF", 1), ("HANDOFF", 64)]
"""The simulator's protocols (and HANDOFF batches) beside the Spark runs."""

SCALE_IN_ROUTINGS = "KEY_GROUP"
"""The scale-in's routings by default: the one the Flink peer shares (Kafka Streams has its own units)."""
SCALE_IN_PROTOCOLS = ("STOP_THE_WORLD", "SHARED_STATE", "LEARNER")
"""The Spark protocols run on the scale-in by default."""
SCALE_IN_WHY = "not in the default scale-in: at batch 1 a KEY_GROUP run takes 7-8 min"
"""Why the default scale-in has no HANDOFF cell, printed under the table."""


def load_average() -> float:
    return os.getloadavg()[0]


def record_topic(bootstrap: str, dataset_name: str, limit: int, partitions: int, rate: float, log=print) -> str:
    """The bench's input topic, replayed at `rate` records/s unless it already holds the records.
    (Replayed as fast as possible, a topic's timestamps bunch: 8,000 of 10,000 records fell in 3 ms
    and the rest 35 ms later, so an event half-way through the span came three batches before
    the end.)

    Raises: RuntimeError: the topic holds other records (`inspect_topic` says `mismatch`)."""
    topic = f"rescale-bench.{dataset_name.lower()}.n{limit}.p{partitions}.r{rate:g}"
    dataset = get_dataset(dataset_name)
    state = inspect_topic(bootstrap, topic, expected_records(dataset, limit), partitions)
    if state.state == "mismatch":
        raise RuntimeError(f"topic {topic} holds records of another replay: delete it or choose another --limit")
    if state.state != "complete":
        log(f"recording {limit:,} {dataset_name} records into {topic} ...")
        if not replay(dataset, topic, bootstrap, partitions=partitions, limit=limit, rate=rate, progress=False,
                      resume=True).ok:
            raise RuntimeError(f"the replay into {topic} failed")
    return topic


@dataclass(frozen=True)
class Event:
    """One rescale event of the bench: `start` workers, then `to` half-way through the topic's Kafka
    timestamps (`schedule`). The scale-out is W -> W + 2; the scale-in, W + 2 -> W, moves the same
    units back."""

    start: int
    to: int

    @property
    def label(self) -> str:
        """`10 -> 12`, as the tables name the event."""
        return f"{self.start} -> {self.to}"

    @property
    def tag(self) -> str:
        """The run ids' suffix: `` for the scale-out, `-in` for the scale-in."""
        return "" if self.to > self.start else "-in"

    def schedule(self, span_ms: int) -> str:
        """`<half the span>ms:<to>`: the `--rescale` schedule on a topic whose timestamps span `span_ms`."""
        return f"{max(span_ms // 2, 0)}ms:{self.to}"


def span_of(bootstrap: str, topic: str) -> int:
    """The span of the topic's Kafka timestamps, ms.

    Raises: RuntimeError: the topic has no timestamps (empty)."""
    span = topic_span_ms(bootstrap, topic)
    if span is None:
        raise RuntimeError(f"topic {topic} is empty")
    return span


def schedule_of(bootstrap: str, topic: str, to: int) -> str:
    """`<half the topic's timestamp span>ms:<to>`. Raises: RuntimeError: the topic is empty."""
    return Event(0, to).schedule(span_of(bootstrap, topic))


def run_spark(run_id: str, topic: str, dataset: str, routing: str, protocol: str, schedule: str, workers: int,
              bootstrap: str, results_dir: Path, master: str, batch: int = 1, per_batch: int = 500,
              stages: int | None = None) -> dict:
    """One `bench run` process from `workers` workers, `stages` splitters and aggregators (default
    `workers`); returns its summary.json plus the load averages around it.

    Raises: RuntimeError: the run wrote no summary (its log's last lines in the message)."""
    cmd = [sys.executable, "-m", "bench", "run", "--grouping", routing, "--dataset", dataset, "--topic", topic,
           "--no-replay", "--run-id", run_id, "--master", master, "--bootstrap-servers", bootstrap,
           "--results-dir", str(results_dir), "--no-influx", "--no-progress", "--workers", str(workers),
           "--splitters", str(stages or workers), "--aggregators", str(stages or workers), "--cost-ms", "0",
           "--max-offsets-per-trigger", str(per_batch), "--rescale", schedule, "--protocol", protocol] \
        + (["--handoff-batch", str(batch)] if protocol == "HANDOFF" else [])
    load_before, t = load_average(), time.monotonic()
    done = subprocess.run(cmd, capture_output=True, text=True)
    summary_path = results_dir / run_id / "summary.json"
    if not summary_path.exists():
        raise RuntimeError(f"{run_id}: no summary (exit {done.returncode}): {done.stdout[-800:]}{done.stderr[-800:]}")
    summary = json.loads(summary_path.read_text())
    summary["bench"] = {"load_before": round(load_before, 2), "load_after": round(load_average(), 2),
                        "wall_s": round(time.monotonic() - t, 1)}
    return summary


def run_simulator(run_id: str, topic: str, dataset: str, routing: str, protocol: str, batch: int, schedule: str,
                  workers: int, bootstrap: str, results_dir: Path, extra: tuple[str, ...] = (),
                  splitters: int | None = None) -> dict:
    """`bench simulate --from-topic` with the same topic and schedule, from `workers` workers and
    `splitters` splitters (default `workers`), `extra` options after the others (e.g.
    `--cost-profile flink`); returns its summary.json (`results_dir`: where `bench simulate` writes
    its records, `bench.results.record.RESULTS_DIR`)."""
    printed = io.StringIO()  # its own tables: the bench prints one for all
    with contextlib.redirect_stdout(printed):
        code = bench_simulate(["--from-topic", topic, "--bootstrap-servers", bootstrap, "--dataset",
                               dataset, "--grouping", routing, "--workers", str(workers), "--splitters",
                               str(splitters or workers), "--run-id", run_id, "--no-progress", "--rescale", schedule,
                               "--protocol", protocol]
                              + (["--handoff-batch", str(batch)] if batch != 1 else []) + list(extra))
    if code != 0:
        raise RuntimeError(f"{run_id}: bench simulate exited {code}: {printed.getvalue()[-800:]}")
    return json.loads((results_dir / run_id / "summary.json").read_text())


def bench_simulate(argv: list[str]) -> int:
    """`python -m bench simulate ARGV` in this process: the command's own parser and handler
    (`bench.cli.simulate`, the sub-command contract of `bench.cli`); returns its exit code."""
    parser = argparse.ArgumentParser(prog="python -m bench")
    simulate_command.add_parsers(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(["simulate", *argv])
    return int(args.handler(args) or 0)


@dataclass(frozen=True)
class Plan:
    """What the bench runs: its events (the scale-out first), the Spark cells `(event, routing,
    protocol, HANDOFF batch)` and the simulator's `(event, routing)` (each with every `SIMULATED`
    protocol), in the order of a round."""

    events: list[Event]
    spark: list[tuple[Event, str, str, int]]
    simulated: list[tuple[Event, str]]


def _names(text: str) -> list[str]:
    return [n.strip().upper() for n in text.split(",") if n.strip()]


def parse_args(argv: list[str] | None = None) -> tuple[argparse.Namespace, Plan]:
    """The bench's options and its plan: on every routing, every protocol of `--protocols` once
    (HANDOFF once per `--handoff-batches`) on the scale-out; on every routing of
    `--scale-in-routings`, every protocol of `--scale-in-protocols` on the scale-in. Exits with a
    usage error on a protocol that does not run on Spark, `--runs` below 1 or a HANDOFF batch that
    is not a whole number >= 1. No `--scale-in-routings`: no scale-in (and no peer runs of it)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_run_flag(parser, "dataset", default=DATASET)
    parser.add_argument("--limit", type=int, default=LIMIT, help="records in the topic (default 10000)")
    add_run_flag(parser, "max_offsets_per_trigger", default=500,
                 also="500: the input still flows for about ten batches after the event, so that HANDOFF's rounds "
                      "have tuples to hold")
    parser.add_argument("--partitions", type=int, default=PARTITIONS)
    parser.add_argument("--record-rate", type=float, default=RECORD_RATE,
                        help="records/s at which the topic is recorded once (default 2000: 10,000 records span 5 s)")
    add_run_flag(parser, "workers", also="the scale-out is W -> W + 2, the scale-in W + 2 -> W")
    parser.add_argument("--routings", default="VNODE,KEY_GROUP", help="the scale-out's routings")
    parser.add_argument("--protocols", default=",".join(SPARK_PROTOCOLS), help="the Spark protocols to run")
    parser.add_argument("--handoff-batches", default="1,64", help="HANDOFF's units per round, one cell each")
    parser.add_argument("--scale-in-routings", default=SCALE_IN_ROUTINGS,
                        help=f"the scale-in's routings on Spark and in the simulator; the peers scale in too "
                             f"(default {SCALE_IN_ROUTINGS}, the peers' routing; empty: no scale-in)")
    parser.add_argument("--scale-in-protocols", default=",".join(SCALE_IN_PROTOCOLS),
                        help=f"the Spark protocols run on the scale-in (default {','.join(SCALE_IN_PROTOCOLS)}; "
                             f"HANDOFF is {SCALE_IN_WHY})")
    parser.add_argument("--runs", type=int, default=3, help="runs per Spark cell (default 3)")
    parser.add_argument("--master", default="local[2]")
    add_run_flag(parser, "bootstrap_servers")
    parser.add_argument("--peers", default="", help="also these systems on the same records, `--runs` times "
                        f"each per event, interleaved with the Spark cells: {', '.join(rescale_peers.PEERS)} "
                        f"(default none)")
    parser.add_argument("--peer-speed", type=float, default=1.0,
                        help="the peers' input: the topic replayed at x this pace of its timestamps (default 1)")
    args = parser.parse_args(argv)
    try:
        args.peer_list = rescale_peers.parse_peers(args.peers)
    except ValueError as e:
        parser.error(f"--peers: {e}")
    if not args.peer_speed > 0:
        parser.error("--peer-speed must be > 0")
    protocols, in_protocols = _names(args.protocols), _names(args.scale_in_protocols)
    unknown = [p for p in protocols + in_protocols if p not in SPARK_PROTOCOLS]
    if unknown or args.runs < 1:
        parser.error(f"protocols {unknown} do not run on Spark (valid: {', '.join(SPARK_PROTOCOLS)})"
                     if unknown else "--runs must be >= 1")
    try:
        batches = [int(b) for b in args.handoff_batches.split(",") if b.strip()]
    except ValueError:
        parser.error(f"--handoff-batches takes whole numbers >= 1, got {args.handoff_batches!r}")
    if not batches or min(batches) < 1:
        parser.error(f"--handoff-batches takes whole numbers >= 1, got {args.handoff_batches!r}")
    in_routings = _names(args.scale_in_routings)
    out, back = Event(args.workers, args.workers + 2), Event(args.workers + 2, args.workers)

    def cells(event, routings, names):
        return [(event, r, p, b) for r in routings for p in names for b in (batches if p == "HANDOFF" else [1])]

    spark = cells(out, _names(args.routings), protocols) + cells(back, in_routings, in_protocols)
    simulated = [(out, r) for r in _names(args.routings)] + [(back, r) for r in in_routings]
    return args, Plan([out, back] if in_routings else [out], spark, simulated)


def local_kafka() -> str:
    """The local stack's Kafka bootstrap servers, the stack started first if any service is down."""
    stack_config = StackConfig.from_env()
    stack = Stack(stack_config)
    if not all(s.running for s in stack.status()):
        stack.up(log=print)
    return stack_config.bootstrap_servers


def conditions_text(args: argparse.Namespace, topic: str, schedules: dict[str, str], stamp: str) -> str:
    """One line of the bench's conditions, printed first and written above the table."""
    events = "; ".join(f"W {label}: `--rescale {schedule}`" for label, schedule in schedules.items())
    return (f"{args.limit:,} {args.dataset} records on {args.partitions} partitions ({topic}, recorded at "
            f"{args.record_rate:g} records/s, read as fast as possible); {events}; S = A = {args.workers}, cost 0, "
            f"{args.max_offsets_per_trigger:,} records per batch, `--master {args.master}`, "
            f"{os.cpu_count()} cores; "
            f"{args.runs} run(s) per Spark cell, interleaved; {stamp} UTC")


def scale_in_notes(plan: Plan) -> list[str]:
    """Why cells of the scale-out have no scale-in row: the routings and protocols left out of it."""
    if len(plan.events) < 2:
        return ["no scale-in: `--scale-in-routings` is empty"]
    out, back = plan.events
    routings_out = dict.fromkeys(r for e, r, _, _ in plan.spark if e == out)
    routings_in = {r for e, r in plan.simulated if e == back}
    protocols_out = dict.fromkeys(p for e, _, p, _ in plan.spark if e == out)
    protocols_in = {p for e, _, p, _ in plan.spark if e == back}
    notes = [f"{r}: scale-out only (`--scale-in-routings`, default {SCALE_IN_ROUTINGS}, the routing the Flink "
             f"peer shares)" for r in routings_out if r not in routings_in]
    notes += [f"{p}: scale-out only" + (f" ({SCALE_IN_WHY})" if p == "HANDOFF" else "")
              + "; `--scale-in-protocols` adds it" for p in protocols_out if p not in protocols_in]
    return notes


def peer_conditions(args: argparse.Namespace, topic: str) -> str:
    """The peers' conditions: their input and what differs from the Spark runs."""
    return (f"The same {args.limit:,} records: {topic} replayed into a fresh topic per run at x{args.peer_speed:g} "
            f"the pace of its Kafka timestamps (the peers read it open loop, as it arrives; the Spark runs read "
            f"the recorded topic in batches of {args.max_offsets_per_trigger:,}), the same `--rescale` events, "
            f"cost 0, one JVM per run; {args.runs} run(s) per system, protocol and event, "
            f"interleaved with the Spark cells. Pause: the longest time a released tuple of a moved unit "
            f"waited while no tuple of a moved unit was processed. Latency: processing time - release time.")


def measured_cells(args: argparse.Namespace, plan: Plan, topic: str, schedules: dict[str, str], stamp: str,
                   results: Path, out: Path) -> tuple[list[dict], list[str], dict]:
    """Every Spark cell and every peer on every event `args.runs` times, interleaved round by round
    (so that a change of the machine's load hits every protocol alike); returns the Spark summaries,
    their run ids and per (peer system, protocol, event label) its runs (`rescale_peers.PeerRun`, or
    the RuntimeError of a run that failed)."""
    spark_runs, run_ids = [], []
    peer_runs = {(p.system, protocol, e.label): [] for p in args.peer_list for protocol in p.protocols
                 for e in plan.events}
    recorded = read_recorded(args.bootstrap_servers, topic) if args.peer_list else None
    for run in range(1, args.runs + 1):
        for event, routing, protocol, batch in plan.spark:
            cell = cell_name(protocol, batch).lower().replace(" ", "-")
            run_id = f"rb-{stamp}-{routing.lower()}-{cell}{event.tag}-{run}"
            s = run_spark(run_id, topic, args.dataset, routing, protocol, schedules[event.label], event.start,
                          args.bootstrap_servers, results, args.master, batch, args.max_offsets_per_trigger,
                          stages=args.workers)
            e = s["rescale"]["events"][0]
            held = f", hold p99 {e.get('hold_delay_ms_p99')} ms" if protocol == "HANDOFF" else ""
            print(f"  {run_id}: {s['status']}, pause {e.get('pause_ms')} ms{held}, {e.get('moved_keys')} keys "
                  f"moved, load {s['bench']['load_before']} -> {s['bench']['load_after']}", flush=True)
            spark_runs.append(s)
            run_ids.append(run_id)
        for peer in args.peer_list:
            for protocol in peer.protocols:
                for event in plan.events:
                    name = f"{peer.system}-{protocol.lower().replace('_', '-')}{event.tag}-{run}"
                    peer_runs[peer.system, protocol, event.label].append(_peer_run(
                        args, peer, protocol, event, topic, schedules[event.label], out / "peers" / name, recorded))
    return spark_runs, run_ids, peer_runs


def _peer_run(args, peer, protocol: str, event: Event, topic: str, schedule: str, out: Path, recorded):
    """One peer run, printed; the RuntimeError of a failed run is returned, not raised."""
    load_before = load_average()
    try:
        r = rescale_peers.run_peer(peer, args.bootstrap_servers, topic, event.start, schedule, out,
                                   speed=args.peer_speed, recorded=recorded, protocol=protocol,
                                   log=lambda _line: None)
    except RuntimeError as e:
        print(f"  {out.name}: FAILED: {str(e).splitlines()[0]}", flush=True)
        return e
    e = r.result["events"][0]
    print(f"  {out.name}: {r.result['tuples_processed']:,} tuples, {len(e['moved_units'])} units moved, rescale "
          f"{e['in_force_wall_ms'] - e['request_wall_ms']:,} ms, load {load_before:.2f} -> {load_average():.2f}",
          flush=True)
    return r


def harness_state(peer: rescale_peers.Peer, event: str, spark_runs: list[dict], simulated: list[dict],
                  results: Path):
    """The harness's final state to check a peer's runs of `event` (a label) against: a completed
    Spark run of the same event and of the routing whose owners the peer reproduces (any routing
    when it has none), else the simulator's run of it; None when the bench ran neither. Returns
    (state frame, run id) or (None, None)."""
    for runs in (spark_runs, simulated):
        for s in runs:
            if s["status"] == "completed" and event_label(s) == event \
                    and (peer.owners_as is None or s["grouping"] == peer.owners_as):
                return pd.read_parquet(results / s["run_id"] / "state.parquet"), s["run_id"]
    return None, None


def peer_rows(args: argparse.Namespace, plan: Plan, peer_runs: dict, spark_runs: list[dict], simulated: list[dict],
              results: Path) -> list[dict]:
    """One row per event, peer system and protocol (`rescale_peers.cell_row`), its runs checked
    against the harness's state of the same event."""
    rows = []
    for event in plan.events:
        for peer in args.peer_list:
            state, run_id = harness_state(peer, event.label, spark_runs, simulated, results)
            for protocol in peer.protocols:
                summaries = [{"error": str(r).splitlines()[0]} if isinstance(r, Exception)
                             else rescale_peers.summary_row(r, state)
                             for r in peer_runs[peer.system, protocol, event.label]]
                rows.append({**rescale_peers.cell_row(peer, protocol, event.label, summaries),
                             "checked_against": run_id})
    return rows


def simulator_cells(args: argparse.Namespace, plan: Plan, topic: str, schedules: dict[str, str], stamp: str,
                    results: Path) -> tuple[list[dict], list[str]]:
    """Every `SIMULATED` protocol once per simulated (event, routing) on the same topic and
    schedule; returns their summaries and run ids."""
    simulated, run_ids = [], []
    for event, routing in plan.simulated:
        for protocol, batch in SIMULATED:
            run_id = (f"rb-{stamp}-{routing.lower()}-sim-{protocol.lower()}" + (f"-b{batch}" if batch != 1 else "")
                      + event.tag)
            simulated.append(run_simulator(run_id, topic, args.dataset, routing, protocol, batch,
                                           schedules[event.label], event.start, args.bootstrap_servers, results,
                                           splitters=args.workers))
            run_ids.append(run_id)
    return simulated, run_ids


def main(argv: list[str] | None = None) -> int:
    args, plan = parse_args(argv)
    if args.bootstrap_servers is None:
        args.bootstrap_servers = local_kafka()
    stamp = f"{datetime.now(timezone.utc):%Y%m%dT%H%M%S}"
    results = Path(run_record.RESULTS_DIR)
    topic = record_topic(args.bootstrap_servers, args.dataset, args.limit, args.partitions, args.record_rate)
    span = span_of(args.bootstrap_servers, topic)  # read once: every event's schedule comes from it
    schedules = {e.label: e.schedule(span) for e in plan.events}
    conditions = conditions_text(args, topic, schedules, stamp)
    print(conditions, flush=True)
    out = results / "compare" / f"rescale-bench-{stamp}"
    out.mkdir(parents=True, exist_ok=True)
    for peer in args.peer_list:
        rescale_peers.build(peer)
    spark_runs, spark_ids, peer_runs = measured_cells(args, plan, topic, schedules, stamp, results, out)
    simulated, simulated_ids = simulator_cells(args, plan, topic, schedules, stamp, results)
    rows = cell_rows(spark_runs, simulated)
    peers = peer_rows(args, plan, peer_runs, spark_runs, simulated, results)
    text = table_markdown(rows, conditions, scale_in_notes(plan))
    if peers:
        text += "\n" + rescale_peers.table_markdown(peers, peer_conditions(args, topic)) + "\n" + engines_order(rows, peers)
    (out / "rescale-bench.md").write_text(text)
    (out / "rescale-bench.json").write_text(json.dumps(bench_record(args, plan, topic, schedules, conditions,
                                                                    rows, peers, peer_runs), indent=1, default=str))
    _figures(out, spark_ids + simulated_ids)
    print((out / "rescale-bench.md").read_text())
    print(f"written: {out}")
    return 0


def bench_record(args, plan: Plan, topic: str, schedules: dict[str, str], conditions: str, rows: list[dict],
                 peers: list[dict], peer_runs: dict) -> dict:
    """rescale-bench.json: the conditions, every row, and each event's schedule, start W and peer
    runs' directories (`{system: {protocol: [dir, ...]}}`); `schedule`, `workers` and `peer_runs` at
    the top are the scale-out's (the event `bench.experiments.cost_fit fit` fits on)."""
    def runs_of(event):
        return {p.system: {protocol: [str(r.out) for r in peer_runs[p.system, protocol, event.label]
                                      if not isinstance(r, Exception)] for protocol in p.protocols}
                for p in args.peer_list}

    out = plan.events[0]
    return {"conditions": conditions, "dataset": args.dataset, "topic": topic, "schedule": schedules[out.label],
            "workers": out.start, "rows": rows, "peers": peers, "peer_runs": runs_of(out),
            "events": [{"event": e.label, "schedule": schedules[e.label], "workers": e.start, "to": e.to,
                        "peer_runs": runs_of(e)} for e in plan.events]}


def _figures(out: Path, run_ids: list[str]) -> None:
    """`make compare`'s rescale figures over the bench's runs."""
    runs = load_runs(run_ids=run_ids)
    for stem, fig in rescale_figures(load_metrics(runs), load_events(runs)).items():
        fig.savefig(out / f"{stem}.png", dpi=110)


if __name__ == "__main__":
    sys.exit(main())
