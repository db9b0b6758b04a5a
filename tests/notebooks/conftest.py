from __future__ import annotations

import sys

import pytest

from tests.results.records import shared_records


@pytest.fixture(scope="session")
def sim_records(tmp_path_factory):
    """Folder of real simulator records: 4 groupings x 4 seeds, experiment exp-a (read only)."""
    return shared_records(tmp_path_factory)


@pytest.fixture
def notebook_kernel(tmp_path):
    """A Jupyter kernel manager on this interpreter (the venv's), whatever kernel specs the user has
    elsewhere; the tests that use it are marked `notebook` (tests/tiers.py)."""
    from ipykernel.kernelspec import write_kernel_spec
    from jupyter_client.kernelspec import KernelSpecManager
    from jupyter_client.manager import KernelManager

    write_kernel_spec(tmp_path / "kernels" / "bench-python", overrides={"argv": [
        sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"]})
    ksm = KernelSpecManager(kernel_dirs=[str(tmp_path / "kernels")])
    # IPC sockets in the temp folder, not five TCP ports picked free and released: under load
    # another process can take one in between ("ZMQError: Address already in use").
    return KernelManager(kernel_name="bench-python", kernel_spec_manager=ksm, transport="ipc",
                         ip=str(tmp_path / "kernel-ipc"))
