from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from tests.datasets.fixtures import write_fixture_files


@pytest.fixture(scope="session")
def user_files(tmp_path_factory) -> dict[str, Path]:
    return write_fixture_files(tmp_path_factory.mktemp("user_files"))


@pytest.fixture(scope="session")
def spark():
    """A local Spark session (no Kafka). To move to tests/conftest.py once shared."""
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    pyspark_sql = pytest.importorskip("pyspark.sql")
    session = (
        pyspark_sql.SparkSession.builder.master("local[1]")
        .appName("tests-datasets")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "1")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()
