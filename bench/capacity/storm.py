"""The capacity ladder of the Storm peer (`make capacity PEERS=storm`): the harness's steps on the
Storm peer fitted to the machine (`bench.peers.storm.fitted_executors`), decided by the same
rule (`decision.step_holds` on `decision.lag_series`).

One step: a fresh topic of P = 10 partitions; the peer started on it (it reads from the start, so
nothing is missed), `STORM_START_S` later the project's producer replays `rate x step_s` records of
the dataset at the step's rate (open loop, the same records and intended send times as a harness
step), and the peer ends once it has processed them all. Its figures, defined as the harness's:
- processing latency: the worker bolts' HdrHistogram (now minus the Kafka timestamp), after the
  first `warmup_s x rate` tuples (the harness leaves out the tuples of its first `warmup_s`);
- lag: the records due by t (`rate x t`) minus the tuples the workers had processed by t, from the
  peer's progress samples (every 250 ms) in place of the harness's batch ends;
- CPU: the peer JVM's CPU time over the step per record (`cpu_us_per_record`).

Storm's batching (`topology.producer.batch.size`, its performance guide's latency-throughput knob:
1, its default, for latency; larger for throughput) is a setting of the peer's ladder: each batch
size ladders on its own, under its own system name (`storm_system`).
"""

from __future__ import annotations

import threading
import time

from bench.capacity.decision import Thresholds, lag_series, lag_slope, step_holds
from bench.observer.influx import one_line
from bench.run.input import ensure_topics
from bench.peers.storm import fitted_executors, latency_figures, run_storm_peer
from datasets import get_dataset
from producers.replay import replay

PARTITIONS = 10
"""Partitions of a step's topic: the peer's 10 spout tasks read one each (partition p to splitter
p mod 10), as the harness's splitter instances."""
STORM_START_S = 20.0
"""Seconds between starting the peer and its producer: the LocalCluster and its executors start in
5-10 s on two cores (the first tuple reached a worker bolt about 5 s after submission, 2026-11-26);
records sent before the spouts poll would wait, and count as latency."""


def storm_system(producer_batch: int) -> str:
    """The system name of the Storm peer's steps and ladders at a producer batch size: `storm` at
    Storm's default of 1, `storm-b<N>` otherwise."""
    return "storm" if producer_batch == 1 else f"storm-b{producer_batch}"


def storm_batch(system: str) -> int:
    """The producer batch size of a Storm system name (`storm_system`'s inverse)."""
    return 1 if system == "storm" else int(system.removeprefix("storm-b"))


def progress_batches(progress: list[list[int]], skipped: int = 0) -> list[dict]:
    """The peer's progress samples (`[epoch ms, records read, tuples processed]`, in time order) as
    the batch figures `decision.lag_series` reads: one per interval, `records` = the tuples
    processed in it beyond the first `skipped` (the warm-up step's; COUNTRY records are one tuple
    each), `end_ms` = the sample's time; the samples before the warm-up's end are left out."""
    batches, before = [], skipped
    for i, (t_ms, _read, processed) in enumerate(progress):
        if int(processed) < skipped:
            continue
        batches.append({"batch_id": i, "records": int(processed) - before, "end_ms": int(t_ms)})
        before = int(processed)
    return batches


