"""notebooks/compare.ipynb runs without errors on real simulator records (nbclient, the venv's Python)."""

from __future__ import annotations

import sys
from pathlib import Path

import nbclient
import nbformat

NOTEBOOK = Path(__file__).resolve().parents[2] / "notebooks" / "compare.ipynb"


def test_notebook_is_committed_without_outputs():
    nb = nbformat.read(NOTEBOOK, as_version=4)
    nbformat.validate(nb)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert code, "the notebook has no code"
    assert all(not c.outputs and c.execution_count is None for c in code), \
        "clear the outputs before committing (see notebooks/README.md)"


def _kernel_manager(tmp_path: Path):
    """A kernel on this interpreter (the venv's), whatever kernel specs the user has elsewhere."""
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


def test_notebook_executes_on_simulated_records(sim_records, tmp_path, monkeypatch):
    monkeypatch.setenv("BENCH_RESULTS_DIR", str(sim_records))  # the kernel inherits the environment
    monkeypatch.delenv("BENCH_COMPARE_EXPERIMENT", raising=False)
    monkeypatch.delenv("BENCH_COMPARE_DATASET", raising=False)
    nb = nbformat.read(NOTEBOOK, as_version=4)
    client = nbclient.NotebookClient(nb, km=_kernel_manager(tmp_path), timeout=180,
                                     resources={"metadata": {"path": str(NOTEBOOK.parent)}})
    client.execute()  # raises CellExecutionError on any failing cell
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs]
    assert not [o for o in outputs if o.output_type == "error"]
    text = "".join(o.get("text", "") for o in outputs if o.output_type == "stream")
    assert f"results folder: {sim_records}" in text
    images = [o for o in outputs if "image/png" in o.get("data", {})]
    assert len(images) >= 4  # STD_DEV, load share, DIST_COST, throughput (latency: simulate has none)
    tables = "".join(o.get("data", {}).get("text/markdown", "") for o in outputs)
    assert "Pairwise Mann-Whitney U" in tables and "DYNAMIC_KEY" in tables
    assert "latency_over_time: not recorded" in text
