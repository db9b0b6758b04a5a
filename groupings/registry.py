"""Names of the groupings and `create_grouping`, the one way other stages build them (§1).

A grouping is named in one of three ways, and every function here takes all three:
- a built-in name: one of `GROUPINGS` or `VARIANTS` (SHUFFLE, KEY, ..., DYNAMIC_KEY_DOWN);
- the name of an installed plugin: an entry point of group `ENTRY_POINT_GROUP`
  (`stream_groupings.groupings`) whose value is `package.module:Class`;
- a `package.module:Class` spec, for a grouping class on `sys.path` that no entry point registers.

A plugin class is a subclass of `groupings.base.Grouping`; docs/extending.md gives its contract
and walks through adding one. Built-in names win over a plugin registered under the same name.
"""

from __future__ import annotations

import importlib
import inspect
from importlib.metadata import EntryPoint, entry_points
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
_BUILT_IN: dict[str, type[Grouping]] = {**_REFERENCE, **_SUCCESSORS, **_VARIANTS}

REFERENCE_GROUPINGS: tuple[str, ...] = tuple(_REFERENCE)
"""The reference groupings: SHUFFLE, KEY, PARTIAL_KEY, DYNAMIC_KEY (the reference CLI names)."""

GROUPINGS: tuple[str, ...] = REFERENCE_GROUPINGS + tuple(_SUCCESSORS)
"""Every grouping the harness compares: the reference four, then the groupings of the systems
that followed (SLB's D_CHOICES and W_CHOICES, Flink's KEY_GROUP, RisingWave's VNODE). Plugins are
not in it: `--grouping all` and run-all's default stay the built-in groupings."""

VARIANTS: tuple[str, ...] = tuple(_VARIANTS)
"""Named variants that fix a reference quirk (§13 "variant"); `create_grouping` takes them too."""

ENTRY_POINT_GROUP = "stream_groupings.groupings"
"""The entry-point group of grouping plugins: name = the grouping's name, value = `module:Class`."""


def plugin_entry_points() -> dict[str, EntryPoint]:
    """The installed grouping plugins, name -> entry point, in `sys.path` order.

    Read afresh on each call (a few ms: the distributions' metadata on `sys.path`), so a plugin
    folder added to `sys.path` is seen at once. A name that a built-in grouping has is left out.
    Raises: ValueError: two different classes are registered under one name.
    """
    found: dict[str, EntryPoint] = {}
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        if ep.name in _BUILT_IN:
            continue
        first = found.setdefault(ep.name, ep)
        if first.value != ep.value:
            raise ValueError(
                f"grouping plugin {ep.name!r} is registered twice: {first.value} and {ep.value}"
            )
    return found


def canonical_grouping(spec: str) -> str:
    """The name under which `spec` is known, checked to be a usable grouping.

    Args: spec: a built-in name in any case (`key`, `Dynamic_Key`), a plugin's entry-point name
        (exact, or in another case when only one plugin matches), or `package.module:Class`.
    Returns: the upper-case built-in name, the plugin's name as registered, or the spec as given
        (surrounding blanks removed). Every function of this module accepts the result.
    Raises: ValueError: an unknown name (the message lists the built-in and installed names), an
        ambiguous one, or a plugin or spec that cannot be imported or is not a `Grouping` class.
    """
    text = spec.strip()
    if ":" in text:
        _class_of_spec(text)
        return text
    if text.upper() in _BUILT_IN:
        return text.upper()
    plugins = plugin_entry_points()
    matches = [text] if text in plugins else [n for n in plugins if n.upper() == text.upper()]
    if len(matches) > 1:
        raise ValueError(f"grouping {spec!r} is ambiguous: plugins {', '.join(matches)} (give one exactly)")
    if not matches:
        raise ValueError(_unknown(spec, plugins))
    _class_of_entry_point(plugins[matches[0]])
    return matches[0]