def measure_storm_step(result: dict, rate: float, records: int, first_ts_ms: int, warmup_s: float,
                       thresholds: Thresholds, topic: str, producer_batch: int = 1, warm_up_records: int = 0) -> dict:
    """One Storm step decided as a harness step (`ladder.measure_step`'s keys, `run_id` = the topic),
    plus `cpu_us_per_record` (the peer JVM's CPU over the step and its warm-up, µs per record of
    both), that CPU in CPU-seconds and the step's own records (`cpu_s`, `records`: `ladder.cpu_fit`,
    whose fixed part takes the JVM's start and its warm-up step, the same at every step),
    `producer_batch` (as the peer reports it ran, else as asked) and `system` (`storm_system`).
    `records`: the step's, after `warm_up_records` of the warm-up step."""
    t, lag = lag_series(progress_batches(result.get("progress") or [], warm_up_records), first_ts_ms, rate, records,
                        warmup_s)
    slope = lag_slope(t, lag)
    figures = latency_figures(result)
    ok, why = step_holds(figures["latency_p99_ms"], slope, rate, thresholds)
    if not result.get("ok"):
        ok, why = False, f"peer {result.get('outcome')}"
    loads = result.get("worker_loads") or []
    samples = result.get("progress") or []
    return {"rate": rate, "run_id": topic, "holds": ok, "why": why, "p99_ms": figures["latency_p99_ms"],
            "p50_ms": figures["latency_p50_ms"], "lag_slope": slope,
            "max_lag": float(lag.max()) if len(lag) else None,
            "hottest_share": (max(loads) / sum(loads)) if loads and sum(loads) else None,
            "time_ms": int(samples[-1][0]) if samples else int(time.time() * 1000),
            "cpu_us_per_record": 1e6 * result["cpu_seconds"] / (warm_up_records + records)
            if result.get("cpu_seconds") else None,
            "cpu_s": result.get("cpu_seconds") or None, "records": records,
            "executors": (result.get("settings") or {}).get("executors"),
            "producer_batch": (result.get("settings") or {}).get("producer_batch_size", producer_batch),
            "system": storm_system(producer_batch)}


def run_storm_step(bootstrap: str, dataset: str, grouping: str, cost_ms: float, rate: float, step_s: float,
                   warmup_s: float, thresholds: Thresholds, topic: str, producer_batch: int = 1,
                   warm_up_rate: float | None = None, producers: int = 1) -> dict:
    """One step on a fresh topic (see the module docstring), the peer's executors fitted and its
    `topology.producer.batch.size` = `producer_batch`. With `warm_up_rate`, the peer's JVM first
    runs the ladder's warm-up step (`step_s` of input at that rate, not counted), as the harness's
    session does once per ladder (`ladder.warm_up_step`), then the step's records. A peer that fails
    (a count short, no progress) makes a step that does not hold, with its error as the reason.

    Raises: KeyboardInterrupt: Ctrl-C during the step (the replay stops and flushes, the peer's JVM is
        ended): the step is not decided."""
    records = max(1, int(rate * step_s))
    warm_up = max(1, int(warm_up_rate * step_s)) if warm_up_rate else 0
    ensure_topics(bootstrap, {topic: PARTITIONS})
    outcome: dict = {}

    def peer() -> None:
        try:
            outcome["result"] = run_storm_peer(
                bootstrap, topic, warm_up + records, grouping, cost_ms=cost_ms,
                warm_up_fraction=min(0.95, (warm_up + warmup_s * rate) / (warm_up + records)),
                extra=[*fitted_executors(cost_ms), "--window-s", "5", "--producer-batch-size", str(producer_batch)],
                timeout_s=STORM_START_S + 20 * step_s * (2 if warm_up else 1) + 300,
                started=lambda proc: outcome.__setitem__("process", proc))
        except Exception as e:  # noqa: BLE001 - reported as the step's reason; the ladder goes on
            outcome["error"] = one_line(e)

    def send(at_rate: float, limit: int):
        sent = replay(get_dataset(dataset), topic, bootstrap, partitions=PARTITIONS, rate=at_rate, limit=limit,
                      progress=False, key_stats=False, processes=producers)
        if sent.interrupted:
            raise KeyboardInterrupt
        return sent

    thread = threading.Thread(target=peer, name=f"storm-peer-{topic}", daemon=True)
    thread.start()
    try:
        time.sleep(STORM_START_S)
        if warm_up:
            send(warm_up_rate, warm_up)
        sent = send(rate, records)
        thread.join()
    except KeyboardInterrupt:
        end_peer(outcome, thread)
        raise
    result = outcome.get("result") or {"ok": False, "outcome": f"failed: {outcome.get('error')}"}
    return measure_storm_step(result, rate, records, int(sent.first_timestamp_ms or 0), warmup_s, thresholds, topic,
                              producer_batch, warm_up)


def end_peer(outcome: dict, thread: threading.Thread, wait_s: float = 30.0) -> None:
    """End a step's peer JVM (`outcome["process"]`, once started) and wait up to `wait_s` for its
    thread: a Ctrl-C in a terminal reaches the JVM too, a SIGINT to this process alone does not."""
    process = outcome.get("process")
    if process is not None and process.poll() is None:
        process.terminate()
    thread.join(wait_s)
