"""The structure rules of docs/architecture.md, checked on the source so they stay true.

- No function in analysis/, infra/ or payload/ is longer than 80 lines.
- Library modules do not reach back into the command line: outside the CLI modules, no code
  constructs an argparse.Namespace or calls a CLI module's `main`. Commands adapt arguments to
  library functions, never the other way round.
- The HTML report escapes through its Jinja2 templates (autoescape), so no `html.escape` is left
  in analysis/report.
- No code outside a cloud's own folder (infra/<cloud>/) compares a value with a cloud's name: it
  looks the cloud up in infra.clouds and calls it, or reads a table keyed by what varies.
- No import cycle among the packages' modules, counting imports inside functions.
- docs/architecture.md names every module, and only modules that exist.

Each checker is a small function over source text; the tests at the bottom feed them known-bad
snippets, so a checker that stopped finding anything would fail.
"""

from __future__ import annotations

import ast
import re
from graphlib import CycleError, TopologicalSorter
from pathlib import Path

import pytest

from infra.clouds import NAMES

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("analysis", "infra", "payload")
MAX_FUNCTION_LINES = 80

# Functions known to be over the limit while their split is under way elsewhere. Whoever merges
# those splits empties this set; an entry that is no longer long fails the test below, so the set
# cannot go stale.
ALLOWED_LONG_FUNCTIONS: set[tuple[str, str]] = set()  # empty: every function is short

# The command line: the only modules that may build an argparse.Namespace or call a CLI `main`.
CLI_FILES = {
    "analysis/cli.py",
    "analysis/campaign/cli.py",
    "infra/cli.py",
    "infra/ssh/cli.py",
    "payload/cli.py",
}
CLI_DIRS = ("analysis/commands/",)
# Dotted names of the CLI modules whose `main` a library module must not call.
CLI_MODULES = ("analysis.cli", "analysis.campaign.cli", "infra.cli", "infra.ssh.cli", "payload.cli")
CLI_PACKAGES = ("analysis.commands",)


def _sources(*roots: str) -> list[Path]:
    return sorted(p for root in roots for p in (ROOT / root).rglob("*.py"))


