"""A packaged install (a wheel, not the checkout) carries its own files and works from anywhere.

The wheel is built from this checkout and installed with --no-deps into a folder of its own;
the commands then run from a directory outside the checkout with only that folder on
PYTHONPATH (the libraries come from the test's interpreter), so any file the code looks up
beside itself must be inside the wheel.
"""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
# One command per use of the project's own files: a stack file (cost, plan), the Pulumi program
# rendered with its templates (preview), the matrix (stacks).
COMMANDS = {
    "cost": (["cost", "aws-p3-8x", "--hours", "2"], "aws/p3.8xlarge"),
    "plan": (["plan", "aws-g4dn-1x"], "aws-g4dn-1x"),
    "preview": (["preview", "aws-g4dn-1x"], "gpubench-payload.service"),
    "stacks": (["stacks", "--list"], "aws-g4dn-1x-spot"),
}
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Path:
    """The wheel of this checkout, installed (no dependencies) into a folder of its own."""
    base = tmp_path_factory.mktemp("packaged")
    wheels, target = base / "wheels", base / "site"
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "--quiet"]
    build = [*pip, "wheel", "--no-deps", "--no-build-isolation", "--wheel-dir", str(wheels), str(ROOT)]
    subprocess.run(build, check=True, cwd=base, timeout=300)
    (wheel,) = wheels.glob("gpubench-*.whl")
    subprocess.run([*pip, "install", "--no-deps", "--target", str(target), str(wheel)], check=True, timeout=300)
    return target


def test_the_wheel_carries_stacks_examples_schedules_catalog_and_templates(installed):
    (wheel,) = installed.parent.joinpath("wheels").glob("gpubench-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    for tracked in subprocess.run(
        ["git", "ls-files", "stacks", "examples", "schedules", "Pulumi.yaml"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split():
        assert f"infra/project/{tracked}" in names, f"{tracked} is not in the wheel"
    packaged = subprocess.run(
        ["git", "ls-files", "infra", "payload", "analysis"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.split()
    left_out = [p for p in packaged if p not in names and not p.endswith("README.md")]
    assert not left_out, f"package files missing from the wheel (pyproject.toml package-data): {left_out}"


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_commands_work_from_another_directory(installed, tmp_path, command):
    argv, expected = COMMANDS[command]
    env = {**os.environ, "PYTHONPATH": str(installed)}
    env.pop("GPUBENCH_TABLE", None)
    done = subprocess.run(
        [sys.executable, "-m", "analysis", *argv],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert expected in done.stdout, done.stdout[-2000:]
    assert "Traceback" not in done.stderr
    assert str(ROOT) not in done.stdout + done.stderr  # nothing was read from the checkout


def test_the_installed_code_finds_its_files_inside_the_package(installed, tmp_path):
    probe = "import infra.stacks as s, infra.projectfiles as p; print(s.STACKS_DIR); print(p.project_root())"
    done = subprocess.run(
        [sys.executable, "-c", probe],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(installed)},
        capture_output=True,
        text=True,
        check=True,
    )
    stacks_dir, root = done.stdout.split()
    assert Path(stacks_dir) == installed / "infra" / "project" / "stacks"
    assert Path(root) == installed / "infra" / "project" and (Path(root) / "Pulumi.yaml").is_file()
