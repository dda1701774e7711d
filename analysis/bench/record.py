"""A bench's workspace (`<state home>/bench/<bench-id>/`, or under `--project-dir DIR/.gpubench/bench/`)
and `bench.json`, the record `gpubench status` reads: per probe the fields the campaign status rules read.
"""

from __future__ import annotations

import json
import os
import threading
from datetime import datetime
from pathlib import Path
from typing import Any

from analysis import fastjson
from infra import projectfiles
from payload.timestamps import iso, stamp
from payload.userdirs import user_dir

BENCH_ROOT = Path(".gpubench") / "bench"  # under --project-dir DIR, and in a checkout before the state home
RECORD = "bench.json"


def new_bench_id(now: datetime | None = None) -> str:
    """A UTC timestamp plus 4 hex digits: sorts by time, two benches in one second differ."""
    return stamp(now) + "-" + os.urandom(2).hex()


def bench_root(work_dir: Path | None = None) -> Path:
    """Where new bench workspaces go: under `work_dir` (`--project-dir`) when given, else the state home."""
    return Path(work_dir) / BENCH_ROOT if work_dir else user_dir("state") / "bench"


def legacy_bench_root() -> Path | None:
    """`.gpubench/bench/` of the checkout the code runs from, where benches were kept before the
    state home; read in place (never moved), None for a packaged install or when there is none."""
    root = projectfiles.CHECKOUT / BENCH_ROOT
    return root if projectfiles.from_checkout() and root.is_dir() else None


def bench_dirs(work_dir: Path | None = None) -> list[Path]:
    """Every bench workspace, oldest first: under `work_dir` when given, else the state home's and
    any left in the checkout's old `.gpubench/bench/`."""
    roots = [bench_root(work_dir)] if work_dir else [bench_root(), legacy_bench_root()]
    unique = {root.resolve(): root for root in roots if root and root.is_dir()}  # GPUBENCH_HOME may be the old one
    found = [p for root in unique.values() for p in root.iterdir() if (p / RECORD).is_file()]
    return sorted(found, key=lambda p: (p.name, str(p)))


class BenchRecord:
    """bench.json: the task, the results location and one entry per probe."""

    def __init__(self, path: Path, data: dict[str, Any]):
        self.path, self.data = Path(path), data
        self._lock = threading.Lock()

    @classmethod
    def create(cls, directory: Path, bench_id: str, task: str, results: str | None) -> BenchRecord:
        directory.mkdir(parents=True, exist_ok=True)
        data = {"bench_id": bench_id, "task": task, "results": results, "created_at": iso(), "stacks": {}}
        record = cls(directory / RECORD, data)
        record.save()
        return record

    @classmethod
    def load(cls, directory: Path) -> BenchRecord:
        path = Path(directory) / RECORD
        try:
            data = fastjson.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise ValueError(f"{path}: unreadable bench record ({exc}); delete the directory if it is stale") from None
        if not isinstance(data, dict) or not isinstance(data.get("stacks"), dict):
            raise ValueError(f"{path}: not a bench record (no `stacks` mapping); delete the directory if it is stale")
        return cls(path, data)

    @property
    def bench_id(self) -> str:
        return str(self.data["bench_id"])

    @property
    def stacks(self) -> dict[str, dict[str, Any]]:
        return self.data["stacks"]

    def enter(self, name: str, candidate: Any, benchmark: str, results: str | None, **fields: Any) -> None:
        """A probe's entry: the candidate's place and price, the task's name and the bucket, and `fields`."""
        c = candidate
        entry = {"kind": c.kind, "offering": c.offering, "market": c.market, "hourly_usd": c.hourly_usd}
        self.update(name, **entry, suite=[benchmark], results=results, **fields)

    def update(self, name: str, **fields: Any) -> None:
        with self._lock:
            self.stacks.setdefault(name, {}).update(fields)
            self._write()

    def save(self) -> None:
        with self._lock:
            self._write()

    def _write(self) -> None:
        tmp = self.path.with_name(f".{self.path.name}.tmp")
        tmp.write_text(json.dumps(self.data, indent=2, default=str), encoding="utf-8")
        tmp.replace(self.path)
