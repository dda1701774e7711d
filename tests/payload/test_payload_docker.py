"""Dockerfile structure (docker cannot build here): pinned GPU base, non-root, entrypoint."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

PAYLOAD = Path(__file__).resolve().parents[2] / "payload"


def instructions(path: Path) -> list[tuple[str, str]]:
    text = re.sub(r"\\\n", " ", path.read_text())
    out = []
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            op, _, rest = line.partition(" ")
            out.append((op.upper(), rest.strip()))
    return out


@pytest.mark.parametrize(
    "name, tag, extra, install",
    [
        ("Dockerfile", r"2\.1[5-9]\.\d+-gpu", "payload", 'pip install --no-cache-dir "/opt/gpubench-src[payload]"'),
        # Python 3.8 cannot build the project (setuptools>=77): the extra's requirements and the sources on sys.path
        (
            "Dockerfile.legacy",
            r"2\.11\.0-gpu",
            "payload-legacy",
            "install-payload.sh /opt/gpubench-src requirements payload-legacy",
        ),
    ],
)
def test_dockerfile_structure(name, tag, extra, install):
    ins = instructions(PAYLOAD / name)
    ops = [op for op, _ in ins]
    froms = [arg for op, arg in ins if op == "FROM"]
    assert len(froms) == 1 and re.fullmatch(rf"tensorflow/tensorflow:{tag}", froms[0]), froms
    users = [arg for op, arg in ins if op == "USER"]
    assert users and users[-1] not in ("root", "0") and ops.index("USER") > ops.index("COPY")
    assert ins[-1] == ("ENTRYPOINT", '["python", "-m", "payload", "run"]')
    env = " ".join(arg for op, arg in ins if op == "ENV")
    assert "GPUBENCH_IMAGE=${GPUBENCH_IMAGE}" in env and "GPUBENCH_SPOOL=" in env
    assert any(op == "ARG" and arg.startswith("GPUBENCH_IMAGE=") for op, arg in ins)
    runs = " ".join(arg for op, arg in ins if op == "RUN")
    assert install in runs  # the extra's pins live in pyproject.toml only
    pip = " ".join(arg for op, arg in ins if op == "RUN" and ("pip install" in arg or "install-payload.sh" in arg))
    for dep in ("boto3", "google-cloud-storage", "jsonschema-rs", "nvidia-ml-py"):
        assert dep not in pip
    import tomllib

    extras = tomllib.loads((PAYLOAD.parent / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    for dep in ("boto3", "google-cloud-storage", "jsonschema-rs", "nvidia-ml-py"):
        assert any(d.startswith(dep) for d in extras[extra]), dep
    assert ("COPY", "payload/ /opt/gpubench-src/payload/") in ins


def test_legacy_image_notes_why_it_exists():
    text = (PAYLOAD / "Dockerfile.legacy").read_text()
    assert "3.7" in text and "K80" in text and "CUDA 11" in text
