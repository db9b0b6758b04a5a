"""What a tuple's latency is at a Real-Time Mode batch boundary (docs/topology.md, "Two execution
modes"): a run's real-time query commits a batch every `--realtime-batch-s` seconds and plans the
next; a tuple that arrives meanwhile waits for the new batch's tasks.

Reads one finished `--mode realtime` run: its partial updates from `<run>.partials` (each carries its
newest tuple's Kafka timestamp `event_ms` and its worker's done time `done_us`, the pair the
aggregator's LAT is made of) and the real-time query's batch boundaries from its checkpoint (the
time `commits/<n>` was written: batch n ended). It prints LAT (done time minus Kafka timestamp, ms)
by the time the update's tuple arrived after the latest boundary (after the first `--warmup-s`
seconds of input), and each boundary's pause: from the commit to the first update of the next
batch.

Usage, with `make up` running, after e.g.
  make bench GROUPING=DYNAMIC_KEY MODE=realtime ARGS="--realtime-batch-s 10":
  PYTHONPATH=. .venv/bin/python docs/spikes/realtime_batch_boundary.py <run id>
"""
import argparse
import json
import sys
from pathlib import Path

import numpy as np

from bench.results.reader import results_root
from bench.topology.sink import read_topic


def partial_updates(bootstrap: str, topic: str) -> np.ndarray:
    """(event_ms, done_ms) of every update in `topic` (float64, shape (n, 2)), read from its start."""
    updates = (json.loads(value) for _, value in read_topic(bootstrap, topic, timeout_s=120))
    return np.array([(u["event_ms"], u["done_us"] / 1000) for u in updates if u.get("done_us") is not None],
                    dtype=np.float64)


def boundaries_ms(checkpoint: Path) -> np.ndarray:
    """When each committed batch of the real-time query ended (epoch ms, ascending)."""
    commits = [p for p in (checkpoint / "commits").iterdir() if p.name.isdigit()]
    return np.sort(np.array([p.stat().st_mtime_ns / 1e6 for p in commits]))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("run_id")
    parser.add_argument("--bootstrap", default="127.0.0.1:9092")
    parser.add_argument("--warmup-s", type=float, default=10.0)
    args = parser.parse_args(argv)

    run = json.loads((results_root() / args.run_id / "run.json").read_text())
    checkpoint = Path(run["config"]["checkpoint_dir"]) / "realtime"
    updates = partial_updates(args.bootstrap, f"{args.run_id}.partials")
    bounds = boundaries_ms(checkpoint)
    event, done = updates[:, 0], updates[:, 1]
    lat = done - event
    start = event.min() + args.warmup_s * 1000
    kept = event >= start
    latest = np.searchsorted(bounds, event, side="right") - 1  # the latest boundary at or before arrival
    since = np.where(latest >= 0, event - bounds[np.maximum(latest, 0)], np.inf)  # ms after it
    edges_s = [0, 1, 2, 3, 5, float(run["config"].get("realtime_batch_s") or 300)]

    def line(name: str, mask: np.ndarray) -> str:
        if not mask.any():
            return f"{name:<30} {0:>6} updates"
        q = np.percentile(lat[mask], [50, 99, 99.9])
        return (f"{name:<30} {mask.sum():>6} updates  LAT p50 {q[0]:8.1f}  p99 {q[1]:8.1f}  "
                f"p99.9 {q[2]:8.1f}  max {lat[mask].max():8.1f} ms")

    print(f"run {args.run_id}: {len(bounds)} batch commits, batches of "
          f"{run['config'].get('realtime_batch_s')} s; updates whose tuple arrived after the first "
          f"{args.warmup_s:g} s of input, by the time since the latest commit")
    for lo, hi in zip(edges_s, edges_s[1:]):
        print(line(f"  {lo:g}-{hi:g} s after a commit", kept & (since >= lo * 1000) & (since < hi * 1000)))
    print(line("  before the first commit", kept & np.isinf(since)))
    print(line("  all", kept))
    for b in bounds:
        later = done[done > b]
        if len(later) and b > event.min():
            pause = later.min() - b
            print(f"  boundary at +{(b - event.min()) / 1000:7.1f} s: next update {pause:7.1f} ms after the commit")
    return 0


if __name__ == "__main__":
    sys.exit(main())
