"""docs/extending.md walks through the toy plugin of these tests: its code is the module's, and its
registration is the toy dist-info's entry point."""

from __future__ import annotations

import re

from tests.conftest import REPO_ROOT
from tests.plugins.conftest import TOY_NAME, TOY_SITE, TOY_SPEC

DOC = REPO_ROOT / "docs" / "extending.md"


def code_blocks(text: str, language: str) -> list[str]:
    return re.findall(rf"^```{language}\n(.*?)^```$", text, flags=re.DOTALL | re.MULTILINE)


def test_the_class_shown_is_the_toy_module_word_for_word():
    assert code_blocks(DOC.read_text(), "python")[0] == (TOY_SITE / "toy_groupings.py").read_text()


def test_the_registration_shown_is_the_toy_entry_point():
    [toml] = code_blocks(DOC.read_text(), "toml")
    assert toml == f'[project.entry-points."stream_groupings.groupings"]\n{TOY_NAME} = "{TOY_SPEC}"\n'
    [info] = TOY_SITE.glob("*.dist-info")
    assert (info / "entry_points.txt").read_text() == f"[stream_groupings.groupings]\n{TOY_NAME} = {TOY_SPEC}\n"
