"""Which frameworks the job ran: those its Python processes imported (our ``sitecustomize`` first on PYTHONPATH
notes each first import line by line, so a killed job still leaves them), else (no Python, ``-I``/``-E``) those
its ``python3`` has installed, asked in a child process that imports no framework."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import NamedTuple

from payload.gpu import FRAMEWORKS

TIMEOUT_SECONDS = 20.0

# {module: the distributions that provide it}, read once per lookup in the job's interpreter:
# packages_distributions() is Python 3.10+; before it (the legacy image's 3.8), each distribution's
# top_level.txt names its modules. A dist-info without METADATA has no name: md.version(None) is
# refused (3.11+) or answers another distribution's version (3.8-3.10), so it is skipped.
_DISTRIBUTIONS = r"""
def _gpubench_dists(md):
    if hasattr(md, "packages_distributions"):
        found = md.packages_distributions()
    else:
        found = {}
        for d in md.distributions():
            for module in (d.read_text("top_level.txt") or "").split():
                found.setdefault(module, []).append(d.metadata["Name"])
    return {module: [name for name in names if name] for module, names in found.items()}
"""

_PROBE = (
    _DISTRIBUTIONS
    + r"""
import importlib.metadata as md, importlib.util as iu, json, os, re, sys
dists = _gpubench_dists(md)
out = {}


def version(name):
    try:
        return md.version(name)
    except md.PackageNotFoundError:
        return None


for key, mod in json.loads(sys.argv[1]).items():
    try:
        spec = iu.find_spec(mod)
    except (ImportError, ValueError):
        continue
    if spec is None:
        continue
    out[key] = next(filter(None, map(version, dists.get(mod) or [mod])), None)
    if mod == "torch" and spec.origin:
        try:
            text = open(os.path.join(os.path.dirname(spec.origin), "version.py")).read()
            m = re.search(r"^cuda\s*(?::[^=]*)?=\s*['\"]([^'\"]+)['\"]", text, re.M)
            out["torch_cuda_build"] = m.group(1) if m else None
        except OSError:
            pass
print(json.dumps(out))
"""
)


def job_frameworks(env: dict, cwd: str | None = None) -> tuple[dict, str | None]:
    """({software key: version}, interpreter) for the frameworks the job's `python3` can import; ({}, None)
    without an interpreter, ({}, python) when it fails."""
    path = env.get("PATH", os.defpath)
    python = shutil.which("python3", path=path) or shutil.which("python", path=path)
    if python is None:
        return {}, None
    try:
        done = subprocess.run(
            [python, "-c", _PROBE, json.dumps(FRAMEWORKS)],
            env=env,
            cwd=cwd,
            capture_output=True,
            text=True,
            timeout=TIMEOUT_SECONDS,
            stdin=subprocess.DEVNULL,
        )
        found = json.loads(done.stdout) if done.returncode == 0 else None
    except (OSError, subprocess.SubprocessError, ValueError):
        found = None
    if not isinstance(found, dict):
        return {}, python
    return {k: v for k, v in found.items() if v is None or isinstance(v, str)}, python


FILE_ENV = "GPUBENCH_IMPORTS_FILE"

# Runs at the start of every Python process of the job: standard library only, never raises.
SITECUSTOMIZE = (
    '"""gpubench: note which frameworks this job imports (payload.workloads.imports)."""\n'
    + _DISTRIBUTIONS
    + r'''


def _gpubench_watch():
    import importlib.machinery
    import json
    import os
    import sys

    out = os.environ.get("GPUBENCH_IMPORTS_FILE")
    here = os.path.dirname(os.path.abspath(__file__))
    watched = json.loads(os.environ.get("GPUBENCH_IMPORTS_WATCH", "{}"))

    def note(record):
        try:
            with open(out, "a", encoding="utf-8") as f:
                f.write(json.dumps(record) + "\n")
        except OSError:
            pass

    def version(module):
        try:
            import importlib.metadata as md

            for dist in _gpubench_dists(md).get(module) or [module]:
                try:
                    return md.version(dist)
                except md.PackageNotFoundError:
                    continue
        except Exception:  # noqa: BLE001 - a broken metadata tree must not break the job
            return None
        return None

    class Watch:
        """Notes a framework when its first submodule is looked up: only a real import of the
        package does that (a bare importlib.util.find_spec("tensorflow") probe does not)."""

        seen = set()

        def find_spec(self, name, path=None, target=None):
            top, dot, _ = name.partition(".")
            if dot and top in watched and top not in self.seen:
                self.seen.add(top)
                origin = getattr(sys.modules.get(top), "__file__", None)
                note({"module": top, "key": watched[top], "version": version(top), "origin": origin})
            return None

    if out:
        note({"python": sys.executable, "python_version": "%d.%d.%d" % sys.version_info[:3], "pid": os.getpid()})
        sys.meta_path.insert(0, Watch())
    # the job's own sitecustomize, if it has one, runs as it would have
    others = [p for p in sys.path if os.path.abspath(p or ".") != here]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", others)
    if spec is not None and spec.loader is not None:
        import importlib.util

        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)


try:
    _gpubench_watch()
except Exception:  # noqa: BLE001 - never stop the job over bookkeeping
    pass
del _gpubench_watch
'''
)


class ImportRecord(NamedTuple):
    """What the watch saw: the job's interpreters (none: no Python ran with the watch) and the frameworks
    imported ({software key: version})."""

    pythons: list[dict]
    frameworks: dict[str, str | None]


class ImportWatch:
    """The sitecustomize directory (a new temporary one) and the record file of one run's job."""

    def __init__(self):
        self.folder = Path(tempfile.mkdtemp(prefix="gpubench-imports-"))
        self.record = self.folder / "imports.jsonl"
        (self.folder / "sitecustomize.py").write_text(SITECUSTOMIZE, encoding="utf-8")

    def environment(self, env: dict) -> dict:
        """`env` with the watch on: our directory first on PYTHONPATH, the record file and the watched modules."""
        path = env.get("PYTHONPATH")
        return {
            **env,
            "PYTHONPATH": str(self.folder) + (os.pathsep + path if path else ""),
            FILE_ENV: str(self.record),
            "GPUBENCH_IMPORTS_WATCH": json.dumps({module: key for key, module in FRAMEWORKS.items()}),
        }


def read_imports(path: Path) -> ImportRecord:
    """The record file as an ImportRecord (empty when the job started no watched Python)."""
    pythons: list[dict] = []
    frameworks: dict[str, str | None] = {}
    try:
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        lines = []
    for line in lines:
        try:
            entry = json.loads(line)
        except ValueError:
            continue  # a line cut short by a kill
        if not isinstance(entry, dict):
            continue
        if "python" in entry:
            pythons.append(entry)
        elif entry.get("key") in FRAMEWORKS:
            frameworks.setdefault(entry["key"], entry.get("version"))
    return ImportRecord(pythons, frameworks)
