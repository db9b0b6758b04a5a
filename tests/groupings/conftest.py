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



@pytest.fixture(scope="session")
def golden_dir() -> Path:
    """`tests/groupings/golden`: the reference's golden traces (docs/reference/dkg-reference.md §15)."""
    return HERE / "golden"
