"""The job's own Python: a virtual environment per task, so `setup` never installs into gpubench's
(docs/workloads.md, "The job's Python"). Made in a temporary folder and renamed into place under a lock
`setup` also holds; `payload` alone is importable, through a `.pth` to a folder holding only a link to it."""

from __future__ import annotations

import contextlib
import fcntl
import glob
import hashlib
import json
import os
import re
import shutil
import site
import subprocess
import sys
import sysconfig
import time
import zipfile
from dataclasses import dataclass
from pathlib import Path

from payload import proctree
from payload.events import note
from payload.userdirs import user_path

try:
    import ensurepip
except ImportError:  # a distribution that strips it (Debian's python3 without python3-venv)
    ensurepip = None

INHERIT_ENV = "GPUBENCH_JOB_SITE_PACKAGES"
ENVS_ENV = "GPUBENCH_JOB_ENVS"  # where the environments are kept, when not in the cache (an SSH stack's remoteDir)
STALE_DAYS = 30.0
STAMP = ".gpubench-used"
CREATE_TIMEOUT_SECONDS = 120.0


class JobVenvError(RuntimeError):
    """The job's environment could not be made; the message says where and what to do."""


def envs_root() -> Path:
    return user_path(ENVS_ENV, "cache", "envs")


def base_python() -> str:
    """The interpreter a new environment is made from: the payload's, or the one its own venv was made from."""
    return getattr(sys, "_base_executable", None) or sys.executable


def venv_key(setup: str, env: dict, inherit: bool, python: str | None = None) -> str:
    named = set(re.findall(r"\$\{?([A-Za-z_][A-Za-z0-9_]*)", setup or ""))  # the env variables setup names
    doc = {
        "setup": setup or "",
        "setup_env": {k: env[k] for k in sorted(named) if k in env},
        "python": os.path.realpath(python or base_python()),
        "version": ".".join(map(str, sys.version_info[:3])),
        "inherit": bool(inherit),
    }
    return hashlib.sha256(json.dumps(doc, sort_keys=True).encode()).hexdigest()[:16]


@dataclass
class JobVenv:
    """One task's environment: `prepare()` makes it when missing, `environment(env)` puts it in a job's env."""

    path: Path
    inherit: bool = False

    @classmethod
    def for_task(cls, setup: str, env: dict, root: Path | None = None) -> JobVenv:
        inherit = os.environ.get(INHERIT_ENV, "").strip().lower() in ("1", "true", "yes")
        return cls((root or envs_root()) / f"env-{venv_key(setup, env, inherit)}", inherit)

    @property
    def bin(self) -> Path:
        return self.path / "bin"

    @property
    def python(self) -> Path:
        return self.bin / "python"

    @property
    def lock_path(self) -> Path:
        return _lock_file(self.path)

    @contextlib.contextmanager
    def locked(self):
        """Held while the environment is made and while `setup` installs into it: one writer at a time."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with _lock(self.path, wait=True):
            yield

    def prepare(self) -> bool:
        """Make the environment unless it is there (call with `locked()` held); True when made now."""
        made = not self.python.exists()
        if made:
            self._create()
            remove_stale(self.path.parent, keep=self.path)
        self._link_payload()
        (self.path / STAMP).touch()
        return made

    def _create(self) -> None:
        tmp = self.path.with_name(f"{self.path.name}.tmp-{os.getpid()}")
        shutil.rmtree(tmp, ignore_errors=True)
        uv = shutil.which("uv")  # it needs no venv module: https://docs.astral.sh/uv/reference/cli/#uv-venv
        argv = (
            [uv, "venv", "--quiet", "--python", base_python()]
            if uv
            else [sys.executable, "-m", "venv", "--without-pip"]
        )
        argv.append(str(tmp))
        try:
            done = subprocess.run(
                argv, capture_output=True, text=True, timeout=CREATE_TIMEOUT_SECONDS, stdin=subprocess.DEVNULL
            )
        except (OSError, subprocess.SubprocessError) as exc:
            raise JobVenvError(f"could not create the job's environment at {self.path} ({argv[0]}: {exc})") from None
        if done.returncode != 0:
            shutil.rmtree(tmp, ignore_errors=True)
            why = (done.stderr or done.stdout).strip().splitlines()[-1:] or ["no output"]
            raise JobVenvError(
                f"could not create the job's environment at {self.path}: {' '.join(argv[:3])} said {why[0]!r}; "
                "install the venv module (Debian/Ubuntu: apt install python3-venv) or run the job in an image"
            )
        purelib = site_packages(tmp)
        if not _unpack_pip(purelib, tmp):
            note(
                f"{base_python()} has no bundled pip wheel (ensurepip): the job's environment has no pip; "
                "install it in setup (Debian/Ubuntu: apt install python3-venv gives Python its wheel)"
            )
        if self.inherit:
            lines = [f"import site; site.addsitedir({p!r})" for p in site.getsitepackages() if os.path.isdir(p)]
            (purelib / "gpubench-inherit.pth").write_text("\n".join(lines) + "\n", encoding="utf-8")
        shutil.rmtree(self.path, ignore_errors=True)
        os.rename(tmp, self.path)

    def _link_payload(self) -> None:
        """`payload` importable in the environment, and nothing else of gpubench's (refreshed on every use:
        the payload may have moved since the environment was made)."""
        folder = self.path / "gpubench-payload"
        folder.mkdir(exist_ok=True)
        link = folder / "payload"
        target = Path(__file__).resolve().parents[1]
        if not (link.is_symlink() and os.readlink(link) == str(target)):
            tmp = folder / f".payload-{os.getpid()}"
            with contextlib.suppress(FileNotFoundError):
                tmp.unlink()
            tmp.symlink_to(target, target_is_directory=True)
            os.replace(tmp, link)
        (site_packages(self.path) / "gpubench-payload.pth").write_text(str(folder) + "\n", encoding="utf-8")

    def environment(self, env: dict) -> dict:
        """`env` for a process of the job: this environment's bin first on PATH, as `activate` does."""
        out = {k: v for k, v in env.items() if k != "PYTHONHOME"}
        out["VIRTUAL_ENV"] = str(self.path)
        out["PATH"] = str(self.bin) + os.pathsep + env.get("PATH", os.defpath)
        out["GPUBENCH_PYTHON"] = str(self.python)
        return out


