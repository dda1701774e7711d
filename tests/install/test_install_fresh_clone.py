"""A newcomer's install: a fresh clone, `make setup-demo` (the `demo` extra only), then the demo.

Clones this repository into a temporary directory, lets its Makefile build .venv with only
gpubench[demo] (pip's own configuration: the package index or a warm cache), and checks that
nothing the demo never imports was installed, that TensorFlow imports without jax, and that a
quick demo run writes its report. A TensorFlow install takes minutes on two cores, so this runs
when GPUBENCH_INSTALL_TEST=1: `.ci/run` runs it as its own step after `make test`;
tests/install/test_install_extras.py checks the extra's list on every run.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from test_install_extras import NOT_FOR_THE_DEMO

ROOT = Path(__file__).resolve().parents[2]
pytestmark = [
    pytest.mark.skipif(
        not os.environ.get("GPUBENCH_INSTALL_TEST"),
        reason="installs TensorFlow into a fresh venv (minutes): .ci/run runs it as its own step "
        "(GPUBENCH_INSTALL_TEST=1), outside the suite's time budget",
    ),
]


def run(argv: list[str], cwd: Path, timeout: float) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GPUBENCH_", "PYTHONPATH", "VIRTUAL_ENV"))}
    done = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, (
        f"{' '.join(argv)}: exit {done.returncode}\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    )
    return done


def test_fresh_clone_installs_only_the_demo_extra_and_runs_the_demo(tmp_path):
    clone = tmp_path / "gpubench"
    run(["git", "clone", "--quiet", str(ROOT), str(clone)], tmp_path, 120)
    setup = run(["make", "setup-demo", f"PYTHON={sys.executable}"], clone, 1200)
    assert "[setup] installing gpubench[demo]" in setup.stdout and (clone / ".venv" / ".installed-demo").is_file()
    python = str(clone / ".venv" / "bin" / "python")

    listed = run([python, "-m", "pip", "list", "--format", "json"], clone, 120).stdout
    installed = {p["name"].lower().replace("_", "-") for p in json.loads(listed)}
    assert "tensorflow-cpu" in installed
    assert not installed & set(NOT_FOR_THE_DEMO), sorted(installed & set(NOT_FOR_THE_DEMO))

    probe = "import sys, tensorflow; print(tensorflow.__version__, 'jax' in sys.modules)"
    version, jax_loaded = run([python, "-c", probe], clone, 300).stdout.split()[-2:]
    assert version and jax_loaded == "False"

    run([python, "-m", "analysis", "demo", "--quick", "--only", "mnist-mlp"], clone, 900)
    reports = [p for p in clone.rglob("index.html") if ".venv" not in p.parts]
    assert reports, "the demo wrote no report"
