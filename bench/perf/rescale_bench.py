"""`make rescale-bench`: the rescale protocols on Spark side by side on one recorded topic, under the
same conditions, beside the simulator's figures for the same topic and schedule.

- One topic: `--limit` records of `--dataset` on `--partitions` partitions, recorded once at
  `--record-rate` records/s (kept for later benches), so that its Kafka timestamps are spread
  evenly; every run reads it as fast as it can. The event is `W -> W + 2` workers half-way through
  the topic's Kafka timestamps, so about half of the batches come after it.
- Spark: every routing x every protocol that runs on Spark (bench/rescale/setup.py
  SPARK_PROTOCOLS; HANDOFF once per `--handoff-batches`, 1 and 64 by default), `--runs` times.
  Each run is a `bench run` process of its own (its own Spark JVM, as a user runs it). The cells are interleaved round by round, so that a change of the
  machine's load hits every protocol alike. The load average before and after each run is recorded.
- Peers (`--peers flink,kstreams`, bench.perf.rescale_peers): Apache Flink and Kafka Streams
  rescaling the same per-key state their own way on the same records (the topic replayed into a
  fresh one per run at the pace of its timestamps), `--runs` times each, in the same rounds as the
  Spark cells; each run's final state checked against the harness's.
- Simulator: every protocol of part 1 (HANDOFF with batch 1 and 64) once per routing,
  `bench simulate --from-topic` on the same topic with the same schedule, with the calibrated cost
  model.

Output, results/compare/rescale-bench-<stamp>/:
- rescale-bench.md: per routing and protocol, the medians over the runs of the pause and its
  steps, HANDOFF's p99 hold delay and rescale time, the state moved, exactness, and the
  simulator's figures; and the order of the protocols by pause, on Spark and in the simulator;
  with peers, their table (`rescale_peers.table_markdown`) and the order across the engines;
- rescale-bench.json: every run's figures;
- `make compare`'s rescale figures over all the runs.

Run: `python -m bench.perf.rescale_bench [--runs 3] [--routings VNODE,KEY_GROUP] [--protocols ...]
[--handoff-batches 1,64] [--peers flink,kstreams]`. (A runner of its own, not a section of `make perf`: it drives whole runs.)
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import statistics
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

import pandas as pd

from bench.cli import simulate as simulate_command
from bench.compare.rescale import load_events, rescale_figures
from bench.perf import rescale_peers
from bench.rescale.kafka_clock import topic_span_ms
from bench.rescale.setup import SPARK_PROTOCOLS
from bench.results.reader import load_metrics, load_runs
from bench.results import record as run_record
from bench.stack import Stack, StackConfig
from datasets import get_dataset
from producers import expected_records, inspect_topic, replay
from producers.recorded import read_recorded

DATASET, LIMIT, PARTITIONS, RECORD_RATE = "NYC_FLIGHTS", 10_000, 10, 2000.0
"""The bench's recorded topic by default: 10,000 NYC_FLIGHTS records on 10 partitions, recorded at
2,000 records/s (`record_topic`)."""

SIMULATED = [("STOP_THE_WORLD", 1), ("SHARED_STATE", 1), ("LEARNER", 1), ("HANDOFF", 1), ("HANDOFF", 64)]
"""The simulator's protocols (and HANDOFF batches) beside the Spark runs."""


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


def schedule_of(bootstrap: str, topic: str, workers: int) -> str:
    """`<half the topic's timestamp span>ms:<workers + 2>`.

    Raises: RuntimeError: the topic has no timestamps (empty)."""
    span = topic_span_ms(bootstrap, topic)
    if span is None:
        raise RuntimeError(f"topic {topic} is empty")
    return f"{max(span // 2, 0)}ms:{workers + 2}"


def cell_name(protocol: str, batch: int) -> str:
    """`HANDOFF b64` for a HANDOFF batch other than 1, else the protocol's name."""
    return f"{protocol} b{batch}" if protocol == "HANDOFF" and batch != 1 else protocol


