"""The Storm peer (`bench/peers/storm/`, Apache Storm 2.8.3 in a LocalCluster): build it, fit it to
the machine, run it on a topic and read its result. Used by `make perf PEERS=storm`'s peers section
(`bench.perf.peers`, a recorded topic read as fast as it goes) and by `make capacity PEERS=storm`
(`bench.capacity.storm`, a topic the producer paces while the peer reads it). What the peer runs
and measures: docs/performance.md, "The Storm peer"."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable, Sequence
from pathlib import Path

from bench import latency
from bench.peers.peer_contract import result_of
from bench.stack import maven
from bench.topology.session import DRIVER_JAVA_OPTIONS, DRIVER_MEMORY
from bench.topology.spout import CONSUMER_OPTIONS

STORM_DIR = maven.PEERS_DIR / "storm"
"""The Storm peer's Maven project."""


WARM_UP_FRACTION = 0.1
"""Share of the tuples a Storm peer run leaves out by default (its throughput and latency start
after them): the perf section's first harness batch at 200,000 records of 2M; the section passes
batch / records, a capacity step warm-up x rate / records."""


def parse_peer_output(stdout: str) -> dict:
    """The JSON result of the peer's result line (`bench.peers.peer_contract.result_of`).

    Raises: ValueError when the output has no such line.
    """
    return result_of(stdout, "Storm")


def fitted_executors(cost_ms: float, cores: int | None = None, tasks: int = 10) -> list[str]:
    """The Storm peer's executor options fitted to the machine as Storm's performance guide says
    (a busy executor per core): spouts and splitters on min(cores, tasks) executors; the worker
    bolts on one executor per task when the cost is a sleep (the harness gives each worker a task
    slot, `bench.run.preflight.default_master`), on min(cores, tasks) at cost 0. Each component
    keeps its `tasks` tasks, so the routing (partition p to splitter p mod S, the grouping's worker
    index) is unchanged. `cores`: `os.cpu_count()` when None."""
    fitted = max(1, min(cores or os.cpu_count() or 1, tasks))
    workers = tasks if cost_ms > 0 else fitted
    return ["--spout-executors", str(fitted), "--splitter-executors", str(fitted), "--worker-executors", str(workers)]


def latency_figures(result: dict) -> dict:
    """The peer's worker latency (`result["latency"]`: tuples and the compressed histogram) as the
    harness's summary gives it (`bench.latency.figures_ms`: `latency_p50_ms` ... `latency_tuples`)."""
    encoded = (result.get("latency") or {}).get("histogram")
    return latency.figures_ms(latency.merge([encoded] if encoded else []))


def build_storm_peer(quiet: bool = False) -> list[Path]:
    """Build the Storm peer on first use or after a source change (`bench.stack.maven.build`)
    and return its classpath. Raises: ToolMissing (java/mvn), RuntimeError (the build failed)."""
    return maven.build(STORM_DIR, "storm-peer.jar", "the Storm peer", quiet,
                       uses=(maven.GROUPINGS_JVM_DIR, maven.PEER_CONTRACT_DIR))


def run_storm_peer(bootstrap: str, topic: str, records: int, grouping: str, *, cost_ms: float = 0.0,
                   warm_up_fraction: float = WARM_UP_FRACTION, extra: Sequence[str] = (),
                   timeout_s: float = 900.0, started: Callable[[subprocess.Popen], None] | None = None) -> dict:
    """One Storm peer run (a fresh JVM with a LocalCluster) over `topic` from its start, its spout's
    consumer with the harness's settings (`max.poll.records`, `fetch.max.wait.ms` of
    `bench.topology.spout.CONSUMER_OPTIONS`); `extra` options come after them and win. The JVM
    gets the harness driver's heap and collector (`bench.topology.session.DRIVER_MEMORY`,
    `DRIVER_JAVA_OPTIONS`): the parallel collector speeds both systems up alike (Storm's SHUFFLE
    +5 to +13 % in three pairs of runs, 2026-11-26), so the ratio compares the systems, not a setting.

    `started` is handed the peer's process as soon as it runs (a caller that stops early ends it).

    Returns: the peer's JSON result (`steady_rate`, `worker_loads`, counts, `settings` ...).
    Raises: RuntimeError when the peer fails (a count does not match, no progress, or a crash),
        with its last output lines; subprocess.TimeoutExpired after `timeout_s` (the peer killed).
    """
    classpath = ":".join(str(p) for p in build_storm_peer(quiet=True))
    cmd = ["java", f"-Xmx{DRIVER_MEMORY}", *DRIVER_JAVA_OPTIONS.split(), "-cp", classpath,
           "bench.peers.storm.topology.StormPeer", "--bootstrap", bootstrap,
           "--topic", topic, "--records", str(records), "--grouping", grouping, "--cost-ms", str(cost_ms),
           "--warm-up-fraction", str(warm_up_fraction),
           "--max-poll-records", CONSUMER_OPTIONS["kafka.max.poll.records"],
           "--fetch-max-wait-ms", CONSUMER_OPTIONS["kafka.fetch.max.wait.ms"], *extra]
    with subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) as proc:
        if started is not None:
            started(proc)
        try:
            stdout, stderr = proc.communicate(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()
            raise
    try:
        result = parse_peer_output(stdout)
    except ValueError:
        result = None
    if proc.returncode != 0 or result is None or not result.get("ok"):
        raise RuntimeError(f"Storm peer {grouping} failed (exit {proc.returncode}):\n{stdout[-1500:]}\n"
                           f"{stderr[-1500:]}")
    return result
