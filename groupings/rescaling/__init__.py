"""Rescaling a keyed, stateful stage while the stream runs: schedules, the cost model and the four
protocols (STOP_THE_WORLD, SHARED_STATE, LEARNER, HANDOFF). Pure Python, no Spark or Kafka: the
simulator drives it on a virtual clock, the Spark topology at micro-batch boundaries.
Spec: docs/reference/rescaling.md §3-4; docs/rescaling.md.
"""

from groupings.rescaling.base import FAULTS, Cluster, Move, RescaleProtocol
from groupings.rescaling.cost import CostModel, entry_bytes
from groupings.rescaling.handoff import handoff_rounds
from groupings.rescaling.protocols import PROTOCOLS, make_protocol
from groupings.rescaling.schedule import RESCALABLE, RescaleEvent, check_rescalable, check_schedule, parse_schedule

__all__ = [
    "FAULTS", "PROTOCOLS", "RESCALABLE", "Cluster", "CostModel", "Move", "RescaleEvent",
    "RescaleProtocol", "check_rescalable", "check_schedule", "entry_bytes", "handoff_rounds", "make_protocol", "parse_schedule",
]