def run_spark(run_id: str, topic: str, dataset: str, routing: str, protocol: str, schedule: str, workers: int,
              bootstrap: str, results_dir: Path, master: str, batch: int = 1, per_batch: int = 500) -> dict:
    """One `bench run` process; returns its summary.json plus the load averages around it.

    Raises: RuntimeError: the run wrote no summary (its log's last lines in the message)."""
    cmd = [sys.executable, "-m", "bench", "run", "--grouping", routing, "--dataset", dataset, "--topic", topic,
           "--no-replay", "--run-id", run_id, "--master", master, "--bootstrap-servers", bootstrap,
           "--results-dir", str(results_dir), "--no-influx", "--no-progress", "--workers", str(workers),
           "--splitters", str(workers), "--aggregators", str(workers), "--cost-ms", "0",
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
                  workers: int, bootstrap: str, results_dir: Path, extra: tuple[str, ...] = ()) -> dict:
    """`bench simulate --from-topic` with the same topic and schedule, `extra` options after the
    others (e.g. `--cost-profile flink`); returns its summary.json (`results_dir`: where `bench
    simulate` writes its records, `bench.results.record.RESULTS_DIR`)."""
    printed = io.StringIO()  # its own tables: the bench prints one for all
    with contextlib.redirect_stdout(printed):
        code = bench_simulate(["--from-topic", topic, "--bootstrap-servers", bootstrap, "--dataset",
                               dataset, "--grouping", routing, "--workers", str(workers), "--splitters", str(workers),
                               "--run-id", run_id, "--no-progress", "--rescale", schedule, "--protocol", protocol]
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


def cell_rows(spark_runs: list[dict], simulated: list[dict]) -> list[dict]:
    """The table's rows: one per (routing, protocol) measured on Spark, with the medians over its
    runs, and one per simulated (routing, protocol, batch).

    Args: spark_runs / simulated: summary.json dicts (one rescale event each), with `grouping`.
    """
    rows = []
    by_cell: dict[tuple[str, str], list[dict]] = {}
    for s in spark_runs:
        cell = cell_name(s["rescale"]["protocol"], s["rescale"].get("handoff_batch", 1))
        by_cell.setdefault((s["grouping"], cell), []).append(s)

    def median(values):
        values = [v for v in values if v is not None]
        return statistics.median(values) if values else None

    for (routing, protocol), runs in by_cell.items():
        events = [s["rescale"]["events"][0] for s in runs]
        pauses = [e["pause_ms"] for e in events if e.get("pause_ms") is not None]
        steps = sorted(k for k in {k for e in events for k, v in (e.get("steps") or {}).items()
                                   if isinstance(v, int | float)})
        rows.append({
            "routing": routing, "protocol": protocol, "where": "Spark", "runs": len(runs),
            "pause_ms": statistics.median(pauses) if pauses else None,
            "pause_ms_runs": pauses,
            "hold_delay_ms_p99": median([e.get("hold_delay_ms_p99") for e in events]),
            "hold_delay_ms_p99_runs": [e.get("hold_delay_ms_p99") for e in events if e.get("hold_delay_ms_p99")],
            "held_tuples": median([e.get("held_tuples") for e in events]),
            "rescale_ms": median([e.get("rescale_ms") for e in events]),
            "steps_ms": {k: statistics.median([e["steps"][k] for e in events if k in (e.get("steps") or {})])
                         for k in steps},
            "moved_groups": statistics.median([e["moved_groups"] for e in events]),
            "moved_keys": statistics.median([e["moved_keys"] for e in events]),
            "transfer_records": statistics.median([e.get("transfer_records", 0) for e in events]),
            "exact": all(s["status"] == "completed" and all(v is not False for v in s["checks"].values())
                         for s in runs),
            "ownership_violations": sum(s["rescale"]["ownership_violations"] for s in runs),
            "load": [(s.get("bench") or {}).get("load_before") for s in runs],
        })
    for s in simulated:
        e = s["rescale"]["events"][0]
        batch = s["rescale"].get("handoff_batch", 1)
        rows.append({
            "routing": s["grouping"], "protocol": s["rescale"]["protocol"] + (f" b{batch}" if batch != 1 else ""),
            "where": "simulator", "runs": 1, "pause_ms": e.get("pause_ms"), "hold_delay_ms_p99": e.get("hold_delay_ms_p99"),
            "held_tuples": e.get("held_tuples"), "rescale_ms": e.get("rescale_ms"),
            "moved_groups": e.get("moved_groups"), "moved_keys": e.get("moved_keys"),
            "exact": s["status"] == "completed", "ownership_violations": e.get("ownership_violations"),
        })
    return rows


def order_by_pause(rows: list[dict], routing: str, where: str, protocols: list[str]) -> list[list[str]]:
    """`protocols` of `routing` measured `where`, from the shortest median pause to the longest, the
    ones with equal pauses (those without a pause: 0) in one group, in `protocols`' order."""
    pause = {r["protocol"]: r["pause_ms"] for r in rows if r["routing"] == routing and r["where"] == where}
    groups: list[list[str]] = []
    for p in sorted((p for p in protocols if pause.get(p) is not None), key=lambda p: pause[p]):
        if groups and pause[groups[-1][0]] == pause[p]:
            groups[-1].append(p)
        else:
            groups.append([p])
    return groups


def order_text(groups: list[list[str]]) -> str:
    """`A = B < C`: the groups of `order_by_pause`."""
    return " < ".join(" = ".join(g) for g in groups)


def table_markdown(rows: list[dict], conditions: str) -> str:
    def f(v, fmt="{:,.0f}"):
        return "-" if v is None else fmt.format(v)

    lines = ["## Rescale protocols on Spark and in the simulator", "", conditions, "",
             "| routing | protocol | where | runs | pause ms (median) | pause ms (runs) | steps ms (medians) | "
             "hold p99 ms (median) | hold p99 ms (runs) | held | rescale ms | moved groups | moved keys | "
             "records moved | exact | violations | load (1 min) |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in sorted(rows, key=lambda r: (r["routing"], r["where"] != "Spark", r["pause_ms"] or 0)):
        steps = ", ".join(f"{k} {v:,.0f}" for k, v in (r.get("steps_ms") or {}).items()) or "-"
        lines.append(
            f"| {r['routing']} | {r['protocol']} | {r['where']} | {r['runs']} | {f(r['pause_ms'])} | "
            f"{' / '.join(f(p) for p in r.get('pause_ms_runs') or []) or '-'} | {steps} | "
            f"{f(r.get('hold_delay_ms_p99'), '{:,.1f}')} | "
            f"{' / '.join(f(p) for p in r.get('hold_delay_ms_p99_runs') or []) or '-'} | {f(r.get('held_tuples'))} | "
            f"{f(r.get('rescale_ms'))} | {f(r['moved_groups'])} | {f(r['moved_keys'])} | "
            f"{f(r.get('transfer_records'))} | {'yes' if r['exact'] else 'NO'} | {f(r['ownership_violations'])} | "
            f"{' / '.join(f(x, '{:.1f}') for x in r.get('load') or []) or '-'} |")
    lines += ["", "Order by pause (shortest first), Spark against the simulator, over the protocols that run on Spark:", ""]
    for routing in sorted({r["routing"] for r in rows}):
        on_spark = [r["protocol"] for r in rows if r["routing"] == routing and r["where"] == "Spark"]
        spark, sim = order_by_pause(rows, routing, "Spark", on_spark), order_by_pause(rows, routing, "simulator", on_spark)
        lines.append(f"- {routing}: Spark {order_text(spark)}; simulator {order_text(sim)}"
                     f" ({'same order' if spark == sim else 'different order'})")
    return "\n".join(lines) + "\n"


def parse_args(argv: list[str] | None = None) -> tuple[argparse.Namespace, list[str], list[tuple[str, int]]]:
    """The bench's options, its routings and its Spark cells `(protocol, HANDOFF batch)` (every
    protocol once, HANDOFF once per `--handoff-batches`). Exits with a usage error on a protocol that
    does not run on Spark, `--runs` below 1 or a HANDOFF batch that is not a whole number >= 1."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", default=DATASET)
    parser.add_argument("--limit", type=int, default=LIMIT, help="records in the topic (default 10000)")
    parser.add_argument("--max-offsets-per-trigger", type=int, default=500,
                        help="records per micro-batch (default 500: the input still flows for about ten batches "
                             "after the event, so that HANDOFF's rounds have tuples to hold)")
    parser.add_argument("--partitions", type=int, default=PARTITIONS)
    parser.add_argument("--record-rate", type=float, default=RECORD_RATE,
                        help="records/s at which the topic is recorded once (default 2000: 10,000 records span 5 s)")
    parser.add_argument("--workers", type=int, default=10, help="W before the event; W + 2 after (default 10)")
    parser.add_argument("--routings", default="VNODE,KEY_GROUP")
    parser.add_argument("--protocols", default=",".join(SPARK_PROTOCOLS), help="the Spark protocols to run")
    parser.add_argument("--handoff-batches", default="1,64", help="HANDOFF's units per round, one cell each")
    parser.add_argument("--runs", type=int, default=3, help="runs per Spark cell (default 3)")
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--bootstrap-servers", help="Kafka (default: the local stack, started if needed)")
    parser.add_argument("--peers", default="", help="also these systems on the same records, `--runs` times "
                        f"each, interleaved with the Spark cells: {', '.join(rescale_peers.PEERS)} (default none)")
    parser.add_argument("--peer-speed", type=float, default=1.0,
                        help="the peers' input: the topic replayed at x this pace of its timestamps (default 1)")
    args = parser.parse_args(argv)
    try:
        args.peer_list = rescale_peers.parse_peers(args.peers)
    except ValueError as e:
        parser.error(f"--peers: {e}")
    if not args.peer_speed > 0:
        parser.error("--peer-speed must be > 0")
    routings = [r.strip().upper() for r in args.routings.split(",") if r.strip()]
    protocols = [p.strip().upper() for p in args.protocols.split(",") if p.strip()]
    unknown = [p for p in protocols if p not in SPARK_PROTOCOLS]
    if unknown or args.runs < 1:
        parser.error(f"--protocols {unknown} do not run on Spark (valid: {', '.join(SPARK_PROTOCOLS)})"
                     if unknown else "--runs must be >= 1")
    try:
        batches = [int(b) for b in args.handoff_batches.split(",") if b.strip()]
    except ValueError:
        parser.error(f"--handoff-batches takes whole numbers >= 1, got {args.handoff_batches!r}")
    if not batches or min(batches) < 1:
        parser.error(f"--handoff-batches takes whole numbers >= 1, got {args.handoff_batches!r}")
    return args, routings, [(p, b) for p in protocols for b in (batches if p == "HANDOFF" else [1])]


def local_kafka() -> str:
    """The local stack's Kafka bootstrap servers, the stack started first if any service is down."""
    stack_config = StackConfig.from_env()
    stack = Stack(stack_config)
    if not all(s.running for s in stack.status()):
        stack.up(log=print)
    return stack_config.bootstrap_servers


def conditions_text(args: argparse.Namespace, topic: str, schedule: str, stamp: str) -> str:
    """One line of the bench's conditions, printed first and written above the table."""
    return (f"{args.limit:,} {args.dataset} records on {args.partitions} partitions ({topic}, recorded at "
            f"{args.record_rate:g} records/s, read as fast as possible), "
            f"`--rescale {schedule}`, W {args.workers} -> {args.workers + 2}, S = A = {args.workers}, cost 0, "
            f"{args.max_offsets_per_trigger:,} records per batch, `--master {args.master}`, "
            f"{os.cpu_count()} cores; "
            f"{args.runs} run(s) per Spark cell, interleaved; {stamp} UTC")


def peer_conditions(args: argparse.Namespace, topic: str) -> str:
    """The peers' conditions: their input and what differs from the Spark runs."""
    return (f"The same {args.limit:,} records: {topic} replayed into a fresh topic per run at x{args.peer_speed:g} "
            f"the pace of its Kafka timestamps (the peers read it open loop, as it arrives; the Spark runs read "
            f"the recorded topic in batches of {args.max_offsets_per_trigger:,}), the same `--rescale` event, "
            f"W {args.workers} -> {args.workers + 2}, cost 0, one JVM per run; {args.runs} run(s) per system, "
            f"interleaved with the Spark cells. Pause: the longest time a released tuple of a moved unit "
            f"waited while no tuple of a moved unit was processed. Latency: processing time - release time.")


def measured_cells(args: argparse.Namespace, routings: list[str], cells: list[tuple[str, int]], topic: str,
                   schedule: str, stamp: str, results: Path, out: Path) -> tuple[list[dict], list[str], dict]:
    """Every Spark cell and every peer `args.runs` times, interleaved round by round (so that a change
    of the machine's load hits every protocol alike); returns the Spark summaries, their run ids and
    per peer system its runs (`rescale_peers.PeerRun`, or the RuntimeError of a run that failed)."""
    spark_runs, run_ids, peer_runs = [], [], {p.system: [] for p in args.peer_list}
    recorded = read_recorded(args.bootstrap_servers, topic) if args.peer_list else None
    for run in range(1, args.runs + 1):
        for routing in routings:
            for protocol, batch in cells:
                run_id = f"rb-{stamp}-{routing.lower()}-{cell_name(protocol, batch).lower().replace(' ', '-')}-{run}"
                s = run_spark(run_id, topic, args.dataset, routing, protocol, schedule, args.workers,
                              args.bootstrap_servers, results, args.master, batch, args.max_offsets_per_trigger)
                e = s["rescale"]["events"][0]
                held = f", hold p99 {e.get('hold_delay_ms_p99')} ms" if protocol == "HANDOFF" else ""
                print(f"  {run_id}: {s['status']}, pause {e.get('pause_ms')} ms{held}, {e.get('moved_keys')} keys "
                      f"moved, load {s['bench']['load_before']} -> {s['bench']['load_after']}", flush=True)
                spark_runs.append(s)
                run_ids.append(run_id)
        for peer in args.peer_list:
            load_before = load_average()
            try:
                r = rescale_peers.run_peer(peer, args.bootstrap_servers, topic, args.workers, schedule,
                                           out / "peers" / f"{peer.system}-{run}", speed=args.peer_speed,
                                           recorded=recorded, log=lambda _line: None)
            except RuntimeError as e:
                print(f"  {peer.system}-{run}: FAILED: {str(e).splitlines()[0]}", flush=True)
                peer_runs[peer.system].append(e)
                continue
            e = r.result["events"][0]
            print(f"  {peer.system}-{run}: {r.result['tuples_processed']:,} tuples, {len(e['moved_units'])} units "
                  f"moved, rescale {e['in_force_wall_ms'] - e['request_wall_ms']:,} ms, load {load_before:.2f} -> "
                  f"{load_average():.2f}", flush=True)
            peer_runs[peer.system].append(r)
    return spark_runs, run_ids, peer_runs


def harness_state(peer: rescale_peers.Peer, spark_runs: list[dict], simulated: list[dict], results: Path):
    """The harness's final state to check a peer against: a completed Spark run of the routing whose
    owners the peer reproduces (any routing when it has none), else the simulator's run of it;
    None when the bench ran neither. Returns (state frame, run id) or (None, None)."""
    for runs in (spark_runs, simulated):
        for s in runs:
            if s["status"] == "completed" and (peer.owners_as is None or s["grouping"] == peer.owners_as):
                return pd.read_parquet(results / s["run_id"] / "state.parquet"), s["run_id"]
    return None, None


def peer_rows(args: argparse.Namespace, peer_runs: dict, spark_runs: list[dict], simulated: list[dict],
              results: Path) -> list[dict]:
    """One row per peer system (`rescale_peers.cell_row`), its runs checked against the harness's state."""
    rows = []
    for peer in args.peer_list:
        state, run_id = harness_state(peer, spark_runs, simulated, results)
        summaries = [{"error": str(r).splitlines()[0]} if isinstance(r, Exception) else rescale_peers.summary_row(r, state)
                     for r in peer_runs[peer.system]]
        row = rescale_peers.cell_row(peer, summaries)
        row["checked_against"] = run_id
        rows.append(row)
    return rows


def engines_order(rows: list[dict], peers: list[dict]) -> str:
    """The protocols by median pause across Spark (per routing) and the peers, with the runs' spread."""
    cells = [(f"Spark {r['routing']} {r['protocol']}", r["pause_ms"], r.get("pause_ms_runs") or [])
             for r in rows if r["where"] == "Spark"]
    cells += [(f"{p['title']} {p['protocol']}", p["pause_ms"], p["pause_ms_runs"]) for p in peers]
    return ("Order by pause across the engines (median ms, min-max over the runs), shortest first: "
            + rescale_peers.order_across_engines(cells) + "\n")


def simulator_cells(args: argparse.Namespace, routings: list[str], topic: str, schedule: str, stamp: str,
                    results: Path) -> tuple[list[dict], list[str]]:
    """Every `SIMULATED` protocol once per routing on the same topic and schedule; returns their
    summaries and run ids."""
    simulated, run_ids = [], []
    for routing in routings:
        for protocol, batch in SIMULATED:
            run_id = f"rb-{stamp}-{routing.lower()}-sim-{protocol.lower()}" + (f"-b{batch}" if batch != 1 else "")
            simulated.append(run_simulator(run_id, topic, args.dataset, routing, protocol, batch, schedule,
                                           args.workers, args.bootstrap_servers, results))
            run_ids.append(run_id)
    return simulated, run_ids


def main(argv: list[str] | None = None) -> int:
    args, routings, cells = parse_args(argv)
    if args.bootstrap_servers is None:
        args.bootstrap_servers = local_kafka()
    stamp = f"{datetime.now(timezone.utc):%Y%m%dT%H%M%S}"
    results = Path(run_record.RESULTS_DIR)
    topic = record_topic(args.bootstrap_servers, args.dataset, args.limit, args.partitions, args.record_rate)
    schedule = schedule_of(args.bootstrap_servers, topic, args.workers)
    conditions = conditions_text(args, topic, schedule, stamp)
    print(conditions, flush=True)
    out = results / "compare" / f"rescale-bench-{stamp}"
    out.mkdir(parents=True, exist_ok=True)
    for peer in args.peer_list:
        rescale_peers.build(peer)
    spark_runs, spark_ids, peer_runs = measured_cells(args, routings, cells, topic, schedule, stamp, results, out)
    simulated, simulated_ids = simulator_cells(args, routings, topic, schedule, stamp, results)
    rows = cell_rows(spark_runs, simulated)
    peers = peer_rows(args, peer_runs, spark_runs, simulated, results)
    text = table_markdown(rows, conditions)
    if peers:
        text += "\n" + rescale_peers.table_markdown(peers, peer_conditions(args, topic)) + "\n" + engines_order(rows, peers)
    (out / "rescale-bench.md").write_text(text)
    record = {"conditions": conditions, "dataset": args.dataset, "topic": topic, "schedule": schedule,
              "workers": args.workers, "rows": rows, "peers": peers,
              "peer_runs": {system: [str(r.out) for r in runs if not isinstance(r, Exception)]
                            for system, runs in peer_runs.items()}}
    (out / "rescale-bench.json").write_text(json.dumps(record, indent=1, default=str))
    _figures(out, spark_ids + simulated_ids)
    print((out / "rescale-bench.md").read_text())
    print(f"written: {out}")
    return 0


def _figures(out: Path, run_ids: list[str]) -> None:
    """`make compare`'s rescale figures over the bench's runs."""
    runs = load_runs(run_ids=run_ids)
    for stem, fig in rescale_figures(load_metrics(runs), load_events(runs)).items():
        fig.savefig(out / f"{stem}.png", dpi=110)


if __name__ == "__main__":
    sys.exit(main())
