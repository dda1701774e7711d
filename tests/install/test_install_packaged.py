"""A packaged install (a wheel, not the checkout) carries its own files and works from anywhere.

The wheel is built from this checkout and installed with --no-deps into a folder of its own;
the commands then run from a directory outside the checkout with only that folder on
PYTHONPATH (the libraries come from the test's interpreter), so any file the code looks up
beside itself must be inside the wheel.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
# One command per use of the project's own files: a stack file (cost, plan), the Pulumi program
# rendered with its templates (preview), the matrix (stacks).
COMMANDS = {
    "cost": (["cost", "aws-p3-8x", "--hours", "2"], "aws/p3.8xlarge"),
    "plan": (["plan", "aws-g4dn-1x"], "aws-g4dn-1x"),
    "preview": (["preview", "aws-g4dn-1x"], "gpubench-payload.service"),
    "stacks": (["stacks", "--list"], "aws-g4dn-1x-spot"),
}


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Path:
    """The wheel of this checkout, installed (no dependencies) into a folder of its own.

    Built from a copy: setuptools builds in the source tree's build/ and never empties it, so a
    module deleted since an earlier build would ship again, and the checkout would gain a build/."""
    base = tmp_path_factory.mktemp("packaged")
    wheels, target, source = base / "wheels", base / "site", base / "source"
    skip = shutil.ignore_patterns(
        ".git", ".venv*", "build", "dist", "*.egg-info", "__pycache__", ".*cache*", ".gpubench"
    )
    shutil.copytree(ROOT, source, ignore=skip)
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "--quiet"]
    build = [*pip, "wheel", "--no-deps", "--no-build-isolation", "--wheel-dir", str(wheels), str(source)]
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
    done = gpubench(argv, tmp_path, env)  # no traceback
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert expected in done.stdout, done.stdout[-2000:]
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


def installed_env(installed: Path, tmp_path: Path, **more: str) -> dict[str, str]:
    """Only the install on PYTHONPATH, a state home of the test's own, and no Pulumi CLI on PATH."""
    path = [d for d in os.environ.get("PATH", "").split(os.pathsep) if d and not (Path(d) / "pulumi").exists()]
    env = {k: v for k, v in os.environ.items() if not k.startswith("GPUBENCH_")}
    return {
        **env,
        "PYTHONPATH": str(installed),
        "PATH": os.pathsep.join(path),
        "GPUBENCH_HOME": str(tmp_path / "home"),
        **more,
    }


