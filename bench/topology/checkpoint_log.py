"""A streaming query's checkpoint logs as Spark writes them: the batch ids in its `offsets` folder
(planned batches) and its `commits` folder (committed batches), one file named by its id each."""

from __future__ import annotations

from pathlib import Path


def batch_ids(folder: Path) -> list[int]:
    """The batch ids logged in `folder` (a checkpoint's `offsets` or `commits`), ascending; [] when
    the folder does not exist yet."""
    return sorted(int(p.name) for p in folder.glob("[0-9]*")) if folder.exists() else []
