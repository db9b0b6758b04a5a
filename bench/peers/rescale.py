"""The rescale peers: Apache Flink and Kafka Streams rescaling the same keyed state as the harness, on
the same records, measured the same way (`make rescale-bench PEERS=flink,kstreams`, docs/rescaling.md).

Each peer is a Maven project in bench/peers/<system>/ (built on first use, `bench.stack.maven`)
that keeps the harness's per-key worker state (count, sum, first and last Kafka timestamp) in the
system's own keyed state and rescales it the system's own way:

- flink: a MiniCluster in one JVM, KEY_GROUP routing by Flink's own `KeyGroupRangeAssignment` at
  max parallelism 128 (the harness's KEY_GROUP for W = 10); a rescale is either stop-with-savepoint,
  then a restore at the new parallelism (Volley's stop-the-world baseline): protocol STOP_THE_WORLD;
  or the adaptive scheduler's rescale of the running job, its new parallelism declared through
  Flink's REST API, from the next checkpoint, the input after it replayed: protocol ADAPTIVE_RESCALE.
- kstreams: W KafkaStreams instances in one JVM, the partitions of a repartition topic as the units,
  a RocksDB store with its changelog; a scale-out adds instances that warm up from the changelog
  (KIP-441's warm-up tasks) before a probing rebalance moves the active tasks: protocol LEARNER.

A run: the recorded topic of the rescale bench is replayed into a fresh topic at the pace of its
Kafka timestamps (`producers.recorded`, header `release_ms`) once the peer says it is ready, so the
peer reads the very records the harness read, open loop. The peer writes `trace.csv` (one row per
processed tuple: key, unit, worker, release_ms, processed_ms), `state.csv` (its final state, read
back from the system's state) and `result.json` (counts, settings, the rescale events with their
moved units and steps). Everything measured from the trace is computed here, the same way for both
peers (`event_figures`); the final state is checked against the harness's (`state_check`).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import threading
import time
from collections import deque
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from bench.peers.peer_contract import CONTRACT, read_csv
from bench.stack import StackConfig, maven
from bench.topology.session import DRIVER_JAVA_OPTIONS, DRIVER_MEMORY
from producers import check_broker, ensure_topic
from producers.recorded import RecordedRecord, read_recorded, replay_recorded

STATE_COLUMNS = ["count", "sum", "first_ts_ms", "last_ts_ms"]
"""The per-key state every system keeps (the harness's worker state, bench.topology.worker_state)."""


@dataclass(frozen=True)
class Peer:
    """One peer system.

    Attributes: system: its name on the command line; title: in tables; project: its Maven project;
        jar: the jar `mvn package` writes; main_class; protocols: the protocols it runs (its
        `--protocol`), the first by default; owners_as: the harness routing whose per-key owners it
        must reproduce (None: its units are its own).
    """

    system: str
    title: str
    project: Path
    jar: str
    main_class: str
    protocols: tuple[str, ...]
    owners_as: str | None


PEERS = {
    "flink": Peer("flink", "Flink", maven.PEERS_DIR / "flink", "flink-peer.jar",
                  "bench.peers.flink.FlinkRescalePeer", ("STOP_THE_WORLD", "ADAPTIVE_RESCALE"), "KEY_GROUP"),
    "kstreams": Peer("kstreams", "Kafka Streams", maven.PEERS_DIR / "kstreams", "kstreams-peer.jar",
                     "bench.peers.kstreams.KafkaStreamsRescalePeer", ("LEARNER",), None),
}


def parse_peers(text: str | None) -> list[Peer]:
    """`flink,kstreams` -> the peers, in that order; empty or None -> none.

    Raises: ValueError naming the unknown ones and the valid names."""
    names = [n.strip().lower() for n in (text or "").split(",") if n.strip()]
    unknown = [n for n in names if n not in PEERS]
    if unknown:
        raise ValueError(f"unknown peer(s) {', '.join(unknown)}: valid are {', '.join(PEERS)}")
    return [PEERS[n] for n in dict.fromkeys(names)]


def build(peer: Peer, quiet: bool = False) -> list[Path]:
    """The peer's classpath, built first if needed. Raises: ToolMissing, RuntimeError (Maven failed)."""
    return maven.build(peer.project, peer.jar, f"the {peer.title} peer", quiet, uses=(maven.PEER_CONTRACT_DIR,))


@dataclass
class PeerRun:
    """One peer run: its result JSON, its trace (`key, unit, worker, release_ms, processed_ms`; release_ms
    NaN where unknown) and its final state (`key, worker, unit, count, sum, first_ts_ms, last_ts_ms`)."""

    peer: Peer
    result: dict
    trace: pd.DataFrame
    state: pd.DataFrame
    out: Path


def run_peer(peer: Peer, bootstrap: str, recorded_topic: str, workers: int, schedule: str, out: Path, *,
             key_field: str = "dest", speed: float = 1.0, extra: tuple[str, ...] = (), ready_timeout_s: float = 180.0,
             timeout_s: float = 900.0, recorded: tuple[int, list[RecordedRecord]] | None = None,
             protocol: str | None = None, log=print) -> PeerRun:
    """One run of `peer` over a paced copy of `recorded_topic` (`producers.recorded`), with the rescale
    `schedule` (the harness's syntax, on the recorded topic's Kafka-timestamp clock), from `workers`,
    by `protocol` (one of `peer.protocols`; default the first).

    The copy goes to a fresh topic (`rescale-peers.<out's name>.<epoch ms>`, deleted after the run);
    it starts when the peer prints the contract's ready line. `recorded`: `read_recorded(bootstrap, recorded_topic)`
    when the caller has it already (a bench of several runs reads the topic once).
    Returns: the run (result, trace, state). Raises: ValueError: a protocol the peer does not run;
        RuntimeError when the peer does not become ready in `ready_timeout_s`, fails (its reason and
        last output lines), or writes no result.
    """
    protocol = protocol or peer.protocols[0]
    if protocol not in peer.protocols:
        raise ValueError(f"the {peer.title} peer runs {', '.join(peer.protocols)}, not {protocol}")
    classpath = ":".join(str(p) for p in build(peer, quiet=True))
    if recorded is None:
        recorded = read_recorded(bootstrap, recorded_topic)
    _, rows = recorded
    topic = f"rescale-peers.{out.name}.{time.time_ns() // 1_000_000}"
    out.mkdir(parents=True, exist_ok=True)
    (out / "result.json").unlink(missing_ok=True)  # a result left by an earlier run is not this one's
    cmd = ["java", f"-Xmx{DRIVER_MEMORY}", *DRIVER_JAVA_OPTIONS.split(), "-cp", classpath, peer.main_class,
           "--bootstrap", bootstrap, "--topic", topic, "--records", str(len(rows)), "--key-field", key_field,
           "--workers", str(workers), "--rescale", schedule, "--t0-ms", str(rows[0].ts_ms), "--out", str(out),
           "--timeout-s", str(int(timeout_s)), "--protocol", protocol, *extra]
    admin = check_broker(bootstrap)
    ensure_topic(admin, topic, recorded[0])
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    tail: deque[str] = deque(maxlen=60)
    ready = threading.Event()

    def read_output():
        for line in proc.stdout:
            tail.append(line.rstrip())
            if line.strip() == CONTRACT.ready_line:
                ready.set()

    reader = threading.Thread(target=read_output, daemon=True)
    reader.start()
    try:
        deadline = time.monotonic() + ready_timeout_s
        while not ready.wait(0.2):
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"the {peer.title} peer did not become ready (exit {proc.poll()}):\n"
                                   + "\n".join(tail))
        replay_recorded(bootstrap, recorded_topic, topic, speed, records=recorded, log=log)
        try:
            proc.wait(timeout=timeout_s + 60)  # the peer gives up at its own --timeout-s first
        except subprocess.TimeoutExpired:
            raise RuntimeError(f"the {peer.title} peer did not finish in {timeout_s + 60:g} s:\n"
                               + "\n".join(list(tail)[-20:])) from None
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        reader.join(5)
        admin.delete_topics([topic])  # not waited for: the broker deletes it in the background
    if not (out / "result.json").is_file():
        raise RuntimeError(f"the {peer.title} peer wrote no result (exit {proc.returncode}):\n" + "\n".join(tail))
    result = json.loads((out / "result.json").read_text())
    if proc.returncode != 0 or not result.get("ok"):
        raise RuntimeError(f"the {peer.title} peer failed (exit {proc.returncode}): {result.get('reason')}\n"
                           + "\n".join(list(tail)[-20:]))
    return load_run(peer, out)


