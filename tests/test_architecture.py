"""The structure docs/architecture.md promises, checked on the source: import layers and no cycles
(import-linter's contracts in pyproject.toml), project imports at the top of their modules, and
functions, Java methods and modules short enough to read.

The limits below are the ones issue 36 set; a change that breaks one says where, with the figure."""

from __future__ import annotations

import ast
import os
import shutil
import subprocess
import sys
from pathlib import Path

import grimp
import pytest
import tree_sitter_java
from tree_sitter import Language, Parser

REPO_ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("bench", "groupings", "datasets", "producers", "dashboards")
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")

MAX_FUNCTION_LINES = 80
"""The longest function allowed, in lines from `def` to its last line (decorators excluded)."""
MAX_RUN_MODULE_LINES = 400
MAX_CHAIN = 7
"""The longest chain of imports between the packages (bench's subpackages and top-level modules,
the other top-level packages), counted in packages."""
KERNELS = {Path("groupings/_kernels.py")}
"""numba kernels: one loop each, kept whole so that numba compiles it as one function."""
DEFERRED = "# deferred:"
"""The comment that an import inside a function carries, on its line or the line above its block."""


def source_files() -> list[Path]:
    """Every Python module of the project's packages, relative to the repository root."""
    return sorted(p.relative_to(REPO_ROOT) for pkg in PACKAGES for p in (REPO_ROOT / pkg).rglob("*.py")
                  if "peers" not in p.parts)


def functions(tree: ast.AST):
    return [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)]


