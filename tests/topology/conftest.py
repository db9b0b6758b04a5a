"""One SparkSession for the whole test session (local[2]: this machine kind has 2 cores).

The lead may hoist this fixture into tests/conftest.py; it is session-scoped so every Spark test
shares one JVM and one set of warmed-up Python workers.
"""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def spark():
    from bench.topology.session import build_session

    session = build_session("local[2]", shuffle_partitions=2)
    yield session
    session.stop()
