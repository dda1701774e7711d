"""The copied catalog data (the `data_dir` fixture) as it was on a past day."""

from __future__ import annotations

import tomllib
from datetime import date
from pathlib import Path

import infra.catalog


def keep_snapshots_until(data_dir: Path, day: date) -> None:
    """Drop the copied snapshots dated after `day`: the catalog as it was on
    that day, for tests that play a refresh on a fixed date."""
    for path in (data_dir / "prices").glob("*.toml"):
        if str(tomllib.loads(path.read_text(encoding="utf-8"))["as_of"]) > day.isoformat():
            path.unlink()
    infra.catalog.load_catalog.cache_clear()
