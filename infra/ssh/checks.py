"""Host checks: does the box have what the chosen runtime needs? A failed required check stops the
run before anything is started, with the fix in the message."""

from __future__ import annotations

import json
import shlex
from dataclasses import dataclass

from infra.ssh.config import SshStack
from infra.ssh.connection import run

MIN_PYTHON = (3, 10)
GPU_QUERY = "nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader"
_PYTHON = f"{MIN_PYTHON[0]}.{MIN_PYTHON[1]}"


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


def _sh(conn, command: str):
    return run(conn, command, check=False, timeout=60)


def _failed(r) -> str:
    return (r.stderr or r.stdout).strip()[:200]


def check_tools(conn, cfg: SshStack) -> Check:
    wanted = "sh setsid nohup tail tar kill"
    missing = _sh(conn, f"for t in {wanted}; do command -v $t >/dev/null 2>&1 || echo $t; done").stdout.split()
    detail = f"not found: {', '.join(missing)}" if missing else "setsid, nohup, tar present"
    return Check("tools", not missing, True, detail, "install coreutils, util-linux and tar on the host")


def check_gpus(conn, cfg: SshStack) -> Check:
    r = _sh(conn, GPU_QUERY)
    required = cfg.expect_gpu
    if r.exited != 0:
        why = "nvidia-smi not found" if r.exited == 127 else f"nvidia-smi failed: {_failed(r)}"
        why += " (gpubench:expectGpu is true)" if required else "; the run will use the CPU"
        fix = "install the NVIDIA driver (it ships nvidia-smi), or set gpubench:expectGpu: false to benchmark the CPU"
        return Check("gpu", False, required, why, fix, found=0)
    gpus = [[p.strip() for p in line.split(",")] + ["?", "?"] for line in r.stdout.strip().splitlines() if line.strip()]
    if not gpus:
        return Check("gpu", False, required, "nvidia-smi lists no GPU", "check the driver with `nvidia-smi -L`", 0)
    detail = f"{len(gpus)} x {gpus[0][0]} ({gpus[0][1]}), driver {gpus[0][2]}"
    if cfg.gpu_count and len(gpus) < cfg.gpu_count:
        detail += f"; the catalog row has {cfg.gpu_count} x {cfg.gpu_model}"
        fix = "results are recorded with the GPUs actually found; check the offering id"
        return Check("gpu", False, False, detail, fix, found=len(gpus))
    return Check("gpu", True, required, detail, found=len(gpus))


def check_docker(conn, cfg: SshStack) -> tuple[Check, list[str]]:
    """Docker reachable by this user; also returns its registered runtimes for the toolkit check."""
    r = _sh(conn, "docker info --format '{{json .Runtimes}}'")
    if r.exited == 127:
        fix = "install Docker Engine (https://docs.docker.com/engine/install/) or use --runtime venv"
        return Check("docker", False, True, "docker not found", fix), []
    if r.exited != 0:
        user = cfg.user or "the SSH user"
        fix = f"start the daemon and let {user} use it (`usermod -aG docker USER`), or use --runtime venv"
        return Check("docker", False, True, f"docker info failed: {_failed(r)}", fix), []
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
    fix = (
        "install nvidia-container-toolkit and run "
        "`sudo nvidia-ctk runtime configure --runtime=docker && sudo systemctl restart docker`"
    )
    return Check("nvidia-container-toolkit", ok, cfg.expect_gpu, detail, fix)


def check_python(conn, cfg: SshStack) -> Check:
    py = cfg.remote_python or "python3"
    r = _sh(conn, f"{shlex.quote(py)} -c 'import sys; print(\"%d.%d.%d\" % sys.version_info[:3])'")
    where = "gpubench:remotePython / --python" if cfg.remote_python else "python3"
    if r.exited != 0:
        why = "not found" if r.exited == 127 else f"failed: {_failed(r)}"
        fix = f"install Python >= {_PYTHON} (apt install python3 python3-venv) or fix {where}"
        return Check("python", False, True, f"{py} {why}", fix)
    version = r.stdout.strip()
    ok = tuple(int(x) for x in version.split(".")[:2]) >= MIN_PYTHON
    detail = f"{py} {version}" + ("" if ok else f" is older than {_PYTHON}")
    return Check("python", ok, True, detail, f"install Python >= {_PYTHON} or point {where} at one")


def check_venv(conn, cfg: SshStack) -> Check:
    ok = _sh(conn, "python3 -c 'import venv, ensurepip'").exited == 0
    detail = "python3 -m venv available" if ok else "python3 has no venv/ensurepip module"
    fix = "apt install python3-venv (or set gpubench:remotePython to an interpreter that has TensorFlow)"
    return Check("venv", ok, True, detail, fix)


def run_checks(conn, cfg: SshStack) -> list[Check]:
    """Every check the runtime needs, in order."""
    checks = [check_tools(conn, cfg), check_gpus(conn, cfg)]
    if cfg.runtime == "docker":
        docker, runtimes = check_docker(conn, cfg)
        checks += [docker, check_nvidia_toolkit(conn, cfg, runtimes)] if docker.ok else [docker]
    else:
        py = check_python(conn, cfg)
        checks += [py, check_venv(conn, cfg)] if py.ok and not cfg.remote_python else [py]
    return checks
