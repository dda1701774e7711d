"""Is a stack done? Read its results under `runs/<stack>/` and decide.

A stack is complete when every benchmark of its suite has a final result
(status completed or failed; interrupted means a spot restart is coming).
When the suite is unknown, at least one result and all of them final.
Results that started before the stack's last `pulumi up` belong to an
earlier launch and are ignored, so a re-launched stack is not destroyed
because of last week's results.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime

from analysis.observe import CLOCK_SKEW, launch_floor, read_result  # noqa: F401  (CLOCK_SKEW re-exported)
from infra.tags import BadDeadline, parse_deadline
from payload.layout import stack_prefix
from payload.result import FINAL_STATUSES
from payload.storage import StorageError, open_store


@dataclass(frozen=True)
class RunState:
    benchmark: str
    status: str
    started_at: datetime | None
    finished_at: datetime | None
    key: str


@dataclass(frozen=True)
class Completion:
    complete: bool
    reason: str


def _ts(text) -> datetime | None:
    try:
        return parse_deadline(text) if text else None
    except BadDeadline:
        return None


def read_runs(stack: str, urls: Iterable[str]) -> tuple[list[RunState], list[str]]:
    """Every result.json of the stack under each results URL; unreadable ones become problems, not errors."""
    runs: list[RunState] = []
    problems: list[str] = []
    for url in urls:
        try:
            store = open_store(url)
            keys = [o.key for o in store.list(stack_prefix(stack)) if o.key.endswith("/result.json")]
        except StorageError as exc:
            problems.append(f"{url}: {exc}")
            continue
        for key in keys:
            try:
                doc = read_result(store, key)
                bench = doc.get("benchmark") or {}
                # a run resumed after a spot restart started before the relaunch:
                # it belongs to the launch its newest attempt started in
                attempts = [a for a in doc.get("attempts") or [] if isinstance(a, dict) and a.get("start")]
                runs.append(
                    RunState(
                        benchmark=str(bench.get("name") if isinstance(bench, dict) else bench or doc.get("run_id")),
                        status=str(doc.get("status")),
                        started_at=_ts(
                            max(attempts, key=lambda a: a.get("attempt") or 0)["start"]
                            if attempts
                            else doc.get("started_at")
                        ),
                        finished_at=_ts(doc.get("finished_at")),
                        key=key,
                    )
                )
            except (StorageError, ValueError, AttributeError, TypeError) as exc:
                problems.append(f"{store.url_for(key)}: unreadable ({exc})")
    return runs, problems


def decide(runs: Sequence[RunState], suite: Sequence[str] | None, since: datetime | None = None) -> Completion:
    """Complete when each suite benchmark's newest result (since the last launch) is final."""
    floor = launch_floor(since)
    current = [r for r in runs if floor is None or r.started_at is None or r.started_at >= floor]
    latest: dict[str, RunState] = {}
    for r in sorted(current, key=lambda r: r.finished_at.timestamp() if r.finished_at else 0.0):
        latest[r.benchmark] = r
    if not latest:
        old = f" ({len(runs)} from an earlier launch)" if runs else ""
        return Completion(False, f"no results yet{old}")
    wanted = list(suite) if suite else sorted(latest)
    missing = [b for b in wanted if b not in latest]
    pending = [f"{b} ({latest[b].status})" for b in wanted if b in latest and latest[b].status not in FINAL_STATUSES]
    if missing or pending:
        waiting = ", ".join([*(f"{b} (no result)" for b in missing), *pending])
        return Completion(
            False,
            f"{len(wanted) - len(missing) - len(pending)} of {len(wanted)} benchmarks final; waiting for {waiting}",
        )
    counts: dict[str, int] = {}
    for b in wanted:
        counts[latest[b].status] = counts.get(latest[b].status, 0) + 1
    summary = ", ".join(f"{n} {s}" for s, n in sorted(counts.items()))
    return Completion(True, f"all {len(wanted)} benchmarks final ({summary})")
