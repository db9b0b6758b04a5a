"""Fixtures of the plugin tests: the toy grouping package of docs/extending.md, as if installed.

`toy_site/` holds the package (`toy_groupings.py`) and the `toy_groupings-0.1.0.dist-info` folder
that `pip install` would have written for it (METADATA and entry_points.txt, registering
ROUND_ROBIN_KEY in the group `stream_groupings.groupings`). Nothing is installed into the venv:
`toy_plugin` puts the folder on `sys.path`, where `importlib.metadata` finds the dist-info, and on
PYTHONPATH, which the subprocesses a test starts inherit (and, through the Spark JVM, its Python
workers).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

TOY_SITE = Path(__file__).resolve().parent / "toy_site"
"""The folder that stands for the toy package's site-packages."""
TOY_NAME = "ROUND_ROBIN_KEY"
"""The toy grouping's entry-point name (= its class's `name`)."""
TOY_SPEC = "toy_groupings:RoundRobinKeyGrouping"
"""The toy grouping as a `package.module:Class` spec."""


@pytest.fixture
def toy_plugin(monkeypatch) -> Iterator[Path]:
    """The toy plugin 'installed' for one test: TOY_SITE first on `sys.path` and on PYTHONPATH.

    Yields TOY_SITE. Afterwards the path and PYTHONPATH are restored and `toy_groupings` is
    dropped from `sys.modules`, so that later tests see no plugin.
    """
    monkeypatch.syspath_prepend(str(TOY_SITE))
    inherited = os.environ.get("PYTHONPATH")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(TOY_SITE), *([inherited] if inherited else [])]))
    yield TOY_SITE
    sys.modules.pop("toy_groupings", None)
