"""A real OpenSSH server on loopback for the SSH-stack tests (reusable).

``sshd`` (session scope, one per xdist worker): Debian's ``/usr/sbin/sshd``
started as the current user with a throwaway host key and client key made by
``ssh-keygen`` in a temp dir, key-only auth, ``internal-sftp``. Under
``CI=true`` a missing sshd or ssh-keygen fails the tests instead of skipping.

``sshd_with_path``: a factory for an extra server whose sessions put a
directory of fake tools first on PATH (a host with Docker, or without tools).

``ssh_stack``: writes ``Pulumi.<name>.yaml`` for an SSH stack pointing at that
server into a temp stacks dir and returns ``(name, stacks_dir)``.
"""

from __future__ import annotations

import getpass
import os
import shutil
import subprocess
import uuid
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from servers import free_port, wait_for_port

SSHD = "/usr/sbin/sshd"
REPO = Path(__file__).resolve().parents[2]
VENV_PYTHON = str(REPO / ".venv" / "bin" / "python") if (REPO / ".venv" / "bin" / "python").exists() else None


def _require(path: str | None, what: str) -> str:
    if path and os.path.exists(path):
        return path
    msg = f"{what} is not installed (apt-get install openssh-server openssh-client)"
    if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
        pytest.fail(msg + "; CI=true so a missing sshd is a failure")
    pytest.skip(msg)


@dataclass
class SshServer:
    host: str
    port: int
    user: str
    client_key: str       # private key in authorized_keys
    other_key: str        # a valid key the server does not accept
    dir: Path
    proc: subprocess.Popen

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()


def _keygen(keygen: str, path: Path) -> None:
    subprocess.run([keygen, "-q", "-t", "ed25519", "-N", "", "-C", "gpubench-test", "-f", str(path)], check=True)


def start_sshd(base: Path, path_prefix: str | None = None) -> SshServer:
    """sshd on a free loopback port; `path_prefix` goes in front of PATH in its sessions (fake tools)."""
    sshd = _require(SSHD if os.path.exists(SSHD) else shutil.which("sshd"), "sshd")
    keygen = _require(shutil.which("ssh-keygen"), "ssh-keygen")
    base.mkdir(parents=True, exist_ok=True)
    for name in ("host_key", "client_key", "other_key"):
        _keygen(keygen, base / name)
    (base / "authorized_keys").write_text((base / "client_key.pub").read_text())
    os.chmod(base / "client_key", 0o600)
    os.chmod(base / "other_key", 0o600)
    if os.geteuid() == 0:  # sshd as root insists on its privilege separation directory
        Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)
    port = free_port()
    config = base / "sshd_config"
    config.write_text("\n".join([
        "ListenAddress 127.0.0.1",
        f"HostKey {base / 'host_key'}",
        f"PidFile {base / 'sshd.pid'}",
        f"AuthorizedKeysFile {base / 'authorized_keys'}",
        "StrictModes no",
        "UsePAM no",
        "PermitRootLogin prohibit-password",
        "PubkeyAuthentication yes",
        "PasswordAuthentication no",
        "KbdInteractiveAuthentication no",
        "Subsystem sftp internal-sftp",
        "MaxSessions 50",
        "MaxStartups 50:30:100",
        "LogLevel ERROR",
        *([f"SetEnv PATH={path_prefix}:/usr/local/bin:/usr/bin:/bin"] if path_prefix else []),
        "",
    ]))
    log = open(base / "sshd.log", "wb")
    proc = subprocess.Popen([sshd, "-D", "-e", "-f", str(config), "-p", str(port)], stdout=log, stderr=subprocess.STDOUT)
    try:
        wait_for_port(port, 20, proc)
    except Exception:
        proc.kill()
        raise RuntimeError(f"sshd did not start: {(base / 'sshd.log').read_text()}") from None
    return SshServer("127.0.0.1", port, getpass.getuser(), str(base / "client_key"), str(base / "other_key"), base, proc)


@pytest.fixture(scope="session")
def sshd(tmp_path_factory):
    server = start_sshd(tmp_path_factory.mktemp("sshd"))
    yield server
    server.stop()


@pytest.fixture
def sshd_with_path(tmp_path):
    """Factory: a separate sshd whose sessions find `bin_dir` first on PATH (fake docker, nvidia-smi)."""
    servers: list[SshServer] = []

    def make(bin_dir: Path) -> SshServer:
        servers.append(start_sshd(tmp_path / f"sshd-{len(servers)}", str(bin_dir)))
        return servers[-1]

    yield make
    for server in servers:
        server.stop()


@pytest.fixture
def ssh_stack(tmp_path, sshd):
    """Factory: write an SSH stack for the loopback sshd; keyword args override/add gpubench keys (None removes)."""
    stacks_dir = tmp_path / "stacks"
    stacks_dir.mkdir()

    def make(name: str | None = None, **keys) -> tuple[str, Path]:
        name = name or f"ssh-test-{uuid.uuid4().hex[:8]}"
        config = {
            "offering": "hetzner/ex51-ssd-gpu",
            "host": sshd.host,
            "port": sshd.port,
            "user": sshd.user,
            "identityFile": sshd.client_key,
            "results": f"file://{tmp_path / 'bucket'}",
            "runtime": "venv",
            "remotePython": VENV_PYTHON or "python3",
            "remoteDir": str(tmp_path / "remote"),
            "expectGpu": False,
            "benchmark": "mnist-mlp",
            "epochs": 1,
            "data": "synthetic",
            "params": {"samples": 256, "val_samples": 128},
        }
        for k, v in keys.items():
            if v is None:
                config.pop(k, None)
            else:
                config[k] = v
        doc = {"config": {f"gpubench:{k}": v for k, v in config.items()}}
        (stacks_dir / f"Pulumi.{name}.yaml").write_text(yaml.safe_dump(doc, sort_keys=False))
        return name, stacks_dir

    return make