def site_packages(venv: Path) -> Path:
    """The environment's purelib folder (lib/pythonX.Y/site-packages on POSIX)."""
    matches = sorted(glob.glob(str(venv / "lib" / "python*" / "site-packages")))
    if matches:  # the layout venv and uv make on POSIX
        return Path(matches[0])
    found = venv / sysconfig.get_path("purelib", "venv", vars={"base": "", "platbase": ""}).lstrip(os.sep)
    found.mkdir(parents=True, exist_ok=True)
    return found


def _unpack_pip(site: Path, venv: Path) -> bool:
    """pip from the interpreter's bundled wheel (ensurepip's), unpacked: offline and fast. A wheel is a zip
    of what goes into purelib (PEP 427); pip's carries no scripts, so `python -m pip` is the way to call it.
    Without a bundled wheel (a distribution that strips ensurepip) the environment has no pip."""
    wheels = sorted((Path(ensurepip.__file__).parent / "_bundled").glob("pip-*.whl")) if ensurepip else []
    if not wheels:
        return False
    with zipfile.ZipFile(wheels[-1]) as whl:
        whl.extractall(site)
    for name in ("pip", "pip3"):  # commands that run the environment's own pip
        script = venv / "bin" / name
        if not script.exists():
            script.write_text('#!/bin/sh\nexec "$(dirname "$0")/python" -m pip "$@"\n', encoding="utf-8")
            script.chmod(0o755)
    return True


def remove_stale(root: Path, keep: Path, days: float = STALE_DAYS) -> list[Path]:
    """Remove environments not used for `days` and leftovers of a killed creation; never one in use (locked)."""
    removed = []
    cutoff = time.time() - days * 86400
    for path in root.glob("env-*"):
        if path == keep or not path.is_dir():
            continue
        if ".tmp-" in path.name:  # a creation killed half-way, unless its process still runs
            pid = path.name.rsplit("-", 1)[-1]
            if not (pid.isdigit() and proctree.alive(int(pid))):
                shutil.rmtree(path, ignore_errors=True)
                removed.append(path)
            continue
        stamp = path / STAMP
        try:
            used = (stamp if stamp.exists() else path).stat().st_mtime
        except OSError:
            continue
        if used > cutoff:
            continue
        with _lock(path, wait=False) as held:
            if held:  # else a run is using it now
                shutil.rmtree(path, ignore_errors=True)
                removed.append(path)
                with contextlib.suppress(OSError):
                    _lock_file(path).unlink()
    return removed


def _lock_file(env: Path) -> Path:
    return env.with_name(env.name + ".lock")


@contextlib.contextmanager
def _lock(env: Path, wait: bool):
    """The environment's lock held (True), or False when another run holds it and `wait` is false."""
    with open(_lock_file(env), "a+") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:  # another run is making it or running its setup
            if not wait:
                yield False
                return
            note(f"waiting for another run's setup in {env}")
            fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield True
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
