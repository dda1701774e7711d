"""The report's modules import one another without a cycle, the package's
__init__ included (import-linter's sibling check does not see a module that
imports its own package). Every import counts, those inside functions too."""

from __future__ import annotations

import ast
from graphlib import CycleError, TopologicalSorter
from pathlib import Path

import pytest

import analysis.report

PACKAGE = "analysis.report"


def _module(path: Path) -> str:
    return PACKAGE if path.stem == "__init__" else f"{PACKAGE}.{path.stem}"


def _imported(tree: ast.AST, modules: set[str]) -> set[str]:
    """The package's modules `tree` imports: `from analysis.report import answer` names the
    module answer when there is one, else the package."""
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names if a.name in modules}
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.startswith(PACKAGE):
            for alias in node.names:
                child = f"{node.module}.{alias.name}"
                out.add(child if child in modules else node.module)
    return out & modules


def import_graph(folder: Path) -> dict[str, set[str]]:
    files = sorted(folder.glob("*.py"))
    modules = {_module(f) for f in files}
    return {_module(f): _imported(ast.parse(f.read_text()), modules) - {_module(f)} for f in files}


def test_the_report_package_has_no_import_cycle():
    graph = import_graph(Path(analysis.report.__file__).parent)
    assert len(graph) > 5
    TopologicalSorter(graph).prepare()  # raises CycleError naming the cycle


def test_the_check_sees_a_module_importing_its_own_package(tmp_path):
    (tmp_path / "__init__.py").write_text("from analysis.report.page import render\n")
    (tmp_path / "page.py").write_text("def f():\n    from analysis.report import Figure\n")
    with pytest.raises(CycleError):
        TopologicalSorter(import_graph(tmp_path)).prepare()
