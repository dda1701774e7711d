"""Payload test helpers: isolated env per test and an in-process runner.

Benchmarks run in-process (``payload.cli.main``) so one TensorFlow import
per xdist worker serves every training test; the few tests that must see a
real process (exit codes, --expect-gpu, logical CPU devices) use
subprocesses.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from servers import closed_port_url


@pytest.fixture(autouse=True)
def payload_env(tmp_path, monkeypatch):
    """No leaked GPUBENCH_* settings, a private spool, fast storage retries, no metadata service."""
    for key in list(os.environ):
        if key.startswith("GPUBENCH_"):
            monkeypatch.delenv(key)
    monkeypatch.setenv("GPUBENCH_SPOOL", str(tmp_path / "spool"))
    monkeypatch.setenv("GPUBENCH_STORAGE_RETRIES", "2")
    monkeypatch.setenv("GPUBENCH_STORAGE_BACKOFF", "0.01")
    url = closed_port_url()
    monkeypatch.setenv("AWS_EC2_METADATA_SERVICE_ENDPOINT", url + "/")
    monkeypatch.setenv("GCE_METADATA_HOST", url.removeprefix("http://"))
    monkeypatch.setenv("TF_CPP_MIN_LOG_LEVEL", "2")
    return tmp_path


def run_payload(*args: str) -> int:
    """``python -m payload run ARGS`` in this process; returns the exit code."""
    from payload.cli import main

    return main(["run", *args])


def results_under(root: Path, stack: str) -> dict[str, dict]:
    """run-id -> parsed result.json for a file:// results directory."""
    return {p.parent.name: json.loads(p.read_text()) for p in sorted((root / "runs" / stack).glob("*/result.json"))}


def only_result(root: Path, stack: str) -> tuple[Path, dict]:
    found = results_under(root, stack)
    assert len(found) == 1, f"expected one result under runs/{stack}, got {list(found)}"
    run_id, result = next(iter(found.items()))
    return root / "runs" / stack / run_id, result