def _rel(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


def _is_cli_file(rel: str) -> bool:
    return rel in CLI_FILES or rel.startswith(CLI_DIRS) or rel.endswith("/__main__.py")


def _is_cli_module(dotted: str) -> bool:
    if dotted.endswith(".__main__") or dotted in CLI_MODULES:
        return True
    return any(dotted == pkg or dotted.startswith(pkg + ".") for pkg in CLI_PACKAGES)


def long_functions(source: str, limit: int = MAX_FUNCTION_LINES) -> list[tuple[str, int]]:
    """(name, lines) of every function or method, nested ones included, longer than `limit`."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            lines = node.end_lineno - node.lineno + 1
            if lines > limit:
                found.append((node.name, lines))
    return found


def _cli_bindings(tree: ast.AST) -> tuple[set[str], set[str]]:
    """(local names bound to a CLI module, local names bound to a CLI module's `main`)."""
    modules, mains = set(), set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if _is_cli_module(alias.name):
                    modules.add(alias.asname or alias.name)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for alias in node.names:
                local = alias.asname or alias.name
                if _is_cli_module(f"{node.module}.{alias.name}"):
                    modules.add(local)
                elif _is_cli_module(node.module) and alias.name == "main":
                    mains.add(local)
    return modules, mains


def _dotted(node: ast.AST) -> str | None:
    """`a.b.c` of a Name/Attribute chain, None for anything else."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return None


def cli_reaches(source: str) -> list[str]:
    """What a library module does that belongs to the command line: each construction of an
    argparse.Namespace and each call of a CLI module's `main`, as `line: what`."""
    tree = ast.parse(source)
    modules, mains = _cli_bindings(tree)
    namespace_names = {"argparse.Namespace"}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module == "argparse":
            namespace_names |= {a.asname or a.name for a in node.names if a.name == "Namespace"}
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        name = _dotted(node.func)
        if name is None:
            continue
        if name in namespace_names:
            found.append(f"{node.lineno}: constructs argparse.Namespace")
        elif name in mains or (name.endswith(".main") and name.rsplit(".", 1)[0] in modules):
            found.append(f"{node.lineno}: calls the CLI entry point {name}()")
    return found


def html_escapes(source: str) -> list[int]:
    """Lines that use html.escape (as `html.escape` or imported from `html`)."""
    tree = ast.parse(source)
    lines = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr == "escape" and _dotted(node) == "html.escape":
            lines.append(node.lineno)
        elif isinstance(node, ast.ImportFrom) and node.module == "html":
            if any(a.name == "escape" for a in node.names):
                lines.append(node.lineno)
    return lines


def cloud_name_branches(source: str, names=NAMES) -> list[str]:
    """`line: comparison` for each comparison with a cloud's name (`p == "gcp"`, `p in ("aws", ...)`)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Compare):
            continue
        for side in (node.left, *node.comparators):
            items = side.elts if isinstance(side, (ast.Tuple, ast.List, ast.Set)) else [side]
            if any(isinstance(i, ast.Constant) and i.value in names for i in items):
                found.append(f"{node.lineno}: {ast.unparse(node)}")
                break
    return found


# --- the rules on the code base ---------------------------------------------------------------


def test_no_function_is_longer_than_80_lines():
    offenders = []
    for path in _sources(*PACKAGES):
        for name, lines in long_functions(path.read_text(encoding="utf-8")):
            if (_rel(path), name) not in ALLOWED_LONG_FUNCTIONS:
                offenders.append(f"{_rel(path)}:{name} has {lines} lines")
    assert not offenders, f"split these into functions of at most {MAX_FUNCTION_LINES} lines: {offenders}"


def test_the_allow_list_of_long_functions_names_only_functions_still_long():
    still_long = {
        (_rel(path), name) for path in _sources(*PACKAGES) for name, _ in long_functions(path.read_text("utf-8"))
    }
    stale = sorted(ALLOWED_LONG_FUNCTIONS - still_long)
    assert not stale, f"remove these from ALLOWED_LONG_FUNCTIONS, they are split now: {stale}"


def test_library_modules_do_not_reach_into_the_command_line():
    offenders = []
    for path in _sources(*PACKAGES):
        rel = _rel(path)
        if not _is_cli_file(rel):
            offenders += [f"{rel}:{hit}" for hit in cli_reaches(path.read_text(encoding="utf-8"))]
    assert not offenders, (
        "library code must not build CLI arguments or call a CLI main; give the library function "
        f"plain parameters and let the command adapt: {offenders}"
    )


def test_the_report_escapes_only_through_its_templates():
    offenders = []
    for path in _sources("analysis/report"):
        offenders += [f"{_rel(path)}:{line}" for line in html_escapes(path.read_text(encoding="utf-8"))]
    assert not offenders, f"render through analysis/report/templates (autoescaped) instead of html.escape: {offenders}"


def test_only_a_clouds_own_folder_branches_on_its_name():
    folders = tuple(f"infra/{name}/" for name in NAMES)
    offenders = []
    for path in _sources(*PACKAGES):
        if not _rel(path).startswith(folders):
            offenders += [f"{_rel(path)}:{hit}" for hit in cloud_name_branches(path.read_text(encoding="utf-8"))]
    assert not offenders, (
        f"move what varies by cloud into infra/<cloud>/ and reach it through infra.clouds: {offenders}"
    )


def test_the_rules_scan_real_files():
    """The scans above read the packages, not an empty set."""
    rels = {_rel(p) for p in _sources(*PACKAGES)}
    assert {"analysis/cli.py", "infra/clouds.py", "payload/config.py"} <= rels
    assert _sources("analysis/report")


# --- the checkers find what they should ---------------------------------------------------------


def _function(lines: int, name: str = "f", indent: str = "") -> str:
    body = "".join(f"{indent}    x{i} = {i}\n" for i in range(lines - 1))
    return f"{indent}def {name}():\n{body}"


def test_long_functions_counts_every_line_of_functions_and_methods():
    assert long_functions(_function(80)) == []
    assert long_functions(_function(81)) == [("f", 81)]
    method = "class C:\n" + _function(81, "m", indent="    ")
    assert long_functions(method) == [("m", 81)]


@pytest.mark.parametrize(
    "source",
    [
        "import argparse\nargparse.Namespace(stack='a')\n",
        "from argparse import Namespace\nNamespace()\n",
        "from argparse import Namespace as NS\nNS()\n",
        "from analysis.cli import main\nmain(['report'])\n",
        "from payload.cli import main as run\nrun([])\n",
        "import infra.ssh.cli\ninfra.ssh.cli.main([])\n",
        "from analysis import cli\ncli.main([])\n",
        "from analysis.commands import report\nreport.main([])\n",
        "from analysis.campaign import cli as c\nc.main([])\n",
    ],
)
def test_cli_reaches_finds_namespaces_and_cli_mains(source):
    assert len(cli_reaches(source)) == 1


@pytest.mark.parametrize(
    "source",
    [
        "import argparse\ndef f(args: argparse.Namespace): return isinstance(args, argparse.Namespace)\n",
        "class Session:\n    def main(self): return 1\nSession().main()\n",
        "from payload import config\nconfig.main()\n",
    ],
)
def test_cli_reaches_leaves_annotations_and_other_mains_alone(source):
    assert cli_reaches(source) == []


@pytest.mark.parametrize(
    "source, hits",
    [
        ("if provider == 'gcp': pass\n", 1),
        ("x = 'aws' != p\n", 1),
        ("ok = p in ('aws', 'gcp')\n", 1),
        ("ok = p in {'gcp'}\n", 1),
        ("tables = {'gcp_gpu': 1}\nif name == 'gpu': pass\n", 0),
        ("clouds.get(p)\n", 0),
    ],
)
def test_cloud_name_branches_finds_comparisons_with_a_cloud_name(source, hits):
    assert len(cloud_name_branches(source)) == hits


def test_html_escapes_finds_both_spellings():
    assert html_escapes("import html\nx = html.escape('<')\n") == [2]
    assert html_escapes("from html import escape\n") == [1]
    assert html_escapes("from markupsafe import escape\n") == []


# --- docs/architecture.md names every module, and only modules that exist ------------------

ARCHITECTURE = ROOT / "docs" / "architecture.md"
# Named by a table of their own rather than one by one: every command module has a row in
# analysis.commands.COMMANDS (tests/cli/test_gpubench.py checks it).
NAMED_ELSEWHERE = ("analysis/commands/",)


def _named_files(text: str) -> set[str]:
    """Every `*.py` path written in backticks, alone or in a list (`cloud.py` / `local.py`)."""
    names = set()
    text = re.sub(r"```.*?```", "", text, flags=re.S)  # fenced blocks: not backtick pairs
    for quoted in re.findall(r"`([^`]+)`", text):
        names.update(w for w in re.split(r"[\s,]+", quoted) if w.endswith(".py"))
    outside = tuple(f"{d.name}/" for d in ROOT.iterdir() if d.is_dir() and d.name not in PACKAGES)
    return {
        n for n in names if "<" not in n and "*" not in n and not n.startswith(outside) and not n.startswith("test_")
    }  # a test file in the table's tests column


def _is_named(rel: str, names: set[str]) -> bool:
    return any(rel == n or rel.endswith("/" + n) for n in names)


def test_architecture_names_every_module():
    names = _named_files(ARCHITECTURE.read_text())
    modules = [_rel(p) for p in _sources(*PACKAGES) if p.name != "__init__.py"]
    missing = [m for m in modules if not m.startswith(NAMED_ELSEWHERE) and not _is_named(m, names)]
    assert not missing, f"docs/architecture.md does not name these modules: {missing}"


def test_architecture_names_no_module_that_is_gone():
    modules = [_rel(p) for p in _sources(*PACKAGES)]
    stale = sorted(n for n in _named_files(ARCHITECTURE.read_text()) if not any(_is_named(m, {n}) for m in modules))
    assert not stale, f"docs/architecture.md names modules that do not exist: {stale}"


def test_named_files_reads_paths_alone_and_in_lists():
    text = "```\nx `fenced.py\n```\n`cli.py`, `cloud.py` / `local.py`, `report/build.py` (x), `infra/<name>/`, `guest/*.sh`, `a.py + b.py`, `tests/x.py`"
    assert _named_files(text) == {"cli.py", "cloud.py", "local.py", "report/build.py", "a.py", "b.py"}
    assert _is_named("analysis/report/build.py", {"report/build.py"})
    assert not _is_named("analysis/report/build.py", {"uild.py"})


# --- no import cycle -------------------------------------------------------------------------


def import_cycle(*packages: str) -> list[str]:
    """One import cycle among the modules of `packages`, or [] when there is none. Every import
    counts, those inside functions too (grimp, import-linter's own graph), and a module that
    imports its own package."""
    import grimp

    graph = grimp.build_graph(*packages, cache_dir=None)
    try:
        TopologicalSorter({m: graph.find_modules_directly_imported_by(m) for m in graph.modules}).prepare()
    except CycleError as err:
        return list(err.args[1])
    return []


def test_the_packages_import_one_another_without_a_cycle():
    """A cycle is broken by moving the shared piece down, not hidden inside a function."""
    cycle = import_cycle(*PACKAGES)
    assert not cycle, f"import cycle: {' -> '.join(cycle)}"


def test_import_cycle_sees_a_module_importing_its_own_package_inside_a_function(tmp_path, monkeypatch):
    package = tmp_path / "cyclic"
    package.mkdir()
    (package / "__init__.py").write_text("from cyclic.page import render\n")
    (package / "page.py").write_text("def render():\n    from cyclic import Figure\n")
    (package / "plain.py").write_text("import json\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert set(import_cycle("cyclic")) == {"cyclic", "cyclic.page"}
    (package / "page.py").write_text("def render():\n    from cyclic.plain import json\n")
    assert import_cycle("cyclic") == []
