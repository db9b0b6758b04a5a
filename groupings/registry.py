"""Names of the groupings and `create_grouping`, the one way other stages build them (§1)."""

from __future__ import annotations

import inspect
from typing import Any

from groupings.base import Grouping
from groupings.dynamic_key import DynamicKeyDownGrouping, DynamicKeyGrouping
from groupings.key import KeyGrouping
from groupings.key_group import KeyGroupGrouping
from groupings.partial_key import PartialKeyGrouping
from groupings.shuffle import ShuffleGrouping
from groupings.slb import DChoicesGrouping, WChoicesGrouping
from groupings.vnode import VNodeGrouping

_REFERENCE: dict[str, type[Grouping]] = {
    cls.name: cls
    for cls in (ShuffleGrouping, KeyGrouping, PartialKeyGrouping, DynamicKeyGrouping)
}
_SUCCESSORS: dict[str, type[Grouping]] = {
    cls.name: cls
    for cls in (DChoicesGrouping, WChoicesGrouping, KeyGroupGrouping, VNodeGrouping)
}
_VARIANTS: dict[str, type[Grouping]] = {DynamicKeyDownGrouping.name: DynamicKeyDownGrouping}

REFERENCE_GROUPINGS: tuple[str, ...] = tuple(_REFERENCE)
"""The reference groupings: SHUFFLE, KEY, PARTIAL_KEY, DYNAMIC_KEY (the reference CLI names)."""

GROUPINGS: tuple[str, ...] = REFERENCE_GROUPINGS + tuple(_SUCCESSORS)
"""Every grouping the harness compares: the reference four, then the groupings of the systems
that followed (SLB's D_CHOICES and W_CHOICES, Flink's KEY_GROUP, RisingWave's VNODE)."""

VARIANTS: tuple[str, ...] = tuple(_VARIANTS)
"""Named variants that fix a reference quirk (§13 "variant"); `create_grouping` takes them too."""


def grouping_class(name: str) -> type[Grouping]:
    """The class registered under `name` (a reference grouping or a variant).

    Raises: ValueError: unknown name; the message lists the valid names.
    """
    cls = _REFERENCE.get(name) or _SUCCESSORS.get(name) or _VARIANTS.get(name)
    if cls is None:
        valid = ", ".join(GROUPINGS + VARIANTS)
        raise ValueError(f"unknown grouping {name!r}; valid names: {valid}")
    return cls


def grouping_parameters(name: str) -> dict[str, Any]:
    """The keyword parameters of grouping `name` with their defaults (`start_ms` included)."""
    signature = inspect.signature(grouping_class(name).__init__)
    return {
        p.name: p.default
        for p in signature.parameters.values()
        if p.kind is inspect.Parameter.KEYWORD_ONLY
    }


def create_grouping(name: str, num_workers: int, *, start_ms: int = 0, **params: Any) -> Grouping:
    """Build one grouping instance (one reference instance: one per source/splitter).

    Args:
        name: one of `GROUPINGS` (SHUFFLE, KEY, PARTIAL_KEY, DYNAMIC_KEY, D_CHOICES, W_CHOICES,
            KEY_GROUP, VNODE) or of `VARIANTS`.
        num_workers: n, an integer >= 1.
        start_ms: when the instance is prepared (ms); DYNAMIC_KEY's warm-up and maintenance
            anchor, ignored by the others.
        params: strategy parameters; DYNAMIC_KEY takes distinct_key_count=100, warm_up_ms=15000,
            check_interval_ms=60000, initial_pool_size=2, maintenance_period_ms=15000,
            old_promotion_every=4 (the reference values); KEY_GROUP takes max_parallelism (Flink's
            default rule); VNODE takes vnodes=256; D_CHOICES takes t=10 (theta = 2/(n*t)) and
            epsilon=0.0001, W_CHOICES takes t=10.
    Returns: a fresh `Grouping`.
    Raises: ValueError: unknown name (the message lists the valid ones), `num_workers` not an
        integer >= 1, or a bad parameter value; TypeError: a parameter the grouping does not take
        (named in the message).
    Source: §1 (Python API contract).
    """
    cls = grouping_class(name)
    accepted = grouping_parameters(name)
    unknown = sorted(set(params) - set(accepted))
    if unknown:
        takes = ", ".join(sorted(set(accepted) - {"start_ms"})) or "none besides start_ms"
        raise TypeError(
            f"{name} does not take parameter(s) {', '.join(map(repr, unknown))}; it takes: {takes}"
        )
    return cls(num_workers, start_ms=start_ms, **params)
