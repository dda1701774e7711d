"""Constants and helpers shared by the infra tests (a plain module: tests/ is not a package)."""

from __future__ import annotations

import datetime as dt
import os
import shutil

import pytest

from infra import stacks as stackfiles

NOW = dt.datetime(2030, 1, 2, 3, 4, tzinfo=dt.timezone.utc)
STACK_NAMES = stackfiles.stack_names()
BENCHMARK_STACKS = [n for n in STACK_NAMES if not n.endswith("-results")]
AWS_STACKS = [n for n in BENCHMARK_STACKS if n.startswith("aws-")]
GCP_STACKS = [n for n in BENCHMARK_STACKS if n.startswith("gcp-")]


def require_tool(name: str) -> str:
    """Path of a system tool; skip when missing, but FAIL under CI=true (CI installs it)."""
    path = shutil.which(name)
    if path is None:
        message = f"{name} is not installed (apt-get install {name})"
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(message + "; CI must install it (.ci/run)")
        pytest.skip(message)
    return path
