"""Helpers shared by the payload tests (a uniquely named module: several
conftest.py files in one session must not shadow each other)."""

from __future__ import annotations

import json
from pathlib import Path

from payload.layout import newest_versions


def run_payload(*args: str) -> int:
    """``python -m payload run ARGS`` in this process; returns the exit code."""
    from payload.cli import main

    return main(["run", *args])


def results_under(root: Path, stack: str) -> dict[str, dict]:
    """run-id -> the newest version of its result (result.json, or a resumed attempt's
    result.v<n>.json) for a file:// results directory."""
    keys = [p.relative_to(root).as_posix() for p in (root / "runs" / stack).glob("*/result*.json")]
    newest = {k: v for k, v in newest_versions(keys).items() if k.endswith("/result.json")}
    return {Path(k).parent.name: json.loads((root / v).read_text()) for k, v in sorted(newest.items())}


def only_result(root: Path, stack: str) -> tuple[Path, dict]:
    found = results_under(root, stack)
    assert len(found) == 1, f"expected one result under runs/{stack}, got {list(found)}"
    run_id, result = next(iter(found.items()))
    return root / "runs" / stack / run_id, result
