"""The fault-injection suite runs only under `make chaos` (BENCH_CHAOS=1): it kills the session
stack's broker and InfluxDB, which the rest of the suite must not see."""

from __future__ import annotations

import os

import pytest


def pytest_collection_modifyitems(config, items):
    if os.environ.get("BENCH_CHAOS") == "1":
        return
    skip = pytest.mark.skip(reason="fault injection: run with make chaos (BENCH_CHAOS=1)")
    for item in items:
        if "tests/chaos/" in str(item.fspath).replace(os.sep, "/"):
            item.add_marker(skip)
