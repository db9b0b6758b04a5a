"""notebooks/compare.ipynb runs without errors on real simulator records (nbclient, the venv's Python)."""

from __future__ import annotations

from pathlib import Path

import nbclient
import nbformat
import pytest

from bench.compare import build_comparison, select_runs
from bench.compare.comparison import MixedInputError
from tests.results.records import write_observer_record

NOTEBOOK = Path(__file__).resolve().parents[2] / "notebooks" / "compare.ipynb"


def test_notebook_is_committed_without_outputs():
    nb = nbformat.read(NOTEBOOK, as_version=4)
    nbformat.validate(nb)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert code, "the notebook has no code"
    assert all(not c.outputs and c.execution_count is None for c in code), \
        "clear the outputs before committing (see notebooks/README.md)"


def execute(results: Path, kernel, monkeypatch) -> list:
    """Run the notebook on the records in `results` (default selection); its code cells' outputs."""
    monkeypatch.setenv("BENCH_RESULTS_DIR", str(results))  # the kernel inherits the environment
    monkeypatch.delenv("BENCH_COMPARE_EXPERIMENT", raising=False)
    monkeypatch.delenv("BENCH_COMPARE_DATASET", raising=False)
    nb = nbformat.read(NOTEBOOK, as_version=4)
    client = nbclient.NotebookClient(nb, km=kernel, timeout=180,
                                     resources={"metadata": {"path": str(NOTEBOOK.parent)}})
    client.execute()  # raises CellExecutionError on any failing cell
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs]
    assert not [o for o in outputs if o.output_type == "error"]
    return outputs


def markdown_of(outputs: list) -> str:
    return "".join(o.get("data", {}).get("text/markdown", "") for o in outputs)


def test_notebook_executes_on_simulated_records(sim_records, notebook_kernel, monkeypatch):
    outputs = execute(sim_records, notebook_kernel, monkeypatch)
    text = "".join(o.get("text", "") for o in outputs if o.output_type == "stream")
    assert f"results folder: {sim_records}" in text
    images = [o for o in outputs if "image/png" in o.get("data", {})]
    assert len(images) >= 4  # STD_DEV, load share, DIST_COST, throughput (latency: simulate has none)
    tables = markdown_of(outputs)
    assert "Pairwise Mann-Whitney U" in tables and "DYNAMIC_KEY" in tables
    assert "latency_over_time: not recorded" in text
    assert "MIXED" not in tables


def test_notebook_compares_runs_of_mixed_input_conditions_and_marks_them(tmp_path, notebook_kernel, monkeypatch):
    """The default selection (newest run of each grouping) picks a paced live run of KEY and a run of
    DYNAMIC_KEY on a recorded topic: `bench compare` refuses them without --allow-mixed; the notebook
    compares them, warns, and every label names its input condition."""
    results = tmp_path / "results"
    live = {"mode": "live", "rate": 500.0, "paced": True, "topic": "t"}
    write_observer_record(results, "obs-key-live", "KEY", input_conditions=live)
    write_observer_record(results, "obs-dkg-rec", "DYNAMIC_KEY", seed=1,
                          input_conditions={"mode": "recorded", "rate": None, "paced": False, "topic": "t"})
    with pytest.raises(MixedInputError):
        build_comparison(select_runs(results)[0])
    tables = markdown_of(execute(results, notebook_kernel, monkeypatch))
    assert "**Warning: MIXED input conditions** (live 500 rec/s, recorded)" in tables
    assert "KEY [live 500 rec/s]" in tables and "DYNAMIC_KEY [recorded]" in tables
    assert "MIXED input conditions (live 500 rec/s, recorded), compared" in tables  # the table's own note
