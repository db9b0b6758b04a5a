"""Stream groupings of the reference DKG experiments: SHUFFLE, KEY, PARTIAL_KEY, DYNAMIC_KEY.

Pure Python (numpy, mmh3; numba compiles the batch loops lazily); nothing of Spark or Kafka.
One `Grouping` object is one reference grouping instance (one per splitter/source):

    from groupings import create_grouping
    g = create_grouping("DYNAMIC_KEY", 10, start_ms=t0)
    task = g.choose("Turkey", now_ms)           # one tuple
    tasks = g.route(keys, now_ms_array)         # a batch, equal to choose in order

Behaviour is reference-exact: shared/reference/dkg-reference.md (the spec) §1-§8, §13.
"""

from groupings.base import Grouping
from groupings.dynamic_key import DynamicKeyDownGrouping, DynamicKeyGrouping
from groupings.hashing import HashIndexError
from groupings.key import KeyGrouping
from groupings.keyspace import KeyItem, KeySpace, KeySpaceView
from groupings.partial_key import PartialKeyGrouping
from groupings.registry import (
    GROUPINGS,
    VARIANTS,
    create_grouping,
    grouping_class,
    grouping_parameters,
)
from groupings.shuffle import ShuffleGrouping

__all__ = [
    "GROUPINGS",
    "VARIANTS",
    "DynamicKeyDownGrouping",
    "DynamicKeyGrouping",
    "Grouping",
    "HashIndexError",
    "KeyGrouping",
    "KeyItem",
    "KeySpace",
    "KeySpaceView",
    "PartialKeyGrouping",
    "ShuffleGrouping",
    "create_grouping",
    "grouping_class",
    "grouping_parameters",
]
