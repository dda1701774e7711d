"""Bench test fixtures: an SSH host stack on the loopback sshd, for the bench tests that probe over SSH."""

from __future__ import annotations

import sys
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml


@dataclass(frozen=True)
class SshBenchHost:
    """A stack file naming a loopback sshd host; its runs land in `bucket` (file://)."""

    name: str
    stacks: Path
    bucket: Path


@pytest.fixture
def ssh_host(tmp_path) -> Iterator[SshBenchHost]:
    """stacks/Pulumi.<name>.yaml under tmp_path for a venv-runtime SSH host (this machine's Python) on a
    loopback sshd that stops after the test; the probe runs the task's job, not the stack's benchmark."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "infra_ssh"))
    from sshd_server import start_sshd

    server = start_sshd(tmp_path / "sshd")
    name = f"ssh-bench-{uuid.uuid4().hex[:6]}"
    config = {
        "offering": "hetzner/ex51-ssd-gpu",
        "host": server.host,
        "port": server.port,
        "user": server.user,
        "identityFile": server.client_key,
        "results": f"file://{tmp_path / 'bucket'}",
        "runtime": "venv",
        "remotePython": sys.executable,
        "remoteDir": str(tmp_path / "remote"),
        "expectGpu": False,
        "benchmark": "mnist-mlp",
    }
    stacks = tmp_path / "stacks"
    stacks.mkdir()
    doc = {"config": {f"gpubench:{k}": v for k, v in config.items()}}
    (stacks / f"Pulumi.{name}.yaml").write_text(yaml.safe_dump(doc))
    yield SshBenchHost(name, stacks, tmp_path / "bucket")
    server.stop()
