from __future__ import annotations

import pytest

from tests.results.records import shared_records


@pytest.fixture(scope="session")
def sim_records(tmp_path_factory):
    """Folder of real simulator records: 4 groupings x 4 seeds, experiment exp-a (read only)."""
    return shared_records(tmp_path_factory)
