"""A grouping of one's own package is found by its entry-point name or its `module:Class` spec,
and a name or spec that does not give a usable grouping is a clear error (groupings/registry.py)."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

from groupings import (
    GROUPINGS,
    canonical_grouping,
    create_grouping,
    grouping_class,
    grouping_parameters,
    plugin_entry_points,
)
from tests.plugins.conftest import TOY_NAME, TOY_SPEC


def test_the_built_in_names_are_upper_cased_and_need_no_plugin():
    assert canonical_grouping(" dynamic_key ") == "DYNAMIC_KEY"
    assert canonical_grouping("Dynamic_Key_Down") == "DYNAMIC_KEY_DOWN"
    assert [canonical_grouping(name.lower()) for name in GROUPINGS] == list(GROUPINGS)


def test_without_the_plugin_its_name_is_unknown():
    assert TOY_NAME not in plugin_entry_points()
    with pytest.raises(ValueError, match="unknown grouping 'ROUND_ROBIN_KEY'"):
        canonical_grouping(TOY_NAME)
    with pytest.raises(ValueError, match="cannot import module 'toy_groupings'"):
        canonical_grouping(TOY_SPEC)


def test_the_entry_point_is_found_under_its_name_in_any_case(toy_plugin):
    assert plugin_entry_points()[TOY_NAME].value == TOY_SPEC
    assert canonical_grouping(TOY_NAME) == canonical_grouping("round_robin_key") == TOY_NAME
    cls = grouping_class(TOY_NAME)
    assert cls.__name__ == "RoundRobinKeyGrouping" and cls.name == TOY_NAME
    assert grouping_parameters(TOY_NAME) == {"start_ms": 0, "first_worker": 0}


def test_the_module_class_spec_is_kept_as_given(toy_plugin):
    assert canonical_grouping(f"  {TOY_SPEC} ") == TOY_SPEC
    assert grouping_class(TOY_SPEC) is grouping_class(TOY_NAME)


@pytest.mark.parametrize("name", [TOY_NAME, TOY_SPEC])
def test_create_grouping_builds_the_plugin_with_its_parameters(toy_plugin, name):
    g = create_grouping(name, 3, start_ms=5, first_worker=1)
    assert g.route(["a", "b", "a", "c", "d"], np.arange(5)).tolist() == [1, 2, 1, 0, 1]
    assert g.loads.tolist() == [1, 3, 1] and g.last_now_ms == 5  # times before start_ms count as start_ms
    assert g.choose("b", 9) == 2
    # The state pickles whole (Spark keeps the instance in its state store between batches).
    again = pickle.loads(pickle.dumps(g))
    assert again == g and again.choose("e", 10) == g.choose("e", 10) == 2
    with pytest.raises(TypeError, match="'warm_up_ms'.*it takes: first_worker"):
        create_grouping(name, 3, warm_up_ms=1)
    with pytest.raises(ValueError, match="first_worker"):
        create_grouping(name, 3, first_worker=3)


def test_an_unknown_name_lists_the_built_in_and_installed_names(toy_plugin):
    with pytest.raises(ValueError) as info:
        canonical_grouping("FIELDS")
    message = str(info.value)
    assert "SHUFFLE, KEY, PARTIAL_KEY, DYNAMIC_KEY" in message and "DYNAMIC_KEY_DOWN" in message
    assert "installed plugins (entry points stream_groupings.groupings): ROUND_ROBIN_KEY" in message
    assert "package.module:Class" in message
    with pytest.raises(ValueError, match="unknown grouping 'FIELDS'"):
        create_grouping("FIELDS", 3)


@pytest.mark.parametrize(("spec", "message"), [
    ("collections:OrderedDict", "is not a subclass of groupings.base.Grouping"),
    ("groupings.base:check_int", "is not a subclass of groupings.base.Grouping"),
    ("groupings.base:Grouping", "Grouping does not implement _choose"),
    ("toy_groupings:NoSuchGrouping", "module 'toy_groupings' has no 'NoSuchGrouping'"),
    ("no_such_package.groupings:Mine", "cannot import module 'no_such_package.groupings': ModuleNotFoundError"),
    ("toy_groupings:", "expected package.module:Class"),
])
def test_a_spec_that_is_not_a_grouping_is_a_clear_error(toy_plugin, spec, message):
    for resolve in (canonical_grouping, grouping_class, lambda s: create_grouping(s, 3)):
        with pytest.raises(ValueError, match=message):
            resolve(spec)


def test_a_broken_or_wrong_entry_point_is_a_clear_error(tmp_path, monkeypatch):
    info = tmp_path / "broken_groupings-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: broken-groupings\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(
        "[stream_groupings.groupings]\n"
        "MISSING = no_such_module:Grouping\n"
        "NOT_A_GROUPING = collections:OrderedDict\n"
        "KEY = collections:OrderedDict\n"  # a built-in name: the built-in wins
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    assert set(plugin_entry_points()) == {"MISSING", "NOT_A_GROUPING"}
    with pytest.raises(ValueError, match=r"grouping plugin 'MISSING' .*cannot load it: ModuleNotFoundError"):
        canonical_grouping("missing")
    with pytest.raises(ValueError, match="'NOT_A_GROUPING' .*is not a subclass of groupings.base.Grouping"):
        create_grouping("NOT_A_GROUPING", 3)
    assert canonical_grouping("key") == "KEY" and grouping_class("KEY").__name__ == "KeyGrouping"


def test_one_name_registered_for_two_classes_is_an_error(tmp_path, monkeypatch, toy_plugin):
    info = tmp_path / "other_groupings-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: other-groupings\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text("[stream_groupings.groupings]\nROUND_ROBIN_KEY = other:Grouping\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(ValueError, match="'ROUND_ROBIN_KEY' is registered twice"):
        canonical_grouping(TOY_NAME)
