"""A rescale run's progress in its run record, `results/<run_id>/rescale.json`.

Written atomically after every step of every event, so that a driver killed in the middle of a
rescale and started again with the same run id knows which events are done, which batch each
switched at, and where the interrupted one stopped (docs/rescaling.md, "On Spark").

Per event: `index`, `event` (label), `target`, `phase` (the protocol's steps, in order:
STOP_THE_WORLD_PHASES, SHARED_STATE_PHASES, LEARNER_PHASES or
HANDOFF_PHASES), `switch_batch` (the first batch under the new
routing, once it is fixed), `partitions_before` / `partitions_after`, and the figures measured so far.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

STOP_THE_WORLD_PHASES = ("stopped", "savepoint", "repartitioned", "transferred", "restarted")
"""bench/rescale/stop_the_world.py: the switch batch is fixed at `repartitioned`."""
SHARED_STATE_PHASES = ("requested", "savepoint", "published", "switched")
"""bench/rescale/shared_state.py: the switch batch is fixed at `savepoint`."""
LEARNER_PHASES = ("warming",) + SHARED_STATE_PHASES
"""bench/rescale/learner.py: a warm-up, then SHARED_STATE's steps."""
HANDOFF_PHASES = ("scaleup", "handing_over", "done")
"""bench/rescale/handoff.py: the rounds fixed, steps published (`published_steps`), the last one read;
the switch batch (the new routing fully in force) is fixed at `done`."""


class Journal:
    def __init__(self, folder: Path, phases: tuple[str, ...] = STOP_THE_WORLD_PHASES):
        self.phases = phases
        self.path = Path(folder) / "rescale.json"
        self.events: list[dict] = []
        if self.path.exists():
            self.events = json.loads(self.path.read_text())["events"]

    def event(self, index: int) -> dict | None:
        return next((e for e in self.events if e["index"] == index), None)

    def record(self, index: int, **fields) -> dict:
        """Update (or add) event `index` with `fields` and write the journal."""
        entry = self.event(index)
        if entry is None:
            entry = {"index": index}
            self.events.append(entry)
            self.events.sort(key=lambda e: e["index"])
        entry.update(fields)
        self._write()
        return entry

    def reached(self, index: int, phase: str) -> bool:
        entry = self.event(index)
        return entry is not None and self.phases.index(entry["phase"]) >= self.phases.index(phase)

    def offline_batches(self) -> set[int]:
        """Batches written by `repartition` (no input, no progress event for the observer)."""
        return {e["repartition_batch"] for e in self.events if e.get("repartition_batch") is not None}

    def switches(self) -> list[tuple[int, object]]:
        """(switch batch, target) of the events whose switch batch is fixed, in order."""
        return [(e["switch_batch"], e["target"]) for e in self.events if e.get("switch_batch") is not None]

    def _write(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".rescale.", suffix=".tmp", dir=self.path.parent)
        with os.fdopen(fd, "w") as f:
            json.dump({"events": self.events}, f, indent=1)
        Path(tmp).replace(self.path)