def gpubench(argv: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess:
    cwd.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(
        [sys.executable, "-m", "analysis", *argv],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        stdin=subprocess.DEVNULL,
    )
    assert "Traceback" not in done.stderr, done.stderr[-3000:]
    return done


def package_files(installed: Path) -> set[Path]:
    return {p for p in installed.rglob("*") if p.is_file() and "__pycache__" not in p.parts}


def test_the_installed_copy_builds_the_same_code_bundle_as_the_checkout(installed, tmp_path):
    from infra.bundle import build_bundle

    probe = "import infra.bundle as b; x = b.build_bundle(); print(b.__file__, x.sha256, x.digest, x.files)"
    done = subprocess.run(
        [sys.executable, "-c", probe],
        cwd=tmp_path,
        env=installed_env(installed, tmp_path),
        capture_output=True,
        text=True,
        check=True,
    )
    module, sha256, digest, files = done.stdout.split()
    assert Path(module).is_relative_to(installed)  # built from site-packages, not from the checkout
    checkout = build_bundle(ROOT)
    assert (sha256, digest, int(files)) == (checkout.sha256, checkout.digest, checkout.files)


def test_bench_from_an_empty_directory_names_what_it_misses_before_anything_starts(installed, tmp_path):
    """No Pulumi CLI, no AWS credentials: both named before the question, and nothing is written anywhere
    (no bench workspace, nothing where the command ran, nothing in the package); no request is sent."""
    from payload import exitcodes

    before = package_files(installed)
    none = str(tmp_path / "none")
    env = installed_env(installed, tmp_path, GPUBENCH_RESULTS="s3://gpubench-install-check")
    env = {k: v for k, v in env.items() if k not in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_PROFILE")}
    env |= {"AWS_SHARED_CREDENTIALS_FILE": none, "AWS_CONFIG_FILE": none, "AWS_EC2_METADATA_DISABLED": "true"}
    argv = ["bench", "examples/keras-mnist/workload.yaml", "--gpus", "T4", "--yes", "--json"]
    done = gpubench(argv, tmp_path / "empty", env)
    assert done.returncode == exitcodes.MISSING, done.stderr[-3000:]
    assert "pulumi CLI: not on PATH" in done.stderr and "get.pulumi.com" in done.stderr
    assert "aws credentials: none found" in done.stderr and "nothing was asked and nothing started" in done.stderr
    assert done.stdout == ""
    assert not list((tmp_path / "home").glob("bench/*/bench.json"))  # no workspace: nothing started
    assert list((tmp_path / "empty").iterdir()) == []  # nothing written where the command ran
    assert package_files(installed) == before  # nor inside the installed package


def test_status_and_logs_with_nothing_there(installed, tmp_path):
    from payload import exitcodes

    env = installed_env(installed, tmp_path)
    where = tmp_path / "empty"
    status = gpubench(["status", "--json"], where, env)
    assert (status.returncode, json.loads(status.stdout)) == (exitcodes.OK, [])
    logs = gpubench(["logs", "aws-g4dn-1x"], where, env)
    assert logs.returncode == exitcodes.USAGE and "pass --results URL" in logs.stderr
    logs = gpubench(["logs", "aws-g4dn-1x", "--results", str(tmp_path / "results")], where, env)
    assert logs.returncode == exitcodes.FAILED and "no run of aws-g4dn-1x has a log tail" in logs.stderr


def package_listing(installed: Path) -> dict[Path, int]:
    """Every file under the install with its modification time in nanoseconds."""
    return {p: p.stat().st_mtime_ns for p in package_files(installed)}


# A stand-in `pulumi` that says what it was given and, like the real CLI creating a stack, adds an
# encryptionsalt to the stack file in the project it runs in.
FAKE_PULUMI = (
    "#!/bin/sh\n"
    'echo "argv: $*"\necho "cwd: $PWD"\necho "python3: $(command -v python3)"\n'
    'echo "encryptionsalt: v1:stand-in" >> "stacks/Pulumi.$3.yaml"\n'
)


def test_up_from_an_empty_directory_runs_pulumi_on_the_users_project_copy(installed, tmp_path):
    """Pulumi runs in <home>/project, whose Pulumi.yaml runs the installed program with this interpreter
    first; the stack file it edits is the copy's, and nothing under the install changes."""
    tools = tmp_path / "bin"
    tools.mkdir()
    fake = tools / "pulumi"
    fake.write_text(FAKE_PULUMI)
    fake.chmod(0o755)
    env = installed_env(installed, tmp_path)
    env["PATH"] = f"{tools}{os.pathsep}{env['PATH']}"
    before = package_listing(installed)
    done = gpubench(["up", "-s", "aws-g4dn-1x", "--yes"], tmp_path / "empty", env)
    assert done.returncode == 0, done.stderr[-3000:]
    lines = dict(line.split(": ", 1) for line in done.stdout.splitlines())
    assert lines["argv"] == "up --stack aws-g4dn-1x --yes"
    project = tmp_path / "home" / "project"
    assert Path(lines["cwd"]) == project
    assert Path(lines["python3"]).parent == Path(sys.executable).parent
    assert f"created your Pulumi project in {project}" in done.stderr
    program = yaml.safe_load((project / "Pulumi.yaml").read_text())
    assert (project / program["main"]).resolve() == installed / "infra" and "virtualenv" not in str(program)
    shipped = installed / "infra" / "project" / "stacks"
    mine = project / "stacks" / "Pulumi.aws-g4dn-1x.yaml"
    assert mine.read_text() == (shipped / mine.name).read_text() + "encryptionsalt: v1:stand-in\n"
    assert sorted(p.name for p in (project / "stacks").iterdir()) == sorted(p.name for p in shipped.iterdir())
    assert package_listing(installed) == before  # nothing under the install was written
    assert list((tmp_path / "empty").iterdir()) == []
    again = gpubench(["up", "-s", "aws-g4dn-1x", "--yes"], tmp_path / "empty", env)
    assert again.returncode == 0 and "created your Pulumi project" not in again.stderr  # said once
    assert mine.read_text().count("encryptionsalt") == 2  # the copy's file is kept, not recopied


def test_stacks_writes_into_the_users_copy_and_an_edited_stack_file_wins(installed, tmp_path):
    env = installed_env(installed, tmp_path)
    before = package_listing(installed)
    project = tmp_path / "home" / "project"
    edited = project / "stacks" / "Pulumi.aws-g4dn-1x.yaml"
    edited.parent.mkdir(parents=True)
    config = yaml.safe_load((installed / "infra" / "project" / "stacks" / edited.name).read_text())
    config["config"]["gpubench:maxHours"] = 0.25
    edited.write_text(yaml.safe_dump(config))
    dropped = project / "stacks" / "Pulumi.aws-g4dn-1x-spot.yaml"
    done = gpubench(["stacks"], tmp_path / "empty", env)
    assert done.returncode == 0, done.stderr[-3000:]
    assert f"wrote {edited.name}" in done.stdout  # regenerated: the generated keys and header put back
    assert dropped.is_file() and (project / "Pulumi.yaml").is_file()
    assert yaml.safe_load(edited.read_text())["config"]["gpubench:maxHours"] == 0.25  # a user key is kept
    check = gpubench(["stacks", "--check"], tmp_path / "empty", env)
    assert check.returncode == 0 and "stacks/ is up to date" in check.stdout, check.stderr[-3000:]
    plan = gpubench(["plan", "aws-g4dn-1x", "--json"], tmp_path / "empty", env)
    assert plan.returncode == 0, plan.stderr[-3000:]
    (planned,) = json.loads(plan.stdout)["stacks"]
    assert planned["max_hours"] == 0.25  # plan read the user's copy, not the shipped file
    assert package_listing(installed) == before
