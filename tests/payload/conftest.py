"""Payload test fixtures: an isolated env per test (helpers: payload_helpers.py).

Benchmarks run in-process (``payload.cli.main``) so one TensorFlow import
per xdist worker serves every training test; the few tests that must see a
real process (exit codes, --expect-gpu, logical CPU devices) use
subprocesses.
"""

from __future__ import annotations

import os

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