def lint_imports(root: Path) -> subprocess.CompletedProcess:
    return subprocess.run([str(LINT_IMPORTS), "--no-cache", "--config", str(root / "pyproject.toml")],
                          cwd=root, capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PYTHONPATH": str(root)})


def test_import_contracts_hold():
    result = lint_imports(REPO_ROOT)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
    assert "0 broken" in result.stdout


def package_of(module: str) -> str:
    """`bench.run.stream` -> `bench.run`; `groupings.registry` -> `groupings`."""
    parts = module.split(".")
    return ".".join(parts[:2]) if parts[0] == "bench" and len(parts) > 1 else parts[0]


def longest_chain(edges: dict[str, set[str]]) -> list[str]:
    """The longest path of an acyclic package graph (package -> the packages it imports)."""
    memo: dict[str, list[str]] = {}

    def from_(package: str) -> list[str]:
        if package not in memo:
            memo[package] = [package] + max((from_(p) for p in edges.get(package, ())), key=len, default=[])
        return memo[package]
    return max((from_(p) for p in edges), key=len, default=[])


def test_the_longest_import_chain_between_packages_is_short():
    """The engines side by side below the run, the experiments above it, the observer and compare
    below both engines: no chain of imports between packages runs over MAX_CHAIN."""
    graph = grimp.build_graph(*PACKAGES)
    edges: dict[str, set[str]] = {}
    for module in graph.modules:
        for imported in graph.find_modules_directly_imported_by(module):
            if package_of(imported) != package_of(module):
                edges.setdefault(package_of(module), set()).add(package_of(imported))
    chain = longest_chain(edges)
    assert len(chain) <= MAX_CHAIN, " -> ".join(chain)


def test_the_longest_chain_is_found():
    edges = {"a": {"b", "c"}, "b": {"d"}, "d": {"e"}, "c": set()}
    assert longest_chain(edges) == ["a", "b", "d", "e"]


@pytest.mark.parametrize("added, broken, reported", [
    ("import bench.run", "The command line above the run, the run above its parts, the parts above the \npure packages BROKEN",
     "groupings.shuffle -> bench.run"),
    ("import groupings.registry", "No import cycles between the modules of any package BROKEN", ".shuffle -> .registry"),
], ids=["upward import", "cycle"])
def test_import_contracts_catch_a_break(tmp_path, added, broken, reported):
    """The contracts are not vacuous: a copy of the source with one import added on purpose to the
    pure groupings package (one that runs up to the run; one that closes a cycle with the registry,
    which imports it) breaks them."""
    for pkg in PACKAGES:
        shutil.copytree(REPO_ROOT / pkg, tmp_path / pkg, ignore=shutil.ignore_patterns("__pycache__", "src", "target"))
    shutil.copy(REPO_ROOT / "pyproject.toml", tmp_path)
    shuffle = tmp_path / "groupings" / "shuffle.py"
    shuffle.write_text(shuffle.read_text() + f"\n{added}  # on purpose\n")
    result = lint_imports(tmp_path)
    assert result.returncode != 0
    assert broken in result.stdout
    assert reported in result.stdout


def test_imports_inside_functions_say_why():
    """An import inside a function is for a heavy or optional dependency, and says so."""
    silent = []
    for path in source_files():
        lines = (REPO_ROOT / path).read_text().splitlines()
        for fn in functions(ast.parse("\n".join(lines))):
            for node in ast.walk(fn):
                if isinstance(node, ast.Import | ast.ImportFrom) and not _says_why(lines, node.lineno):
                    silent.append(f"{path}:{node.lineno}: {lines[node.lineno - 1].strip()}")
    assert not silent, f"{len(silent)} imports inside functions without a '{DEFERRED}' comment:\n" + "\n".join(silent)


def _says_why(lines: list[str], lineno: int) -> bool:
    """Whether line `lineno` (1-based), or the comment right above its block of imports, says `# deferred:`."""
    i = lineno - 1
    if DEFERRED in lines[i]:
        return True
    while i > 0 and lines[i - 1].strip().startswith(("import ", "from ")):
        i -= 1
    while i > 0 and lines[i - 1].strip().startswith("#"):
        i -= 1
        if lines[i].strip().startswith(DEFERRED):
            return True
    return False


def test_functions_are_short():
    long = sorted(((fn.end_lineno - fn.lineno + 1, f"{path}:{fn.lineno} {fn.name}")
                   for path in source_files() if path not in KERNELS
                   for fn in functions(ast.parse((REPO_ROOT / path).read_text()))), reverse=True)
    assert long[0][0] < MAX_FUNCTION_LINES, [f for f in long if f[0] >= MAX_FUNCTION_LINES]


def java_methods(source: bytes) -> list[tuple[int, int, str]]:
    """(lines from the first line of its declaration, annotations included, to its closing brace;
    1-based first line; name) of each method and constructor in a Java source file, parsed by
    tree-sitter's Java grammar (nested and local classes included)."""
    tree = Parser(Language(tree_sitter_java.language())).parse(source)
    assert not tree.root_node.has_error, "the Java grammar could not parse the file"
    found, nodes = [], [tree.root_node]
    while nodes:
        node = nodes.pop()
        if node.type in ("method_declaration", "constructor_declaration"):
            found.append((node.end_point[0] - node.start_point[0] + 1, node.start_point[0] + 1,
                          node.child_by_field_name("name").text.decode()))
        nodes.extend(node.children)
    return found


def test_java_methods_are_short():
    """Java is held to the Python functions' limit: every tracked .java file (the groupings, the
    topology's stage, the peers, the test oracles)."""
    tracked = subprocess.run(["git", "ls-files", "*.java"], cwd=REPO_ROOT, capture_output=True, text=True,
                             check=True).stdout.split()
    assert tracked, "the repository has Java sources"
    long = sorted(((lines, f"{path}:{line} {name}") for path in tracked
                   for lines, line, name in java_methods((REPO_ROOT / path).read_bytes())), reverse=True)
    assert long[0][0] < MAX_FUNCTION_LINES, [m for m in long if m[0] >= MAX_FUNCTION_LINES]


def test_java_method_lengths_are_counted_from_the_declaration_to_the_brace():
    source = b"""class A {
    @Override
    public void run() {
        int x = 1;
    }
    static final class B { B(int y) { } }
    interface C { void abstractOne(); }
}"""
    assert sorted(java_methods(source)) == [(1, 6, "B"), (1, 7, "abstractOne"), (4, 2, "run")]


def test_run_modules_are_short():
    sizes = {p.name: len(p.read_text().splitlines()) for p in (REPO_ROOT / "bench" / "run").glob("*.py")}
    assert sizes, "bench/run is a package"
    assert max(sizes.values()) <= MAX_RUN_MODULE_LINES, sizes
