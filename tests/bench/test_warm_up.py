"""The warm-up run's options (bench/run/warm_up.py): a resumed run's warm-up must start afresh."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

from bench.run.options import RunOptions
from bench.run.warm_up import WARM_UP_RECORDS, warm_up_options


def _first(**options):
    run = RunOptions(grouping="VNODE", dataset="NYC_FLIGHTS", run_id="nemesis-1", **options)
    return SimpleNamespace(options=run, run_id="nemesis-1", config=SimpleNamespace(realtime=False, topic="in.t"))


def test_each_warm_up_has_a_run_id_of_its_own():
    """A resumed run's warm-up, under the killed one's run id, found that warm-up's end of input in
    its control topic and refused to start (make nemesis, 2026-11-29)."""
    first = _first()
    ids = {warm_up_options(first, Path("/tmp/w")).run_id for _ in range(5)}
    assert len(ids) == 5 and all(i.startswith("warmup-") and i.endswith("-nemesis-1") for i in ids)


def test_a_rescale_runs_warm_up_has_no_rescale_but_keeps_the_worker_state():
    """The schedule is on the input's clock, and the warm-up's input spans under a second: a resumed
    warm-up refused the schedule as beyond its input."""
    options = warm_up_options(_first(rescale="60s:12", protocol="SHARED_STATE"), Path("/tmp/w"))
    assert options.rescale is None and options.worker_state
    assert (options.limit, options.rate, options.cost_ms, options.topic) == (WARM_UP_RECORDS, None, 0.0, "in.t.warmup")


def test_the_warm_up_reads_without_the_runs_cap_per_trigger():
    """With the run's 200 records per trigger the warm-up ran 250 micro-batches, five minutes before
    the run's first (make chaos, 2026-12-02)."""
    options = warm_up_options(_first(max_offsets_per_trigger=200), Path("/tmp/w"))
    assert options.max_offsets_per_trigger is None
