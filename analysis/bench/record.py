"""A bench's workspace (`<state home>/bench/<bench-id>/`, or under `--project-dir DIR/.gpubench/bench/`)
and `bench.json`, its record: per probe the fields the campaign status rules read. From it `gpubench status`
classifies every bench probe (analysis.stack_status's rules over what the bucket says) and `gpubench logs`
prints the newest run's rolling `log-tail.txt` (uploaded every ~30 s).
"""

from __future__ import annotations

import functools
import json
import os
import threading
import time
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any, TextIO

from analysis import fastjson
from analysis.observe import StackObservation, observe, read_bounded, runs_of
from analysis.stack_status import status_of
from infra import projectfiles
from payload import storage
from payload.money import USD_SIGN
from payload.terminal import terminal_text
from payload.timestamps import iso, parse_time, stamp, utcnow
from payload.userdirs import user_dir
from payload.workloads.process import LOG_TAIL_LINE_CHARS, LOG_TAIL_LINES

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


# --- `gpubench status` and `gpubench logs` ------------------------------------------------------------------------

LOG_TAIL = "log-tail.txt"
ROW_KEYS = ("bench_id", "stack", "kind", "offering", "market", "state", "ended", "detail", "age_seconds", "deadline")
ROW_KEYS += ("cost_usd", "resources", "last_event", "run_ids", "problems")
ENDED = ("destroyed", "ended")


def _is_ended(entry: dict[str, Any]) -> bool:
    return (entry.get("teardown") or {}).get("action") in ENDED or entry.get("state") == "launch-failed"


def _row(record: BenchRecord, name: str, entry: dict, store: Any, now: datetime, counts: dict) -> dict[str, Any]:
    since = parse_time(entry.get("up_started_at"))
    st = status_of(name, entry, lambda n, t: observe(store, n, t) if store else StackObservation(), now)
    return dict.fromkeys(ROW_KEYS) | {
        "bench_id": record.bench_id,
        "stack": name,
        **{k: entry.get(k) for k in ("kind", "offering", "market")},
        "ended": _is_ended(entry),
        "age_seconds": round((now - since).total_seconds(), 1) if since else None,
        "resources": counts.get(name),
        **{k: getattr(st, k) for k in ("state", "detail", "deadline", "cost_usd", "last_event", "run_ids", "problems")},
    }


def probe_status(
    work_dir: Path,
    *,
    now: datetime | None = None,
    include_ended: bool = False,
    backend: Callable[[Path], Any] | None = None,
) -> list[dict[str, Any]]:
    """Every live probe (all probes with `include_ended`) of every bench under `work_dir`."""
    stores, now = functools.cache(storage.open_store), now or utcnow()  # one per bucket
    rows = []
    for directory in bench_dirs(work_dir):
        try:
            record = BenchRecord.load(directory)
        except ValueError as exc:  # one damaged record: its row says so, the other benches are still listed
            rows.append(_refused(directory.name, "-", str(exc)))
            continue
        wanted = {
            n: e for n, e in record.stacks.items() if include_ended or not isinstance(e, dict) or not _is_ended(e)
        }
        if not wanted:
            continue
        counts = {}  # resources per stack, when a backend answers: only cloud probes have any
        if backend is not None and any(isinstance(e, dict) and e.get("kind") == "cloud" for e in wanted.values()):
            try:
                counts = {s.name: int(getattr(s, "resource_count", 0) or 0) for s in backend(directory).list_stacks()}
            except Exception:  # noqa: BLE001 - no backend, no counts; the bucket still answers
                pass
        for name, entry in wanted.items():
            try:
                url = entry.get("results") or record.data.get("results")
                rows.append(_row(record, name, entry, stores(url) if url else None, now, counts))
            except (ValueError, TypeError, AttributeError) as exc:  # a bad name or entry: this row alone
                rows.append(_refused(record.bench_id, name, f"{directory / RECORD}: stack entry refused: {exc}"))
    return rows


REFUSED = "refused: "  # a problem that marks a row whose record could not be read


