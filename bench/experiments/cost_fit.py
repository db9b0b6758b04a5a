"""The simulator's cost model fitted per engine on the rescale peers' runs, and checked on runs outside
the fit (docs/rescaling.md, "Cost profiles").

    python -m bench.experiments.cost_fit fit --bench results/compare/rescale-bench-<stamp> [--engines flink,kstreams]
    python -m bench.experiments.cost_fit check --engine flink [--workers 12 --to 8 --runs 3]

`fit` reads the peers' runs of a `make rescale-bench PEERS=...` (its rescale-bench.json names them;
the scale-out runs of each peer's first protocol: Flink's STOP_THE_WORLD, Kafka Streams' LEARNER)
and writes bench/simulate/cost_profiles/<engine>.json; `bench simulate --cost-profile <engine>` then
charges that engine's costs. What is fitted, per engine (the simulator's charges are in
groupings/rescaling; each value is the median over the runs, the runs' values kept in the profile):

- flink, STOP_THE_WORLD: `restart_ms` = the measured pause minus everything else the model charges
  for the same topic and event (a simulation with `restart_ms=0`: barrier, savepoint write and read
  at the default rates). Flink's savepoint of this little state is dominated by fixed costs, so the
  byte and entry rates cannot be told apart from it and keep their defaults.
- kstreams, LEARNER: `control_latency_ms` = a rebalance (the mean of the first one, which assigns the
  warm-up tasks, and the switch); `replay_entries_per_s` = changelog records loaded by the warm-ups
  per second of their restore; `probing_interval_ms` = from the warm-ups' assignment to the rebalance
  that promoted them (Kafka's own `probing.rebalance.interval.ms` is 60,000 at least, but a
  cooperative follow-up rebalance usually came first); `acceptable_lag_entries` = the peer's
  `acceptable.recovery.lag`.

`check` runs the peer `--runs` times on an event outside the fit (default: a scale-in, W 12 -> 8,
where the fit saw 10 -> 12), simulates the same event with the engine's profile, and prints and
stores (in the profile's `checks`) the prediction's error on the pause and on the rescale time.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from datetime import datetime, timezone
from pathlib import Path

from bench.experiments.rescale_bench import (
    DATASET,
    LIMIT,
    PARTITIONS,
    RECORD_RATE,
    local_kafka,
    record_topic,
    run_simulator,
    schedule_of,
)
from bench.peers import rescale as rescale_peers
from bench.results import record as run_record
from bench.simulate.cost_profiles import load_profile, write_profile
from producers.recorded import read_recorded

ROUTING = "KEY_GROUP"
"""The simulator's routing for both peers: Flink's own, and 128 units like Kafka Streams' 128 partitions."""


def spread(values: list[float]) -> dict:
    """{"value": median, "runs": values, "min": .., "max": ..} of a fitted parameter."""
    return {"value": statistics.median(values), "runs": values, "min": min(values), "max": max(values)}


def fit_flink(runs: list[rescale_peers.PeerRun], other_charges_ms: float) -> tuple[dict, dict]:
    """`restart_ms` from the runs' pauses (`rescale_peers.event_figures`) minus `other_charges_ms`
    (the simulator's pause for the same event with `restart_ms=0`). Returns (costs, fit)."""
    restart = [max(0.0, rescale_peers.event_figures(r.trace, r.result["events"][0])["pause_ms"] - other_charges_ms)
               for r in runs]
    fit = {"restart_ms": spread(restart), "other_charges_ms": other_charges_ms}
    return {"restart_ms": round(fit["restart_ms"]["value"], 1)}, fit


def fit_kstreams(runs: list[rescale_peers.PeerRun]) -> tuple[dict, dict]:
    """The LEARNER costs from the runs' steps (first rebalance, warm-up restore, wait for the promoting
    rebalance, switch) and warm-up loads. Returns (costs, fit).

    Raises: ValueError: a run without warm-ups (nothing to fit the replay rate on)."""
    control, replay, probing = [], [], []
    for r in runs:
        e = r.result["events"][0]
        steps = e["steps_ms"]
        if not e.get("state_entries_loaded_by_warm_ups") or not steps.get("warm_up_restore"):
            raise ValueError(f"{r.out}: no warm-up loaded any state: nothing to fit the replay rate on")
        control.append((steps["warm_up_assigned"] + steps["switch"]) / 2)
        replay.append(e["state_entries_loaded_by_warm_ups"] / (steps["warm_up_restore"] / 1000))
        probing.append(steps["warm_up_restore"] + steps.get("wait_for_rebalance", 0))
    fit = {"control_latency_ms": spread(control), "replay_entries_per_s": spread(replay),
           "probing_interval_ms": spread(probing)}
    costs = {name: round(fit[name]["value"], 1) for name in fit}
    costs["acceptable_lag_entries"] = int(runs[0].result["settings"]["acceptable.recovery.lag"])
    return costs, fit