def load_run(peer: Peer, out: Path) -> PeerRun:
    """A finished run of `peer` from its directory (result.json, trace.csv, state.csv).

    Raises: FileNotFoundError: a file is missing; ValueError: a file's columns are not the contract's."""
    result = json.loads((out / "result.json").read_text())
    trace = read_csv(out / "trace.csv", CONTRACT.trace_columns, na_values={"release_ms": [""]})
    state = read_csv(out / "state.csv", CONTRACT.state_columns)
    return PeerRun(peer, result, trace, state, out)


def event_figures(trace: pd.DataFrame, event: dict, until_ms: float | None = None) -> dict:
    """What the harness reports per rescale event, from a peer's trace.

    - pause_ms: the longest time a tuple of a moved unit waited while no tuple of a moved unit was
      processed, over the event: for consecutive processings p[j-1] < p[j] of moved units' tuples
      (each released at r[j]), the largest `p[j] - max(p[j-1], r[j])` with p[j] after the request and
      p[j-1] before the new assignment was in force (r unknown: the plain gap). 0 when no tuple of
      a moved unit waited.
    - rescale_ms: request to in force.
    - before / during / after (request, in force, `until_ms` or the last tuple): the tuples processed
      in each window, their rate (tuples/s over the part of the window before the last tuple of the
      run, so that a window the input ended in is not diluted; None without a tuple) and the p50 /
      p99 of `processed_ms - release_ms` (ms).

    Args: trace: a PeerRun's trace; event: one of its result's `events`; until_ms: the next event's
        request (its `after` window ends there).
    """
    request, in_force = float(event["request_wall_ms"]), float(event["in_force_wall_ms"])
    moved = trace[trace["unit"].isin(set(event.get("moved_units") or []))].sort_values("processed_ms")
    p = moved["processed_ms"].to_numpy(dtype=float)
    r = moved["release_ms"].to_numpy(dtype=float)
    pause = 0.0
    if len(p) > 1:
        waited_from = np.fmax(p[:-1], np.nan_to_num(r[1:], nan=-np.inf))
        stall = p[1:] - waited_from
        over = (p[1:] > request) & (p[:-1] < in_force)
        if over.any():
            pause = max(0.0, float(stall[over].max()))
    first, last = float(trace["processed_ms"].min()), float(trace["processed_ms"].max()) + 1
    end = until_ms if until_ms is not None else last
    windows = {"before": (first, request), "during": (request, in_force), "after": (in_force, end)}
    figures = {"pause_ms": pause, "rescale_ms": in_force - request}
    for name, (lo, hi) in windows.items():
        inside = trace[(trace["processed_ms"] >= lo) & (trace["processed_ms"] < hi)]
        latency = (inside["processed_ms"] - inside["release_ms"]).dropna()
        busy = min(hi, last) - max(lo, first)  # the window while tuples were processed at all
        figures[name] = {
            "tuples": len(inside),
            "throughput": len(inside) / (busy / 1000) if len(inside) and busy >= 100 else None,
            "latency_ms_p50": float(latency.quantile(0.5)) if len(latency) else None,
            "latency_ms_p99": float(latency.quantile(0.99)) if len(latency) else None,
        }
    return figures


