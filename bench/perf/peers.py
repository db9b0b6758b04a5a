"""Perf section "peers": the harness against a Storm peer running the same topology on the same topic.

`python -m bench.perf --peers storm` (`make perf PEERS=storm`) adds this section after the others.
Needs the local stack, Java 17 and Maven (it builds `bench/peers/storm` on first use; Maven resolves
Apache Storm 2.8.3 from Maven Central). Everything runs at cost 0, W = S = P = 10, over the
pipeline section's 2,000,000-record COUNTRY_SKEW_R80 topic (`bench.perf.pipeline`).

The micro-batch size is a condition of the comparison: a Spark micro-batch pays a fixed cost
(planning, a stage after another, state-store commits: about 1.3 s at cost 0, the stages section)
that a larger batch spreads over more records, and pays for it in latency, while Storm has no
batch. So the section measures at each of BATCHES (records per micro-batch, `maxOffsetsPerTrigger`),
in this order, per batch size B:

1. one count-only Spark query in a fresh process (`pipeline._count_only_in_fresh_process`) at B:
   the harness's ceiling on this machine at that batch size, as in the pipeline section;
2. for each of SHUFFLE, KEY, PARTIAL_KEY, DYNAMIC_KEY: one harness run (`pipeline._bench_run`,
   `local[*]`, batches of B, A = 1, exactly the pipeline section's KEY cost-0 run, for each grouping),
   its steady rate (`pipeline.steady_rate`: the records of every batch after the first over the time
   from the end of the first batch to the end of the last one with input), then right after it one
   Storm peer run of the same grouping on the same topic, fitted to the machine (`fitted_executors`
   at cost 0: 10 tasks per component on as many executors as cores; before 2026-11-28 it ran one
   executor per task, 31 threads on 2 cores).

The Storm peer's rate (`bench/peers/storm`, `StormPeer`): tuples processed by the worker bolts
after the first B / records of them (the share of the harness's first batch, which the harness
leaves out the same way: 10 % at B = 200,000), over the time from the tuple that completes that
share to the last tuple (one tuple per COUNTRY record, so tuples/s = records/s). Storm runs once per
grouping and batch size, so that each ratio compares two runs made minutes apart over the same share
of the topic. The peer fails unless every record was read, every tuple processed and aggregated.

Loads: the peer feeds splitter p mod S from partition p, as the harness does, and each splitter
owns one grouping instance on the Kafka-timestamp clock, so for every grouping the per-worker tuple
counts must equal the harness run's (`summary.json` exact worker loads), which equal `bench
simulate --topic`'s. The table says whether they do.

Not comparable (docs/performance.md): Storm runs no checkpoint, no exactly-once sink, no observer,
no dead-letter topic, and acks nothing; a harness figure is one run on a shared machine.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from bench.perf import pipeline, stages
from bench.perf._harness import Row
from bench.stack import StackConfig
from bench.peers.storm import build_storm_peer, fitted_executors, run_storm_peer

SECTION = "peers"

GROUPINGS = ("SHUFFLE", "KEY", "PARTIAL_KEY", "DYNAMIC_KEY")
"""The reference groupings, the ones the Storm peer ports."""

BATCHES = stages.BATCHES
"""Records per micro-batch the section compares at: the stages section's (the pipeline section's,
and half the topic), whose per-batch and per-record costs explain the ratios. At 1,000,000 the
harness has one steady batch (about 7 s at cost 0) and Storm's rate covers the topic's last
1,000,000 tuples."""

@dataclass(frozen=True)
class Comparison:
    """One grouping measured on both systems, same topic, same settings.

    Attributes: grouping; batch: records per harness micro-batch (`maxOffsetsPerTrigger`; the
        Storm run left out the same share of its tuples); harness_rate: records/s of the harness run
        (steady batches); storm_rate: records/s of the Storm peer (after its warm-up share);
        count_only_rate: records/s of the count-only Spark query at the same batch size;
        loads_equal: the peer's per-worker tuple counts equal the harness run's (None when either is
        missing); note: free text.
    """

    grouping: str
    batch: int
    harness_rate: float
    storm_rate: float
    count_only_rate: float
    loads_equal: bool | None = None
    note: str = ""

    @property
    def harness_over_storm(self) -> float:
        """harness records/s / Storm records/s; below 1 when Storm is faster."""
        return self.harness_rate / self.storm_rate

    @property
    def harness_over_count_only(self) -> float:
        """harness records/s / count-only records/s, the pipeline section's ratio."""
        return self.harness_rate / self.count_only_rate


