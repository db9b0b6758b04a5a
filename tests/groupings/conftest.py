"""Fixtures of the groupings tests: the shared reference folder and the golden-stream helper.

`golden_stream.py` (beside this file) is importable as `golden_stream` from these tests.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

# CI clones the repository with the shared reference folder beside it: <repo>/../shared.
SHARED = (HERE.parents[1] / ".." / "shared").resolve()


@pytest.fixture(scope="session")
def golden_dir() -> Path:
    """`shared/reference/golden`; the tests fail (not skip) when it is missing."""
    folder = SHARED / "reference" / "golden"
    if not folder.is_dir():
        pytest.fail(f"reference folder not found: {folder} (clone the repo with shared/ beside it)")
    return folder