def per_key(state: pd.DataFrame) -> pd.DataFrame:
    """Per-key totals of a state table (one row per key and worker, or per key): count and sum added,
    first the smallest, last the largest, over the rows with a count (an emptied entry left behind
    holds no tuple); indexed by key."""
    return state[state["count"] > 0].groupby("key").agg(count=("count", "sum"), sum=("sum", "sum"), first_ts_ms=("first_ts_ms", "min"),
                                    last_ts_ms=("last_ts_ms", "max"))


def state_check(peer_state: pd.DataFrame, harness_state: pd.DataFrame, owners: bool = False) -> dict:
    """A peer's final per-key state against the harness's on the same records.

    Args: peer_state / harness_state: `key, worker, count, sum, first_ts_ms, last_ts_ms` (the harness's
        `state.parquet`, one row per key and worker); owners: also require each key's worker to be
        the harness's (the same routing).
    Returns: {"equal": bool, "keys": n, "differing_keys": n, "example": str | None, "owners_equal": bool | None}.
    """
    ours, theirs = per_key(peer_state), per_key(harness_state)
    joined = ours.join(theirs, how="outer", lsuffix="_peer", rsuffix="_harness")
    differ = pd.Series(False, index=joined.index)
    for col in STATE_COLUMNS:
        differ |= ~(joined[f"{col}_peer"] == joined[f"{col}_harness"])
    out = {"keys": len(joined), "differing_keys": int(differ.sum()), "equal": not differ.any(),
           "example": None, "owners_equal": None}
    if differ.any():
        key = differ[differ].index[0]
        out["example"] = f"{key}: " + ", ".join(f"{c} {joined.at[key, c + '_peer']} vs {joined.at[key, c + '_harness']}"
                                                for c in STATE_COLUMNS)
    if owners:
        peer_owner = peer_state[peer_state["count"] > 0].groupby("key")["worker"].agg(lambda w: tuple(sorted(set(w))))
        harness_owner = harness_state[harness_state["count"] > 0].groupby("key")["worker"].agg(
            lambda w: tuple(sorted(set(w))))
        out["owners_equal"] = bool(peer_owner.sort_index().equals(harness_owner.sort_index()))
    return out


