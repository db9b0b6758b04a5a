"""The input's settings, declared once for the two commands that take them: `bench run` (and every
command that borrows its flags) and the producer, `python -m producers`.

`DatasetSettings` is what the topology records of its input (`bench.topology.config.TopologySettings`
inherits it); `ReplaySettings` is how the input is replayed into Kafka (`bench.run.RunOptions`
inherits it). The producer's command line takes the same fields' flags with its own defaults
(`producers.__main__`): one flag, one type, one help in both.
"""

from __future__ import annotations

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
