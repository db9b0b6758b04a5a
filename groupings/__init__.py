"""Stream groupings: the reference DKG experiments' SHUFFLE, KEY, PARTIAL_KEY, DYNAMIC_KEY, and the
groupings of the systems that followed: SLB's D_CHOICES and W_CHOICES, Flink's KEY_GROUP (key
groups) and RisingWave's VNODE (virtual nodes), whose workers own groups of keys and reschedule.

Pure Python (numpy, mmh3; numba compiles the batch loops lazily); nothing of Spark or Kafka.
One `Grouping` object is one reference grouping instance (one per splitter/source):

    from groupings import create_grouping
    g = create_grouping("DYNAMIC_KEY", 10, start_ms=t0)
    task = g.choose("Turkey", now_ms)           # one tuple
    tasks = g.route(keys, now_ms_array)         # a batch, equal to choose in order

A grouping of your own, in your own package, is found by name through an entry point (group
`stream_groupings.groupings`) or named `package.module:Class`: see `canonical_grouping` and
docs/extending.md.

Behaviour is reference-exact: docs/reference/dkg-reference.md (the spec) §1-§8, §13 and
Appendix A; docs/reference/rescaling.md §1-2 for KEY_GROUP and VNODE.
"""

from groupings.base import Grouping
from groupings.dynamic_key import DynamicKeyDownGrouping, DynamicKeyGrouping
from groupings.hashing import HashIndexError
from groupings.key import KeyGrouping
from groupings.key_group import KeyGroupGrouping
from groupings.keyspace import KeyItem, KeySpace, KeySpaceView
from groupings.ownership import OwnershipGrouping
from groupings.partial_key import PartialKeyGrouping
from groupings.registry import (
    ENTRY_POINT_GROUP,
    GROUPINGS,
    REFERENCE_GROUPINGS,
    VARIANTS,
    canonical_grouping,
    create_grouping,
    grouping_class,
    grouping_parameters,
    plugin_entry_points,
)
from groupings.shuffle import ShuffleGrouping
from groupings.slb import DChoicesGrouping, WChoicesGrouping
from groupings.space_saving import SpaceSaving
from groupings.vnode import VNodeGrouping

__all__ = [
    "ENTRY_POINT_GROUP",
    "GROUPINGS",
    "REFERENCE_GROUPINGS",
    "VARIANTS",
    "DChoicesGrouping",
    "DynamicKeyDownGrouping",
    "DynamicKeyGrouping",
    "Grouping",
    "HashIndexError",
    "KeyGroupGrouping",
    "KeyGrouping",
    "KeyItem",
    "KeySpace",
    "KeySpaceView",
    "OwnershipGrouping",
    "PartialKeyGrouping",
    "ShuffleGrouping",
    "SpaceSaving",
    "VNodeGrouping",
    "WChoicesGrouping",
    "canonical_grouping",
    "create_grouping",
    "grouping_class",
    "grouping_parameters",
    "plugin_entry_points",
]