def comparison_rows(comparisons: Sequence[Comparison]) -> list[Row]:
    """The comparisons as perf rows (for results/perf/*.json): per grouping, a Storm row (its rate)
    and a harness row whose baseline is Storm's rate, so that its ratio is harness / Storm."""
    rows: list[Row] = []
    for c in comparisons:
        loads = {True: "equal to the harness's", False: "DIFFER from the harness's", None: "not compared"}[c.loads_equal]
        condition = f"cost 0, batch {c.batch:,}"
        rows.append(Row.measured(SECTION, f"Storm peer {c.grouping}, {condition}", c.storm_rate, "records/s",
                                 note=f"per-worker loads {loads}"))
        rows.append(Row.measured(SECTION, f"harness {c.grouping}, {condition} (against Storm)", c.harness_rate,
                                 "records/s", c.storm_rate,
                                 note=f"harness/count-only {c.harness_over_count_only:.3f}"
                                      + (f"; {c.note}" if c.note else "")))
    return rows


def format_comparison(comparisons: Sequence[Comparison]) -> str:
    """One line per (batch size, grouping): batch, grouping, harness rec/s, Storm rec/s, harness/Storm,
    harness/count-only, loads equal, in the order given.

    Rates are rounded to whole records/s, ratios to 3 decimals; the count-only rate of each batch
    size heads the table.
    """
    if not comparisons:
        return "(no comparison)"
    header = ("batch", "grouping", "harness rec/s", "Storm rec/s", "harness/Storm", "harness/count-only",
              "loads equal")
    lines = [
        (f"{c.batch:,}", c.grouping, f"{c.harness_rate:,.0f}", f"{c.storm_rate:,.0f}", f"{c.harness_over_storm:.3f}",
         f"{c.harness_over_count_only:.3f}", {True: "yes", False: "NO", None: "-"}[c.loads_equal])
        for c in comparisons
    ]
    widths = [max(len(str(x)) for x in col) for col in zip(header, *lines)]
    fmt = "  ".join(f"{{:<{w}}}" for w in widths)
    counts = {c.batch: c.count_only_rate for c in comparisons}
    out = ["count-only Spark query: "
           + ", ".join(f"{rate:,.0f} records/s at batch {batch:,}" for batch, rate in counts.items()),
           fmt.format(*header), fmt.format(*("-" * w for w in widths))]
    out += [fmt.format(*line) for line in lines]
    return "\n".join(line.rstrip() for line in out)


# -- the section -----------------------------------------------------------------------------------
def compare(bootstrap: str, topic: str, records: int, batches: Sequence[int] = BATCHES,
            groupings: Sequence[str] = GROUPINGS, log=print) -> list[Comparison]:
    """Per batch size: count-only once, then per grouping a harness run and right after it a Storm
    peer run that leaves out the same share of the topic, all at cost 0 on `topic` (which must hold
    `records` records); see the module docstring.

    Raises: ValueError when a batch size leaves the harness fewer than two batches with input
        (no steady batch); RuntimeError when a harness or Storm run fails.
    """
    too_large = [b for b in batches if not 0 < b <= records // 2]
    if too_large:
        raise ValueError(f"batch sizes {too_large} leave no steady batch in {records:,} records "
                         f"(at most {records // 2:,})")
    build_storm_peer()
    stamp = time.strftime("%Y%m%dT%H%M%S")
    out = []
    with tempfile.TemporaryDirectory() as tmp:
        for batch in batches:
            count_only, _ = pipeline._count_only_in_fresh_process(topic, bootstrap, batch)
            log(f"  batch {batch:,}: count-only {count_only:,.0f} records/s")
            for grouping in groupings:
                run_id = f"perf-peers-{grouping.lower()}-b{batch}-{stamp}"
                summary, harness_batches = pipeline._bench_run(topic, bootstrap, Path(tmp), run_id, grouping,
                                                               master="local[*]", cost_ms=0.0, max_offsets=batch)
                harness, steady_batches = pipeline.steady_rate(harness_batches)
                storm = run_storm_peer(bootstrap, topic, records, grouping, warm_up_fraction=batch / records,
                                       extra=fitted_executors(0.0))
                harness_loads = (summary.get("exact") or {}).get("worker_loads")
                equal = None if harness_loads is None else [int(x) for x in harness_loads] == storm["worker_loads"]
                log(f"  batch {batch:,} {grouping}: harness {harness:,.0f}, Storm {storm['steady_rate']:,.0f} "
                    f"records/s; Storm loads {storm['worker_loads']}")
                out.append(Comparison(grouping, batch, harness, float(storm["steady_rate"]), count_only, equal,
                                      note=f"harness {steady_batches} steady batches, status {summary['status']}; "
                                           f"Storm {storm['steady_seconds']:.1f} s steady, executors "
                                           f"{storm['settings']['executors']}"))
    return out


def run() -> list[Row]:
    """The section over the pipeline section's 2M-record topic (created if missing)."""
    bootstrap = StackConfig.from_env().bootstrap_servers
    topic = f"perf.{pipeline.DATASET.lower()}.n{pipeline.TOPIC_RECORDS}.p{pipeline.PARTITIONS}"
    pipeline._ensure_topic(bootstrap, topic, pipeline.TOPIC_RECORDS, pipeline.TOPIC_RECORDS)
    comparisons = compare(bootstrap, topic, pipeline.TOPIC_RECORDS)
    print(format_comparison(comparisons))
    return comparison_rows(comparisons)
