"""The four rescale protocols, as event-driven models of the systems they come from, by name.

Routing (which units change owner: key groups, vnodes, or keys for KEY) and protocol (how their
state moves) are independent (rescaling.md §3). Each protocol is one class written against a small
`Cluster` (groupings/rescaling/base.py): STOP_THE_WORLD and SHARED_STATE (pause.py), LEARNER
(learner.py), HANDOFF (handoff.py). Nothing here imports Spark or Kafka.
"""

from __future__ import annotations

from collections.abc import Iterable

from groupings.rescaling.base import FAULTS, RescaleProtocol
from groupings.rescaling.cost import CostModel
from groupings.rescaling.handoff import Handoff
from groupings.rescaling.learner import Learner
from groupings.rescaling.pause import SharedState, StopTheWorld

PROTOCOLS: tuple[str, ...] = ("STOP_THE_WORLD", "SHARED_STATE", "LEARNER", "HANDOFF")
"""The protocol names (`--protocol`)."""

__all__ = ["FAULTS", "PROTOCOLS", "Handoff", "Learner", "RescaleProtocol", "SharedState", "StopTheWorld",
           "make_protocol"]


def make_protocol(name: str, cost: CostModel | None = None, *, batch: int = 1,
                  faults: Iterable[str] = ()) -> RescaleProtocol:
    """The protocol called `name` (one of `PROTOCOLS`).

    Args: cost: the cost model (defaults); batch: HANDOFF's units per round (the others refuse a
        batch other than 1); faults: see `FAULTS` (HANDOFF only).
    Raises: ValueError: unknown name (listing the valid ones), a bad batch or fault.
    """
    cost = cost or CostModel()
    faults = frozenset(faults)
    key = name.strip().upper()
    if key == "HANDOFF":
        return Handoff(cost, faults, batch=batch)
    classes = {"STOP_THE_WORLD": StopTheWorld, "SHARED_STATE": SharedState, "LEARNER": Learner}
    if key not in classes:
        raise ValueError(f"unknown rescale protocol {name!r}; valid: {', '.join(PROTOCOLS)}")
    if batch != 1:
        raise ValueError(f"--handoff-batch applies to HANDOFF only, not {key}")
    if faults:
        raise ValueError(f"faults apply to HANDOFF only, not {key}")
    return classes[key](cost, faults)
