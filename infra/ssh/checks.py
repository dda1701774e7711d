"""Host checks: does the box have what the chosen runtime needs?

Each check is one small remote command and a parser; the table of checks per
runtime decides which ones run and which are required. A failed required check
stops the run before anything is started, with the fix in the message.
"""

from __future__ import annotations

import json
import shlex
from dataclasses import asdict, dataclass

from infra.ssh.config import SshStack
from infra.ssh.connection import run

MIN_PYTHON = (3, 10)
GPU_QUERY = "nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader"


@dataclass
class Check:
    """One finding; `ok=False` with `required=True` blocks the run."""

    name: str
    ok: bool
    required: bool
    detail: str
    fix: str = ""
    found: int | None = None  # how many of the thing were found (GPUs), where that matters

    def line(self) -> str:
        mark = "ok     " if self.ok else ("MISSING" if self.required else "warning")
        fix = f"\n          fix: {self.fix}" if (self.fix and not self.ok) else ""
        return f"  {mark} {self.name}: {self.detail}{fix}"

    def as_dict(self) -> dict:
        return asdict(self)


def _sh(conn, command: str):
    return run(conn, command, check=False, timeout=60)


def check_tools(conn, cfg: SshStack) -> Check:
    wanted = ("sh", "setsid", "nohup", "tail", "tar", "kill")
    r = _sh(conn, "for t in " + " ".join(wanted) + "; do command -v $t >/dev/null 2>&1 || echo $t; done")
    missing = r.stdout.split()
    return Check(
        "tools",
        not missing,
        True,
        "setsid, nohup, tar present" if not missing else f"not found: {', '.join(missing)}",
        "install coreutils, util-linux and tar on the host",
    )


def check_gpus(conn, cfg: SshStack) -> Check:
    r = _sh(conn, GPU_QUERY)
    required = cfg.expect_gpu
    if r.exited != 0:
        why = (
            "nvidia-smi not found" if r.exited == 127 else f"nvidia-smi failed: {(r.stderr or r.stdout).strip()[:200]}"
        )
        return Check(
            "gpu",
            False,
            required,
            why + (" (gpubench:expectGpu is true)" if required else "; the run will use the CPU"),
            "install the NVIDIA driver (it ships nvidia-smi), or set gpubench:expectGpu: false to benchmark the CPU",
            found=0,
        )
    gpus = [[p.strip() for p in line.split(",")] for line in r.stdout.strip().splitlines() if line.strip()]
    if not gpus:
        return Check(
            "gpu", False, required, "nvidia-smi lists no GPU", "check the driver with `nvidia-smi -L`", found=0
        )
    detail = f"{len(gpus)} x {gpus[0][0]} ({gpus[0][1] if len(gpus[0]) > 1 else '?'}), driver {gpus[0][2] if len(gpus[0]) > 2 else '?'}"
    if cfg.gpu_count and len(gpus) < cfg.gpu_count:
        return Check(
            "gpu",
            False,
            False,
            detail + f"; the catalog row has {cfg.gpu_count} x {cfg.gpu_model}",
            "results are recorded with the GPUs actually found; check the offering id",
            found=len(gpus),
        )
    return Check("gpu", True, required, detail, found=len(gpus))


def check_docker(conn, cfg: SshStack) -> tuple[Check, list[str]]:
    """Docker reachable by this user; also returns its registered runtimes for the toolkit check."""
    r = _sh(conn, "docker info --format '{{json .Runtimes}}'")
    if r.exited == 127:
        return Check(
            "docker",
            False,
            True,
            "docker not found",
            "install Docker Engine (https://docs.docker.com/engine/install/) or use --runtime venv",
        ), []
    if r.exited != 0:
        return Check(
            "docker",
            False,
            True,
            f"docker info failed: {(r.stderr or r.stdout).strip()[:200]}",
            f"start the daemon and let {cfg.user or 'the SSH user'} use it (`usermod -aG docker USER`), or use --runtime venv",
        ), []
    try:
        runtimes = sorted(json.loads(r.stdout.strip() or "{}"))
    except ValueError:
        runtimes = []
    return Check("docker", True, True, f"daemon reachable, runtimes: {', '.join(runtimes) or '?'}"), runtimes


def check_nvidia_toolkit(conn, cfg: SshStack, runtimes: list[str]) -> Check:
    r = _sh(conn, "nvidia-ctk --version")
    version = r.stdout.strip().splitlines()[0] if r.exited == 0 and r.stdout.strip() else None
    ok = bool(version) or "nvidia" in runtimes
    detail = version or (
        "nvidia runtime registered with docker" if ok else "nvidia-ctk not found and docker has no nvidia runtime"
    )
    return Check(
        "nvidia-container-toolkit",
        ok,
        cfg.expect_gpu,
        detail,
        "install nvidia-container-toolkit and run `sudo nvidia-ctk runtime configure --runtime=docker && sudo systemctl restart docker`",
    )


def check_python(conn, cfg: SshStack) -> Check:
    py = cfg.remote_python or "python3"
    r = _sh(conn, f"{shlex.quote(py)} -c 'import sys; print(\"%d.%d.%d\" % sys.version_info[:3])'")
    where = "gpubench:remotePython / --python" if cfg.remote_python else "python3"
    if r.exited != 0:
        why = "not found" if r.exited == 127 else f"failed: {(r.stderr or r.stdout).strip()[:200]}"
        return Check(
            "python",
            False,
            True,
            f"{py} {why}",
            f"install Python >= {MIN_PYTHON[0]}.{MIN_PYTHON[1]} (apt install python3 python3-venv) or fix {where}",
        )
    version = r.stdout.strip()
    parts = tuple(int(x) for x in version.split(".")[:2])
    ok = parts >= MIN_PYTHON
    return Check(
        "python",
        ok,
        True,
        f"{py} {version}" + ("" if ok else f" is older than {MIN_PYTHON[0]}.{MIN_PYTHON[1]}"),
        f"install Python >= {MIN_PYTHON[0]}.{MIN_PYTHON[1]} or point {where} at one",
    )


def check_venv(conn, cfg: SshStack) -> Check:
    r = _sh(conn, "python3 -c 'import venv, ensurepip'")
    return Check(
        "venv",
        r.exited == 0,
        True,
        "python3 -m venv available" if r.exited == 0 else "python3 has no venv/ensurepip module",
        "apt install python3-venv (or set gpubench:remotePython to an interpreter that has TensorFlow)",
    )


def run_checks(conn, cfg: SshStack) -> list[Check]:
    """Every check the runtime needs, in order."""
    checks = [check_tools(conn, cfg), check_gpus(conn, cfg)]
    if cfg.runtime == "docker":
        docker, runtimes = check_docker(conn, cfg)
        checks.append(docker)
        if docker.ok:
            checks.append(check_nvidia_toolkit(conn, cfg, runtimes))
    else:
        py = check_python(conn, cfg)
        checks.append(py)
        if py.ok and not cfg.remote_python:
            checks.append(check_venv(conn, cfg))
    return checks


def blocking(checks: list[Check]) -> list[Check]:
    return [c for c in checks if c.required and not c.ok]
