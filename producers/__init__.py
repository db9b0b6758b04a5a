"""Kafka producers that replay a dataset at a controlled rate (the Storm spout's input).

>>> from datasets import get_dataset
>>> from producers import replay
>>> summary = replay(get_dataset("NYC_FLIGHTS"), "nyc", "127.0.0.1:9092", partitions=10, rate=20_000)
>>> summary.ok, summary.to_dict()["key_distribution"]["top1_share"]

Record i goes to partition i mod P; Kafka timestamp = intended send time; header ``event_ms`` =
the dataset's event time. ``python -m producers --help`` for the command line.
"""

from .broker import BrokerUnreachable, TopicMismatch, check_broker, ensure_topic
from .pacing import MissingEventTime, Schedule
from .replay import expected_records, produce_records, replay
from .resume import ReplayMismatch, TopicState, inspect_topic
from .summary import ReplaySummary

__all__ = [
    "BrokerUnreachable",
    "MissingEventTime",
    "ReplayMismatch",
    "ReplaySummary",
    "Schedule",
    "TopicMismatch",
    "TopicState",
    "check_broker",
    "ensure_topic",
    "expected_records",
    "inspect_topic",
    "produce_records",
    "replay",
]
