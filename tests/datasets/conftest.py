from __future__ import annotations

from pathlib import Path

import pytest

from tests.datasets.fixtures import write_fixture_files


@pytest.fixture(scope="session")
def user_files(tmp_path_factory) -> dict[str, Path]:
    return write_fixture_files(tmp_path_factory.mktemp("user_files"))