def grouping_class(name: str) -> type[Grouping]:
    """The class of grouping `name`: a built-in, an installed plugin, or a `module:Class` spec.

    Names are exact here (`canonical_grouping` accepts any case first).
    Raises: ValueError: unknown name (the message lists the valid names), or a plugin or spec that
        cannot be imported or is not a `Grouping` class.
    """
    cls = _BUILT_IN.get(name)
    if cls is not None:
        return cls
    if ":" in name:
        return _class_of_spec(name)
    plugins = plugin_entry_points()
    if name not in plugins:
        raise ValueError(_unknown(name, plugins))
    return _class_of_entry_point(plugins[name])


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
            KEY_GROUP, VNODE) or of `VARIANTS`, an installed plugin's name, or a
            `package.module:Class` spec (exact: see `canonical_grouping`).
        num_workers: n, an integer >= 1.
        start_ms: when the instance is prepared (ms); DYNAMIC_KEY's warm-up and maintenance
            anchor, ignored by the others.
        params: strategy parameters; DYNAMIC_KEY takes distinct_key_count=100, warm_up_ms=15000,
            check_interval_ms=60000, initial_pool_size=2, maintenance_period_ms=15000,
            old_promotion_every=4 (the reference values); KEY_GROUP takes max_parallelism (Flink's
            default rule); VNODE takes vnodes=256; D_CHOICES takes t=10 (theta = 2/(n*t)) and
            epsilon=0.0001, W_CHOICES takes t=10; a plugin, its keyword-only parameters.
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


def _unknown(name: str, plugins: dict[str, EntryPoint]) -> str:
    """The message for an unknown grouping name: the valid names, then how to name a plugin."""
    valid = ", ".join(GROUPINGS + VARIANTS)
    installed = ", ".join(plugins) or "none"
    return (
        f"unknown grouping {name!r}; valid names: {valid}; installed plugins "
        f"(entry points {ENTRY_POINT_GROUP}): {installed}; or give package.module:Class"
    )


def _class_of_spec(spec: str) -> type[Grouping]:
    """The class that `package.module:Class` names (`Class` may be dotted: `Outer.Inner`).

    Raises: ValueError: not of that form, the module does not import, no such class, or not a
        `Grouping` class.
    """
    module_name, _, attribute = spec.partition(":")
    if not module_name or not attribute or ":" in attribute:
        raise ValueError(f"grouping {spec!r}: expected package.module:Class")
    try:
        target: Any = importlib.import_module(module_name)
    except Exception as exc:  # noqa: BLE001 - any import failure is the spec's, reported as such
        raise ValueError(
            f"grouping {spec!r}: cannot import module {module_name!r}: {type(exc).__name__}: {exc}"
        ) from exc
    for part in attribute.split("."):
        if not hasattr(target, part):
            raise ValueError(f"grouping {spec!r}: module {module_name!r} has no {attribute!r}")
        target = getattr(target, part)
    return _checked(target, f"grouping {spec!r}")


def _class_of_entry_point(ep: EntryPoint) -> type[Grouping]:
    """The class an entry point names. Raises: ValueError: it does not load or is not a Grouping."""
    where = f"grouping plugin {ep.name!r} ({ENTRY_POINT_GROUP} = {ep.value})"
    try:
        target = ep.load()
    except Exception as exc:  # noqa: BLE001 - any import failure is the plugin's, reported as such
        raise ValueError(f"{where}: cannot load it: {type(exc).__name__}: {exc}") from exc
    return _checked(target, where)


def _checked(target: Any, where: str) -> type[Grouping]:
    """`target` if it is a concrete `Grouping` subclass. Raises: ValueError otherwise."""
    if not (inspect.isclass(target) and issubclass(target, Grouping)):
        raise ValueError(f"{where}: {target!r} is not a subclass of groupings.base.Grouping")
    if inspect.isabstract(target):
        missing = ", ".join(sorted(target.__abstractmethods__))
        raise ValueError(f"{where}: {target.__name__} does not implement {missing}")
    return target