def summary_row(run: PeerRun, harness_state: pd.DataFrame | None) -> dict:
    """One run's figures for the rescale bench: its first event's figures (`event_figures`), moved
    units, state moved, and the state check against `harness_state` (None: not checked)."""
    events = run.result.get("events") or []
    if not events:
        raise ValueError(f"the {run.peer.title} run {run.out.name} has no rescale event")
    e = events[0]
    until = float(events[1]["request_wall_ms"]) if len(events) > 1 else None
    check = state_check(run.state, harness_state, owners=run.peer.owners_as is not None) \
        if harness_state is not None else None
    return {
        "system": run.peer.system, "version": run.result.get("version"), "protocol": run.result.get("protocol"),
        "figures": event_figures(run.trace, e, until), "moved_units": len(e.get("moved_units") or []),
        "units": run.result.get("units"), "steps_ms": e.get("steps_ms") or {},
        "state_entries_moved": e.get("state_entries_moved"), "state_bytes_moved": e.get("state_bytes_moved"),
        "moved_keys": int(run.trace.loc[run.trace["unit"].isin(set(e.get("moved_units") or [])), "key"].nunique()),
        "records": run.result.get("records"), "tuples": run.result.get("tuples_processed"),
        "state_check": check, "settings": run.result.get("settings"), "out": str(run.out),
    }


WINDOWS = ("before", "during", "after")


def cell_row(peer: Peer, protocol: str, event: str, summaries: list[dict]) -> dict:
    """One peer's row of the rescale bench for `protocol` and `event` (`10 -> 12`): medians over its runs
    (`summary_row` dicts, or `{"error": reason}` for a run that failed), each run's pause, and
    whether every run's final state equalled the harness's."""
    ok = [s for s in summaries if "error" not in s]

    def median(get):
        values = [v for v in (get(s) for s in ok) if v is not None]
        return statistics.median(values) if values else None

    steps = sorted({k for s in ok for k, v in s["steps_ms"].items() if isinstance(v, int | float)})
    checks = [s["state_check"] for s in ok]
    return {
        "system": peer.system, "title": peer.title, "protocol": protocol, "event": event,
        "version": ok[0]["version"] if ok else None, "runs": len(summaries),
        "errors": [s["error"] for s in summaries if "error" in s],
        "pause_ms": median(lambda s: s["figures"]["pause_ms"]),
        "pause_ms_runs": [s["figures"]["pause_ms"] for s in ok],
        "rescale_ms": median(lambda s: s["figures"]["rescale_ms"]),
        "steps_ms": {k: median(lambda s, k=k: s["steps_ms"].get(k)) for k in steps},
        "moved_units": median(lambda s: s["moved_units"]), "units": median(lambda s: s["units"]),
        "moved_keys": median(lambda s: s["moved_keys"]),
        "state_entries_moved": median(lambda s: s["state_entries_moved"]),
        "state_bytes_moved": median(lambda s: s["state_bytes_moved"]),
        "throughput": {w: median(lambda s, w=w: s["figures"][w]["throughput"]) for w in WINDOWS},
        "latency_ms_p99": {w: median(lambda s, w=w: s["figures"][w]["latency_ms_p99"]) for w in WINDOWS},
        "state_equal": bool(checks) and None not in checks and all(c["equal"] for c in checks),
        "owners_equal": None if not checks or None in checks or any(c["owners_equal"] is None for c in checks)
        else all(c["owners_equal"] for c in checks),
        "state_differences": [c["example"] for c in checks if c and c["example"]],
        "empty_windows": [w for w in WINDOWS if ok and all(s["figures"][w]["tuples"] == 0 for s in ok)],
        "settings": ok[0]["settings"] if ok else None,
    }


