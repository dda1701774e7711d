"""Helpers shared by the payload tests (a uniquely named module: several
conftest.py files in one session must not shadow each other)."""

from __future__ import annotations

import json
from pathlib import Path


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