def fit(bench_dir: Path, engines: list[str], bootstrap: str) -> list[Path]:
    """Fit and store the profiles of `engines` from the peers' runs of the rescale bench in `bench_dir`."""
    record = json.loads((bench_dir / "rescale-bench.json").read_text())
    stamp = f"{datetime.now(timezone.utc):%Y%m%dT%H%M%S}"
    written = []
    for engine in engines:
        peer = rescale_peers.PEERS[engine]
        runs = [rescale_peers.load_run(peer, Path(p))
                for p in record["peer_runs"].get(engine, {}).get(peer.protocols[0], [])]
        if not runs:
            raise ValueError(f"{bench_dir} has no {engine} run: run make rescale-bench PEERS={engine} first")
        if engine == "flink":
            sim0 = run_simulator(f"costfit-{stamp}-flink-restart0", record["topic"], record["dataset"], ROUTING,
                                 peer.protocols[0], 1, record["schedule"], record["workers"], bootstrap,
                                 Path(run_record.RESULTS_DIR), extra=("--cost", "restart_ms=0"))
            costs, details = fit_flink(runs, float(sim0["rescale"]["events"][0]["pause_ms"]))
        else:
            costs, details = fit_kstreams(runs)
        source = (f"python -m bench.experiments.cost_fit fit --bench {bench_dir} ({len(runs)} {peer.title} "
                  f"{runs[0].result.get('version')} runs: {record['topic']}, --rescale {record['schedule']}, "
                  f"W {record['workers']} -> {record['workers'] + 2}; {stamp} UTC)")
        path = write_profile(engine, costs, source, details)
        print(f"{engine}: {costs} -> {path}")
        written.append(path)
    return written


def check(engine: str, workers: int, to: int, runs: int, bootstrap: str, out: Path) -> dict:
    """The engine's profile against `runs` peer runs of an event W `workers` -> `to` half-way through
    the rescale bench's topic: the measured medians, the simulator's prediction and the errors
    (predicted / measured - 1). Stored in the profile's `checks` and returned."""
    peer = rescale_peers.PEERS[engine]
    topic = record_topic(bootstrap, DATASET, LIMIT, PARTITIONS, RECORD_RATE)
    schedule = schedule_of(bootstrap, topic, to)
    recorded = read_recorded(bootstrap, topic)
    measured = []
    for i in range(1, runs + 1):
        r = rescale_peers.run_peer(peer, bootstrap, topic, workers, schedule, out / f"{engine}-{i}",
                                   recorded=recorded, log=lambda _line: None)
        f = rescale_peers.event_figures(r.trace, r.result["events"][0])
        measured.append({"pause_ms": f["pause_ms"], "rescale_ms": f["rescale_ms"]})
        print(f"  {engine} run {i}: pause {f['pause_ms']:,.0f} ms, rescale {f['rescale_ms']:,.0f} ms", flush=True)
    stamp = out.name
    sim = run_simulator(f"costcheck-{stamp}-{engine}", topic, DATASET, ROUTING, peer.protocols[0], 1, schedule,
                        workers, bootstrap, Path(run_record.RESULTS_DIR), extra=("--cost-profile", engine))
    event = sim["rescale"]["events"][0]
    result = {"condition": f"{topic}, --rescale {schedule}, W {workers} -> {to}", "date": stamp,
              "measured": {k: spread([m[k] for m in measured]) for k in ("pause_ms", "rescale_ms")},
              "predicted": {"pause_ms": event.get("pause_ms"), "rescale_ms": event.get("rescale_ms")}}
    result["error"] = {k: (result["predicted"][k] / result["measured"][k]["value"] - 1)
                       if result["predicted"][k] is not None and result["measured"][k]["value"] else None
                       for k in ("pause_ms", "rescale_ms")}
    profile = load_profile(engine)
    write_profile(engine, profile["costs"], profile["source"], profile["fit"],
                  checks=[*profile.get("checks", []), result])
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.experiments.cost_fit", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    f = sub.add_parser("fit", help="fit the engines' profiles on a rescale bench's peer runs")
    f.add_argument("--bench", type=Path, required=True, help="results/compare/rescale-bench-<stamp>")
    f.add_argument("--engines", default=",".join(rescale_peers.PEERS))
    c = sub.add_parser("check", help="an engine's profile against peer runs outside its fit")
    c.add_argument("--engine", required=True, choices=sorted(rescale_peers.PEERS))
    c.add_argument("--workers", type=int, default=12, help="W before the event (default 12)")
    c.add_argument("--to", type=int, default=8, help="W after it (default 8: a scale-in)")
    c.add_argument("--runs", type=int, default=3)
    for p in (f, c):
        p.add_argument("--bootstrap-servers", help="Kafka (default: the local stack, started if needed)")
    args = parser.parse_args(argv)
    bootstrap = args.bootstrap_servers or local_kafka()
    if args.command == "fit":
        try:
            engines = [p.system for p in rescale_peers.parse_peers(args.engines)]
        except ValueError as e:
            parser.error(f"--engines: {e}")
        fit(args.bench, engines, bootstrap)
        return 0
    if args.runs < 1 or min(args.workers, args.to) < 1:
        parser.error("--runs, --workers and --to must be >= 1")
    out = Path(run_record.RESULTS_DIR) / "compare" / f"cost-check-{datetime.now(timezone.utc):%Y%m%dT%H%M%S}"
    result = check(args.engine, args.workers, args.to, args.runs, bootstrap, out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "cost-check.json").write_text(json.dumps(result, indent=1))
    m, p, e = result["measured"], result["predicted"], result["error"]
    for k in ("pause_ms", "rescale_ms"):
        err = "-" if e[k] is None else f"{e[k]:+.0%}"
        print(f"{args.engine} {k}: measured {m[k]['value']:,.0f} ({m[k]['min']:,.0f}-{m[k]['max']:,.0f}) over "
              f"{args.runs} runs, predicted {p[k] if p[k] is None else format(p[k], ',.0f')}, error {err}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