def table_markdown(rows: list[dict], conditions: str) -> str:
    """The peers' table: per event and system, medians over its runs (`cell_row`), with a stated
    reason for every empty cell that has one."""
    def f(v, fmt="{:,.0f}"):
        return "-" if v is None else fmt.format(v)

    def per_window(d, fmt="{:,.0f}"):
        return " / ".join(f(d.get(w), fmt) for w in WINDOWS)

    lines = ["## The same rescale on the systems the protocols come from", "", conditions, "",
             "| event | system | protocol | runs | pause ms (median) | pause ms (runs) | rescale ms | steps ms (medians) | "
             "moved units | moved keys | state entries moved | state bytes moved | tuples/s before / during / after | "
             "p99 ms before / during / after | state = harness | owners = harness |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        steps = ", ".join(f"{k} {v:,.0f}" for k, v in r["steps_ms"].items() if v is not None) or "-"
        owners = {True: "yes", False: "NO", None: "-"}[r["owners_equal"]]
        lines.append(
            f"| {r['event']} | {r['title']} {r['version'] or ''} | {r['protocol']} | {r['runs'] - len(r['errors'])} of {r['runs']} | "
            f"{f(r['pause_ms'])} | {' / '.join(f(p) for p in r['pause_ms_runs']) or '-'} | {f(r['rescale_ms'])} | "
            f"{steps} | {f(r['moved_units'])} of {f(r['units'])} | {f(r['moved_keys'])} | {f(r['state_entries_moved'])} | "
            f"{f(r['state_bytes_moved'])} | {per_window(r['throughput'])} | {per_window(r['latency_ms_p99'])} | "
            f"{'yes' if r['state_equal'] else 'NO'} | {owners} |")
    def cell(r):
        return f"{r['title']} {r['protocol']}, {r['event']}"

    notes = [f"- {cell(r)}: run failed: {e}" for r in rows for e in r["errors"]]
    notes += [f"- {cell(r)}: no tuple processed {w} the rescale in any run"
              + (": the input ended before the new assignment was in force" if w == "after" else "")
              for r in rows for w in r["empty_windows"]]
    notes += [f"- {cell(r)}: state differs from the harness's, e.g. {d}" for r in rows for d in r["state_differences"][:1]]
    return "\n".join(lines + ([""] + notes if notes else [])) + "\n"


def order_across_engines(cells: list[tuple[str, float | None, list[float]]]) -> str:
    """`A 0 (0-0) < B 5,900 (5,700-6,200) < ...`: (label, median pause ms, the runs' pauses), from the
    shortest median pause to the longest; cells without a pause are left out."""
    known = sorted((c for c in cells if c[1] is not None), key=lambda c: c[1])
    return " < ".join(f"{label} {median:,.0f} ({min(runs, default=median):,.0f}-{max(runs, default=median):,.0f})"
                      for label, median, runs in known)


def main(argv: list[str] | None = None) -> int:
    """`python -m bench.peers.rescale copy --source T --dest T2 [--speed 1]`: a paced copy of a
    recorded topic (`producers.recorded`), e.g. to run a peer by hand."""
    parser = argparse.ArgumentParser(prog="python -m bench.peers.rescale", description=main.__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    copy = sub.add_parser("copy", help="replay a recorded topic into another at the pace of its timestamps")
    copy.add_argument("--source", required=True)
    copy.add_argument("--dest", required=True)
    copy.add_argument("--speed", type=float, default=1.0, help="x the recorded pace (default 1)")
    copy.add_argument("--bootstrap-servers", default=StackConfig.from_env().bootstrap_servers)
    args = parser.parse_args(argv)
    replay_recorded(args.bootstrap_servers, args.source, args.dest, args.speed, log=print)
    return 0


if __name__ == "__main__":
    sys.exit(main())
