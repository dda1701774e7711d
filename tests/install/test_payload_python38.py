"""The legacy image's payload: Python 3.8 with the `payload-legacy` extra, installed as its Dockerfile does.

tests/payload/test_python38.py reads the source for what 3.8 cannot parse; this one runs it there:
a 3.8 venv, `infra/install-payload.sh <src> requirements payload-legacy` (the Dockerfile's own
step), then every payload module imported and `python -m payload --version` and `list --json`.
pydantic evaluates the models' annotations at import, which a source scan cannot see. pip
downloads the extra's wheels (about a minute), so this runs with the install tests
(GPUBENCH_INSTALL_TEST=1, a step of `.ci/run`); there a missing Python 3.8 is a failure.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from legacy_python import require_python38

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.skipif(
    not os.environ.get("GPUBENCH_INSTALL_TEST"),
    reason="installs the payload-legacy extra into a Python 3.8 venv (a minute): .ci/run runs it "
    "(GPUBENCH_INSTALL_TEST=1), outside the suite's time budget",
)
IMPORT_ALL = """
import importlib, pathlib, sys
root = pathlib.Path(sys.argv[1])
bad = []
for f in sorted((root / "payload").rglob("*.py")):
    parts = list(f.relative_to(root).with_suffix("").parts)
    name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
    try:
        importlib.import_module(name)
    except Exception as exc:  # every module, each failure named
        bad.append("%s: %s: %s" % (name, type(exc).__name__, str(exc)[:300]))
print("\\n".join(bad))
sys.exit(1 if bad else 0)
"""


def run(argv: list[str], env: dict[str, str], timeout: float) -> str:
    done = subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, (
        f"{' '.join(argv)}: exit {done.returncode}\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    )
    return done.stdout


def test_the_payload_installs_imports_and_runs_on_python_3_8(tmp_path):
    interpreter = require_python38()
    venv = tmp_path / "py38"
    subprocess.run([interpreter, "-m", "venv", str(venv)], check=True, timeout=120)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GPUBENCH_", "PYTHONPATH", "VIRTUAL_ENV"))}
    env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env['PATH']}"  # install-payload.sh runs `python3`
    run(["bash", "infra/install-payload.sh", str(ROOT), "requirements", "payload-legacy"], env, 900)
    py = str(venv / "bin" / "python")
    assert run([py, "-c", "import sys; print(sys.version_info[:2])"], env, 60).strip() == "(3, 8)"
    run([py, "-c", IMPORT_ALL, str(ROOT)], env, 300)
    assert run([py, "-m", "payload", "--version"], env, 120).strip()
    names = {b["name"] for b in json.loads(run([py, "-m", "payload", "list", "--json"], env, 120))}
    assert {"mnist-cnn", "resnet50"} <= names