def _refused(bench_id: str, stack: str, why: str) -> dict[str, Any]:
    """The row of a bench record (or one stack entry of it) that cannot be read: state unknown, the reason."""
    shown = {"bench_id": bench_id, "stack": stack, "detail": why}
    row = dict.fromkeys(ROW_KEYS) | {k: terminal_text(v, multiline=False) for k, v in shown.items()}
    return row | {"state": "unknown", "ended": False, "run_ids": [], "problems": [REFUSED + why]}


def status_table(rows: list[dict[str, Any]]) -> str:
    counted = any(r.get("resources") is not None for r in rows)  # only when a backend answered
    lines = [("bench", "stack", "state", "age", "cost so far", "resources", "deadline", "detail")]
    for r in rows:
        v = r["age_seconds"]
        age = "-" if v is None else (f"{v / 60:.0f} min" if v >= 90 else f"{v:.0f} s")
        cost = "-" if r["cost_usd"] is None else USD_SIGN.format(r["cost_usd"])
        held = "-" if r.get("resources") is None else r["resources"]
        lines.append((r["bench_id"], r["stack"], r["state"], age, cost, held, str(r["deadline"] or "-"), r["detail"]))
    shape = "{:22} {:32} {:13} {:>7} {:>11} " + ("{!s:>9}  " if counted else "{!s:.0} ") + "{:24} {}"
    return "\n".join(shape.format(*line) for line in lines)


def latest_log(store: Any, stack: str) -> tuple[str, str, bool] | None:
    """(run id, log tail text, run finished) of the stack's newest run that has a log tail."""
    runs = {k: v for k, v in runs_of(store, stack).items() if LOG_TAIL in v["files"]}
    if not runs:
        return None
    run_id = max(runs, key=lambda r: (runs[r]["updated"] or datetime.min.replace(tzinfo=utcnow().tzinfo), r))
    # read no further than any payload writes a tail (a forged 300 MB object is cut, and says so)
    data = read_bounded(store, runs[run_id]["newest"][LOG_TAIL], MAX_LOG_TAIL_BYTES, cut=True)
    text = data[:MAX_LOG_TAIL_BYTES].decode("utf-8", errors="replace")
    if len(data) > MAX_LOG_TAIL_BYTES:
        text += f"\n[cut at {MAX_LOG_TAIL_BYTES:,} bytes: larger than any log tail the payload writes]\n"
    return run_id, text, "result.json" in runs[run_id]["files"]


# The most a payload writes: LOG_TAIL_LINES lines of LOG_TAIL_LINE_CHARS characters, up to 4 UTF-8 bytes each.
MAX_LOG_TAIL_BYTES = LOG_TAIL_LINES * (LOG_TAIL_LINE_CHARS + 1) * 4


def new_lines(seen: list[str], lines: list[str]) -> list[str]:
    """The lines of a rolling tail not printed yet: drop the longest head of `lines` that ends `seen`."""
    for k in range(min(len(seen), len(lines)), 0, -1):
        if lines[:k] == seen[-k:]:
            return lines[k:]
    return lines


FIRST_LOG_WAIT_SECONDS = 15 * 60.0  # `logs --follow`: how long to wait for a run's first log tail


def follow_log(
    store: Any,
    stack: str,
    out: TextIO,
    *,
    poll: float = 5.0,
    timeout: float | None = None,
    sleep: Callable[[float], None] = time.sleep,
    first_log_wait: float | None = None,
) -> str | None:
    """Print the newest run's log as it grows until the run has its result (or `timeout`); its run id. None
    when no log tail appeared within `first_log_wait` seconds: a misspelt stack must not wait forever."""
    seen: list[str] = []
    current = None
    started = time.monotonic()
    end = None if timeout is None else started + timeout
    give_up = started + (FIRST_LOG_WAIT_SECONDS if first_log_wait is None else first_log_wait)
    while True:
        found = latest_log(store, stack)
        if found is None and current is None and time.monotonic() >= give_up:
            return None
        if found is not None:
            run_id, text, finished = found
            if run_id != current:
                if current is not None:
                    print(f"--- newer run {run_id} ({iso()}) ---", file=out)
                current, seen = run_id, []
            lines = text.splitlines()
            for line in new_lines(seen, lines):
                print(line, file=out, flush=True)
            seen = lines
            if finished:
                return current
        if end is not None and time.monotonic() >= end:
            return current
        sleep(poll)
