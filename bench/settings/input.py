"""The input's settings, declared once for the commands that take them: `bench run` (and every
command that borrows its flags), the producer, `python -m producers`, and the simulator.

`DatasetSettings` is what the topology records of its input (`bench.topology.config.TopologySettings`
inherits it); `ReplaySettings` is how the input is replayed into Kafka (`bench.run.RunOptions`
inherits it). The producer's command line takes the same fields' flags with its own defaults
(`producers.__main__`): one flag, one type, one help in both. `PaceSettings` is the pace by the
dataset's own clock, which the producer and the simulator's virtual clock take (`bench simulate`).
"""

from __future__ import annotations

import argparse
import math
from dataclasses import dataclass, field

from bench.settings import setting


@dataclass(frozen=True, kw_only=True)
class DatasetSettings:
    """The records: a dataset of the registry (`datasets.get_dataset`) and its parameters."""

    dataset: str = field(metadata=setting("dataset name", cli_default="NYC_FLIGHTS", makefile="DATASET",
                                          details="python -m datasets list lists them"))
    dataset_params: dict = field(default_factory=dict, metadata=setting(
        "dataset parameter, repeatable", flag="--dataset-param", metavar="K=V"))


@dataclass(frozen=True, kw_only=True)
class ReplaySettings:
    """How the records are replayed into Kafka: the topic and its partitions, the pace, how many."""

    partitions: int | None = field(default=None, metadata=setting("input topic partitions P", default_text="S"))
    rate: float | None = field(default=None, metadata=setting(
        "replay rate", "records/s", cli_default=500.0, zero_is_none=True, makefile="RATE",
        details="0 = as fast as possible"))
    limit: int | None = field(default=None, metadata=setting(
        "replay only the first N records", cli_default=30000, zero_is_none=True, makefile="LIMIT",
        details="0 = all"))
    topic: str | None = field(default=None, metadata=setting(
        "input topic", default_text="derived from dataset, limit, rate, partitions"))
    bootstrap_servers: str | None = field(default=None, metadata=setting(
        "Kafka", default_text="the local stack, started if needed"))
    progress: bool = field(default=True, metadata=setting("do not print the replay's progress"))


class BadSpeed(ValueError, argparse.ArgumentTypeError):
    """A speed that is not `xK` or a number above 0 (argparse prints its message as it is)."""


class Speed(float):
    """K of the reference's `xK`: the dataset's own event times sped up K times. Reads `x10`, `X2.5`,
    `10` or a number; the value is a float.

    Raises: BadSpeed (a ValueError): not `xK` or a number, or not above 0."""

    def __new__(cls, value: str | float) -> "Speed":
        text = str(value).strip()
        try:
            speed = float(text[1:] if text[:1] in ("x", "X") else text)
        except ValueError:
            raise BadSpeed(f"bad speed {value!r}: expected xK, e.g. x10 or x0.5") from None
        if not (speed > 0 and math.isfinite(speed)):
            raise BadSpeed(f"speed must be finite and > 0, got {value!r}")
        return super().__new__(cls, speed)


@dataclass(frozen=True, kw_only=True)
class PaceSettings:
    """The pace of the records by the dataset's own clock (each record's event time)."""

    speed: Speed | None = field(default=None, metadata=setting(
        "K times the dataset's own event-time speed", metavar="xK", details="x10, 10 or 0.5"))
