"""Payload test fixtures: an isolated env per test (helpers: payload_helpers.py).

Benchmarks run in-process (``payload.cli.main``) so one TensorFlow import
per xdist worker serves every training test; the few tests that must see a
real process (exit codes, --expect-gpu, logical CPU devices) use
subprocesses.
"""

from __future__ import annotations

import pytest
from payload_helpers import isolate_payload_env


@pytest.fixture(autouse=True)
def payload_env(tmp_path, monkeypatch):
    """No leaked GPUBENCH_* settings, a private spool, fast storage retries, no metadata service."""
    isolate_payload_env(monkeypatch, tmp_path / "spool")
    return tmp_path
