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
    "name, tag, extra",
    [("Dockerfile", r"2\.1[5-9]\.\d+-gpu", "payload"), ("Dockerfile.legacy", r"2\.11\.0-gpu", "payload-legacy")],
)
def test_dockerfile_structure(name, tag, extra):
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
    pip = " ".join(arg for op, arg in ins if op == "RUN" and "pip install" in arg)
    assert f'"/opt/gpubench-src[{extra}]"' in pip  # the extra's pins live in pyproject.toml only
    for dep in ("boto3", "google-cloud-storage", "jsonschema", "nvidia-ml-py"):
        assert dep not in pip
    import tomllib

    extras = tomllib.loads((PAYLOAD.parent / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    for dep in ("boto3", "google-cloud-storage", "jsonschema", "nvidia-ml-py"):
        assert any(d.startswith(dep) for d in extras[extra]), dep
    assert ("COPY", "payload/ /opt/gpubench-src/payload/") in ins


def test_legacy_image_notes_why_it_exists():
    text = (PAYLOAD / "Dockerfile.legacy").read_text()
    assert "3.7" in text and "K80" in text and "CUDA 11" in text
