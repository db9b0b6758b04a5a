"""A short nemesis (`make nemesis`'s loop and checker, bench/nemesis): three faults of a fixed seed on
a 45 s input, beside the other tests on a stack of its own (tests/short_nemesis.py). `make nemesis`
runs the same code for 15 minutes and 20 faults (docs/faults.md)."""

from __future__ import annotations

import json

import pytest

from tests.conftest import NEMESIS_TIMEOUT_S
from tests.short_nemesis import SEED, NemesisOutcome


@pytest.fixture(scope="module")
def short_nemesis(nemesis_child) -> NemesisOutcome:
    return nemesis_child.wait(NEMESIS_TIMEOUT_S)


def test_every_fault_is_applied_and_every_resume_automatic(short_nemesis):
    history, lines = short_nemesis.history, short_nemesis.lines
    faults = [e for e in history.entries if e["kind"] == "fault"]
    assert [(e["target"], e["action"]) for e in faults] == [("spark", "kill"), ("influxdb", "kill")]
    assert any(e["kind"] == "recovery" and "resumed with the same RUN_ID" in e["text"] for e in history.entries)
    assert any(e["kind"] == "recovery" and e["text"].startswith("influxdb started again") for e in history.entries)
    assert any(e["kind"] == "rescale" and e.get("phase") == "switched" for e in history.entries), lines
    assert history.entries[-1]["text"].startswith("completed after")
    assert len(lines) == len(history.entries) and all(line.startswith("nemesis [+") for line in lines)


def test_nothing_is_lost_or_counted_twice(short_nemesis):
    verdict, lines = short_nemesis.verdict, short_nemesis.lines
    assert verdict["ok"], (verdict, lines)
    assert verdict["lost"] == verdict["duplicated"] == 0
    assert verdict["counted_weight"] == verdict["expected_weight"] > 0
    assert verdict["state_equal_simulated"] and verdict["influx_equals_metrics"]
    record = json.loads((short_nemesis.run.folder / "nemesis.json").read_text())
    assert record["plan"]["seed"] == SEED and record["check"]["ok"]
    assert len(record["history"]) == len(short_nemesis.history.entries)
