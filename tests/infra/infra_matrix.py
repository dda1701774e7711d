"""Constants and helpers shared by the infra tests (a plain module: tests/ is not a package)."""

from __future__ import annotations

import datetime as dt

from servers import find_tool

from infra import stacks as stackfiles

NOW = dt.datetime(2030, 1, 2, 3, 4, tzinfo=dt.timezone.utc)
STACK_NAMES = stackfiles.stack_names()
BENCHMARK_STACKS = [n for n in STACK_NAMES if not n.endswith("-results")]
AWS_STACKS = [n for n in BENCHMARK_STACKS if n.startswith("aws-")]
GCP_STACKS = [n for n in BENCHMARK_STACKS if n.startswith("gcp-")]


def require_tool(name: str) -> str:
    """Path of a system tool (servers.find_tool: skip when missing, FAIL under CI=true)."""
    return find_tool(name, f"apt-get install {name}; .ci/run installs it")
