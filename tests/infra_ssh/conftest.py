"""A real OpenSSH server on loopback for the SSH-stack tests (reusable).

``sshd`` (session scope, one per xdist worker): Debian's ``/usr/sbin/sshd``
started as the current user with a throwaway host key and client key made by
``ssh-keygen`` in a temp dir, key-only auth, ``internal-sftp``. Under
``CI=true`` a missing sshd or ssh-keygen fails the tests instead of skipping.

``sshd_with_path``: a factory for an extra server whose sessions put a
directory of fake tools first on PATH (a host with Docker, or without tools).

``own_known_hosts`` (autouse): gpubench records host keys in a per-test file.

``ssh_stack``: writes ``Pulumi.<name>.yaml`` for an SSH stack pointing at that
server into a temp stacks dir and returns ``(name, stacks_dir)``.

The server helpers (``start_sshd``, ``SshServer``) are in ``sshd_server.py``.
"""

from __future__ import annotations

import sys
import uuid
from pathlib import Path

import pytest
import yaml
from sshd_server import SshServer, start_sshd

# The "remote" interpreter is the one running the tests: it has TensorFlow, so no venv is built.
REMOTE_PYTHON = sys.executable


@pytest.fixture(autouse=True)
def own_known_hosts(tmp_path, monkeypatch):
    """Each test records host keys in its own file: the throwaway servers never touch the user's."""
    path = tmp_path / "known_hosts"
    monkeypatch.setenv("GPUBENCH_KNOWN_HOSTS", str(path))
    return path


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
            "remotePython": REMOTE_PYTHON,
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
