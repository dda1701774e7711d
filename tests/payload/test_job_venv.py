"""A job's environment is its own: `setup` and `run` use a virtual environment of the task's (made once,
reused), so what setup installs never lands in the interpreter gpubench runs under."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import pytest
import yaml

from payload.workloads.jobvenv import INHERIT_ENV, STAMP, JobVenv, envs_root, remove_stale, venv_key

REPO = Path(__file__).resolve().parents[2]


def tiny_wheel(folder: Path, name: str = "gpubenchtinyjobpkg") -> Path:
    """A pure-Python wheel built by hand (PEP 427): pip installs it offline, with no build step."""
    files = {
        f"{name}/__init__.py": b"VALUE = 42\n",
        f"{name}-0.1.dist-info/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: 0.1\n".encode(),
        f"{name}-0.1.dist-info/WHEEL": b"Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }

    def digest(data: bytes) -> str:
        return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()

    record = "".join(f"{p},{digest(d)},{len(d)}\n" for p, d in files.items()) + f"{name}-0.1.dist-info/RECORD,,\n"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}-0.1-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as whl:
        for p, d in files.items():
            whl.writestr(p, d)
        whl.writestr(f"{name}-0.1.dist-info/RECORD", record)
    return path


def freeze() -> str:
    done = subprocess.run(
        [sys.executable, "-m", "pip", "freeze", "--all"], capture_output=True, text=True, check=True, timeout=120
    )
    return done.stdout


def test_a_local_bench_whose_setup_installs_a_package_leaves_gpubenchs_environment_unchanged(tmp_path):
    wheel = tiny_wheel(tmp_path / "wheels")
    job = tmp_path / "task"
    job.mkdir()
    (job / "job.py").write_text(
        "import json, time, gpubenchtinyjobpkg as t\n"
        "for i in range(1, 400):\n"
        "    time.sleep(0.02)\n"
        "    print('GPUBENCH_METRICS ' + json.dumps({'samples': 100 * i, 'seconds': 0.02 * i, 'from': t.__file__}),"
        " flush=True)\n"
    )
    doc = {
        "name": "installs",
        "workdir": ".",
        "setup": f"python -m pip install --quiet --no-index --no-deps {wheel}",
        "run": "python job.py",
        "metrics": ["json"],
        "resources": {"accelerators": ["T4:1"]},
        "work": {"samples": 100000},
    }
    (job / "task.yaml").write_text(yaml.safe_dump(doc))
    before = freeze()
    argv = [sys.executable, "-m", "analysis", "bench", str(job / "task.yaml"), "--local", "--yes", "--json"]
    argv += ["--probe-minutes", "1", "--results", str(tmp_path / "results"), "--project-dir", str(tmp_path)]
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=300, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert freeze() == before  # nothing installed into (or removed from) gpubench's interpreter
    assert "gpubenchtinyjobpkg" not in before
    (result,) = (tmp_path / "results" / "runs").glob("*/*/result.json")
    where = json.loads(result.read_text())["benchmark"]["workload"]["reported"]["json"]["from"]
    assert Path(where).is_relative_to(envs_root())  # the job imported it from the task's environment


def test_the_environment_is_made_once_and_reused(tmp_path):
    venv = JobVenv.for_task("pip install x", {}, root=tmp_path)
    with venv.locked():
        assert venv.prepare() is True
        first = venv.python.stat().st_ino
        assert venv.prepare() is False and venv.python.stat().st_ino == first
    assert (venv.path / STAMP).exists()
    done = subprocess.run([str(venv.python), "-m", "pip", "--version"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and str(venv.path) in done.stdout  # its own pip, installing into it


def test_the_key_follows_what_builds_the_environment():
    env = {"TORCH_VERSION": "2.13.0", "EPOCHS": "3"}
    setup = 'pip install "torch==$TORCH_VERSION"'
    key = venv_key(setup, env, False)
    assert venv_key(setup, {**env, "EPOCHS": "1"}, False) == key  # run settings do not make a new environment
    assert venv_key(setup, {**env, "TORCH_VERSION": "2.14.1"}, False) != key  # what setup reads does
    assert venv_key(setup + " numpy", env, False) != key
    assert venv_key(setup, env, True) != key  # one that sees gpubench's packages is another environment


def test_the_job_sees_gpubenchs_packages_only_when_asked(tmp_path, monkeypatch):
    probe = "import importlib.util as u, sys; sys.exit(u.find_spec('yaml') is None)"  # installed beside gpubench
    for inherit, found in (("", False), ("1", True)):
        monkeypatch.setenv(INHERIT_ENV, inherit)
        venv = JobVenv.for_task("", {}, root=tmp_path)
        with venv.locked():
            venv.prepare()
        env = venv.environment({k: v for k, v in os.environ.items() if k != "PYTHONPATH"})
        done = subprocess.run(["python", "-c", probe], env=env, timeout=60)
        assert (done.returncode == 0) is found
    # the payload itself is importable (a study's `python -m payload.benchmarks`), without PYTHONPATH
    done = subprocess.run(
        ["python", "-c", "import payload; print(payload.__file__)"], env=env, capture_output=True, text=True
    )
    assert done.returncode == 0 and Path(done.stdout.strip()).resolve() == (REPO / "payload" / "__init__.py")


def test_stale_environments_and_killed_creations_are_removed(tmp_path):
    old, fresh, keep = (tmp_path / f"env-{n}" for n in ("old", "fresh", "keep"))
    for path in (old, fresh, keep):
        path.mkdir()
        (path / STAMP).touch()
    long_ago = time.time() - 60 * 86400
    os.utime(old / STAMP, (long_ago, long_ago))
    leftover = tmp_path / "env-x.tmp-999999999"  # no such process
    leftover.mkdir()
    removed = remove_stale(tmp_path, keep=keep)
    assert sorted(removed) == sorted([old, leftover])
    assert fresh.is_dir() and keep.is_dir() and not old.exists() and not leftover.exists()


def test_a_second_run_waits_for_the_first_ones_setup_and_says_so(tmp_path, capsys):
    import fcntl
    import threading

    venv = JobVenv.for_task("pip install x", {}, root=tmp_path)
    entered = threading.Event()

    def second():
        with venv.locked():
            entered.set()

    with venv.locked():
        thread = threading.Thread(target=second)
        thread.start()
        assert not entered.wait(0.3)  # held by the first
        with open(venv.lock_path) as handle:  # the lock is a real file lock, as another process sees it
            with pytest.raises(OSError):
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    thread.join(10)
    assert entered.is_set() and "waiting for another run's setup" in capsys.readouterr().err


def test_uv_makes_the_environment_when_it_is_on_path(tmp_path, monkeypatch):
    """A stand-in `uv` records how it is called (https://docs.astral.sh/uv/reference/cli/#uv-venv) and makes the
    environment as `uv venv` would, without pip: pip is unpacked afterwards, as with the standard library's venv."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    calls = tmp_path / "uv-calls"
    (bin_dir / "uv").write_text(
        f'#!/bin/sh\necho "$@" >> {calls}\nfor last; do :; done\nexec {sys.executable} -m venv --without-pip "$last"\n'
    )
    (bin_dir / "uv").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    venv = JobVenv.for_task("", {}, root=tmp_path / "envs")
    with venv.locked():
        assert venv.prepare() is True
    (call,) = calls.read_text().splitlines()
    words = call.split()
    assert words[0] == "venv" and words[words.index("--python") + 1] == getattr(sys, "_base_executable", sys.executable)
    assert ".tmp-" in words[-1]  # made aside, then renamed into place
    done = subprocess.run([str(venv.python), "-m", "pip", "--version"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and str(venv.path) in done.stdout
