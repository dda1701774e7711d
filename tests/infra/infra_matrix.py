"""Constants and helpers shared by the infra tests (a plain module: tests/ is not a package)."""

from __future__ import annotations

import datetime as dt

import yaml
from servers import find_tool

from infra import images
from infra import stacks as stackfiles
from infra.catalog import load_catalog

NOW = dt.datetime(2030, 1, 2, 3, 4, tzinfo=dt.timezone.utc)
_CATALOG = load_catalog()


def _refused(name: str) -> bool:
    """A stack whose GPU no shipped image supports (infra.images): its render is refused by design."""
    if name.endswith("-results"):
        return False
    return bool(images.official_image_problems(_CATALOG.cloud_stacks()[name][0]))


ALL_STACK_NAMES = stackfiles.stack_names()
REFUSED_STACKS = [n for n in ALL_STACK_NAMES if _refused(n)]
STACK_NAMES = [n for n in ALL_STACK_NAMES if n not in REFUSED_STACKS]  # the stacks that render
BENCHMARK_STACKS = [n for n in STACK_NAMES if not n.endswith("-results")]
AWS_STACKS = [n for n in BENCHMARK_STACKS if n.startswith("aws-")]
GCP_STACKS = [n for n in BENCHMARK_STACKS if n.startswith("gcp-")]


def require_tool(name: str) -> str:
    """Path of a system tool (servers.find_tool: skip when missing, FAIL under CI=true)."""
    return find_tool(name, f"apt-get install {name}; .ci/run installs it")


def shell_scripts(user_data: str) -> dict[str, str]:
    """The shell scripts embedded in rendered user-data (path -> text), for shellcheck."""
    doc = yaml.safe_load(user_data)
    return {f["path"]: f["content"] for f in doc.get("write_files", []) if f["content"].startswith("#!/bin/")}
