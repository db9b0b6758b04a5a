"""A streaming query's checkpoint logs as Spark writes them: the batch ids in its `offsets` folder
(planned batches) and its `commits` folder (committed batches), one file named by its id each, and
the Kafka offsets a committed batch had read."""

from __future__ import annotations

import json
from pathlib import Path


def batch_ids(folder: Path) -> list[int]:
    """The batch ids logged in `folder` (a checkpoint's `offsets` or `commits`), ascending; [] when
    the folder does not exist yet."""
    return sorted(int(p.name) for p in folder.glob("[0-9]*")) if folder.exists() else []


def last_batch(folder: Path) -> int:
    """The last batch id logged in `folder` (`batch_ids`), -1 before one."""
    ids = batch_ids(folder)
    return ids[-1] if ids else -1


def committed_offsets(checkpoint: Path, topic: str) -> dict[int, int]:
    """`topic`'s next offset per partition at the last committed batch of the query checkpoint
    `checkpoint` (its offset log); {} before a committed batch."""
    commits = batch_ids(checkpoint / "commits")
    if not commits:
        return {}
    for line in (checkpoint / "offsets" / str(commits[-1])).read_text().splitlines()[2:]:
        offsets = json.loads(line) if line.startswith("{") else None
        if isinstance(offsets, dict) and topic in offsets:
            return {int(p): int(o) for p, o in offsets[topic].items()}
    return {}


def has_read(checkpoint: Path, topic: str, ends: dict[int, int] | None) -> bool:
    """Whether the last committed batch of the query checkpoint `checkpoint` has read `topic` up to
    `ends` (its next offset per partition, as `producers.broker.end_offsets` gives them, or as a
    journal read back from JSON keeps them: partitions as strings); False without ends (the topic
    not found or not read)."""
    if not ends:
        return False
    committed = committed_offsets(checkpoint, topic)
    return all(committed.get(int(p), 0) >= end for p, end in ends.items())
