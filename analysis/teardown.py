"""Destroy benchmark stacks through the Pulumi Automation API (teardown layer 3, docs/architecture.md).

Stacks are picked by name, `completed` (every benchmark has a final result) and/or `expired` (the
deadline passed), destroyed one after another, each with an Outcome; one failing stops none. Results
stacks and buckets are refused, even when named.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from datetime import datetime, timedelta, timezone
from functools import partial
from pathlib import Path
from typing import Any

from analysis.observe import UNREACHABLE, StackObservation, observe
from analysis.progress import Printer
from infra import clouds
from infra import workspace as pulumi_ws
from infra.config import DEFAULT_SUITE, STACK_REF
from infra.tags import (
    DEADLINE_OUTPUTS,
    RESULTS_STACKS,
    RESULTS_URL_OUTPUT,
    BadDeadline,
    is_stack_deadline,
    parse_deadline,
)
from infra.workspace import config_value, output_value
from payload.result import FINAL_STATUSES
from payload.results_location import BUCKET_SCHEMES, parse_results_location
from payload.storage import StorageError, open_store
from payload.timestamps import iso

FAILURES = frozenset({"refused", "failed"})  # of the actions: destroyed, would-destroy, kept, absent, refused, failed
DEFAULT_MAX_HOURS = 6.0


@dataclass
class Outcome:
    stack: str
    action: str
    reason: str = ""
    error: str | None = None
    seconds: float = 0.0
    ended_at: str | None = None  # when the destroy ended: a campaign's waste and a bench's record count to it

    @property
    def ok(self) -> bool:
        return self.action not in FAILURES

    def to_dict(self) -> dict[str, Any]:
        """The `--json` outcome (ended_at is for the callers' records)."""
        doc = asdict(self)
        del doc["ended_at"]
        return {**doc, "ok": self.ok}


def refusal(name: str, work_dir: Path) -> str | None:
    """Why `name` must never be destroyed, or None."""
    if "://" in name:  # every results URL has one
        return f"{name!r} is a bucket URL; teardown destroys benchmark stacks and never touches results buckets"
    if name in RESULTS_STACKS:
        return (
            f"{name!r} holds a results bucket; teardown never destroys results stacks, whose buckets hold every result"
        )
    if str(config_value(pulumi_ws.stack_config(name, work_dir), "stackType", "")) == "results":
        return f"{name!r} is a results stack (gpubench:stackType: results); teardown never destroys results stacks"
    return None


def _last_update_start(stack) -> datetime | None:
    """Start of the newest `update` in the stack's history (the current launch)."""
    try:
        history = stack.history(page_size=10)
    except Exception:  # noqa: BLE001 - history is a hint, not a requirement
        return None
    for entry in history or []:
        if getattr(entry, "kind", "update") == "update" and getattr(entry, "start_time", None):
            start = entry.start_time
            return start if start.tzinfo else start.replace(tzinfo=timezone.utc)
    return None


def deadline_of(name: str, stack, outputs, config) -> tuple[datetime | None, str]:
    """The stack's deadline: its `deadline` output, else last update start + gpubench:maxHours."""
    raw = output_value(outputs, DEADLINE_OUTPUTS)
    if raw:
        if not is_stack_deadline(raw):
            # not what the launcher writes: a hand-edited or foreign output decides nothing
            return None, (
                f"deadline output {str(raw)[:80]!r} is not in the launcher's format (2024-05-01T12:00:00Z); "
                "left alone: destroy it by name if it is yours"
            )
        try:
            return parse_deadline(raw), f"deadline output {raw}"
        except BadDeadline as exc:
            return None, str(exc)
    started = _last_update_start(stack)
    if started is None:
        return None, "no deadline output and no update history"
    try:
        hours = float(config_value(config, "maxHours", DEFAULT_MAX_HOURS))
    except (TypeError, ValueError):
        hours = DEFAULT_MAX_HOURS
    return started + timedelta(hours=hours), f"last update {started.isoformat()} + maxHours {hours:g}"


def results_urls_of(name: str, ws, outputs, config, explicit: Sequence[str] | None) -> list[str]:
    """Where the stack's runs are: --results, its resultsUrl output, gpubench:results, or its results stack's output."""
    if explicit:
        return list(explicit)
    url = output_value(outputs, (RESULTS_URL_OUTPUT,))
    if url:
        return [str(url)]
    ref = str(config_value(config, "results", "") or "")
    if ref and not ref.startswith(STACK_REF):
        return [parse_results_location(ref, schemes=BUCKET_SCHEMES).url]
    ref_stack = ref[len(STACK_REF) :] if ref else clouds.results_stack(name.split("-", 1)[0])
    try:
        url = output_value(ws.select_stack(ref_stack).outputs(), (RESULTS_URL_OUTPUT,))
    except Exception:  # noqa: BLE001 - reported as "no results location" below
        url = None
    return [str(url)] if url else []


def _suite(config) -> list[str] | None:
    """gpubench:suite (a list, a JSON list or comma-separated), else the default. Read leniently: a suite
    that cannot be read must not shrink to "whatever results exist" and destroy a stack mid-suite."""
    raw = config_value(config, "suite")
    if raw is None:
        return list(DEFAULT_SUITE) if config else None
    if isinstance(raw, str):
        try:
            raw = json.loads(raw) if raw.strip().startswith("[") else raw.split(",")
        except ValueError:
            raw = raw.strip().strip("[]").split(",")
    names = [str(i).strip().strip("'\"") for i in (raw if isinstance(raw, list | tuple) else [raw]) if str(i).strip()]
    return names or None


def _why_selected(name, stack, ws, config, *, completed, expired, results_urls, now) -> tuple[bool, str]:
    """Apply the --completed / --expired filters (either one selects the stack)."""
    if not (completed or expired):
        return True, "named"
    outputs = stack.outputs() or {}
    reasons: list[str] = []
    if expired:
        deadline, source = deadline_of(name, stack, outputs, config)
        if deadline is not None and deadline <= now:
            return True, f"expired at {deadline.isoformat()} ({source})"
        reasons.append(f"not expired: deadline {deadline.isoformat()}" if deadline else f"no deadline known: {source}")
    if completed:
        try:
            urls = results_urls_of(name, ws, outputs, config, results_urls)
        except ValueError as exc:  # a malformed gpubench:results: named, the stack is kept
            return False, "; ".join([*reasons, f"gpubench:results: {exc}"])
        if not urls:
            reasons.append("no results location: pass --results URL or set gpubench:results")
        else:
            obs = [_observe(url, name, _last_update_start(stack)) for url in urls]
            done, why = completion(obs, _suite(config))
            if done:
                return True, f"completed: {why}"
            problems = [p for o in obs for p in o.problems]
            if any(o.unreachable for o in obs):  # "not complete" would be a guess: failed, not kept, in every mode
                raise RuntimeError("; ".join(problems))
            reasons.append(why + (f"; problems: {'; '.join(problems)}" if problems else ""))
    return False, "; ".join(reasons)


def _observe(url: str, stack: str, since: datetime | None) -> StackObservation:
    try:
        return observe(open_store(url), stack, since)
    except StorageError as exc:
        return StackObservation(problems=[f"{UNREACHABLE}{url}: {exc}"])


def completion(observations: Sequence[StackObservation], suite: Sequence[str] | None) -> tuple[bool, str]:
    """(done, why): done when each suite benchmark's newest result of this launch is final (completed or
    failed; interrupted means a spot restart is coming); without a suite, every result there is."""
    latest = {b: r for o in observations for b, r in o.latest_by_benchmark().items()}
    if not latest:
        earlier = sum(o.earlier for o in observations)
        return False, "no results yet" + (f" ({earlier} from an earlier launch)" if earlier else "")
    wanted = list(suite) if suite else sorted(latest)
    waiting = [b for b in wanted if b not in latest or latest[b].status not in FINAL_STATUSES]
    if waiting:
        said = ", ".join(f"{b} ({latest[b].status if b in latest else 'no result'})" for b in waiting)
        return False, f"{len(wanted) - len(waiting)} of {len(wanted)} benchmarks final; waiting for {said}"
    counts = Counter(latest[b].status for b in wanted)
    return True, f"all {len(wanted)} benchmarks final ({', '.join(f'{n} {s}' for s, n in sorted(counts.items()))})"


def teardown(
    names: Sequence[str] | None = None,
    *,
    completed: bool = False,
    expired: bool = False,
    dry_run: bool = False,
    results_urls: Sequence[str] | None = None,
    now: datetime | None = None,
    work_dir: Path | None = None,
    workspace_factory: pulumi_ws.WorkspaceFactory | None = None,
    printer: Printer | None = None,
) -> list[Outcome]:
    """Destroy the chosen stacks; one Outcome per stack considered. Raises PulumiMissing."""
    if not names and not (completed or expired):
        raise ValueError("name the stacks to destroy, or select them with --completed and/or --expired")
    work_dir = work_dir or pulumi_ws.project_dir()
    now = now or datetime.now(timezone.utc)
    refused = {name: refusal(name, work_dir) for name in dict.fromkeys(names or [])}
    outcomes = [Outcome(name, "refused", why) for name, why in refused.items() if why]
    allowed = [name for name, why in refused.items() if not why]
    if names and not allowed:
        return outcomes
    ws = (workspace_factory or pulumi_ws.local_workspace)(work_dir)
    select = partial(_why_selected, completed=completed, expired=expired, results_urls=results_urls, now=now)
    if not names:  # every stack in the backend that still has resources, but the results stacks
        listed = [s.name.rsplit("/", 1)[-1] for s in ws.list_stacks() if getattr(s, "resource_count", None) != 0]
        allowed = [n for n in listed if not refusal(n, work_dir)]
    for name in allowed:
        outcomes.append(_one(name, ws, work_dir, select, dry_run, (printer or Printer()).for_stack(name)))
    return outcomes


def _one(name, ws, work_dir, select, dry_run, say) -> Outcome:
    began = time.monotonic()
    try:
        stack = ws.select_stack(name)
    except Exception as exc:  # noqa: BLE001 - every stack gets an outcome
        if pulumi_ws.is_stack_not_found(exc):
            return Outcome(name, "absent", "no such stack in the Pulumi backend: nothing to destroy")
        return Outcome(name, "failed", "could not select the stack", pulumi_ws.error_text(exc))
    config = pulumi_ws.stack_config(name, work_dir)
    try:
        chosen, reason = select(name, stack, ws, config)
    except Exception as exc:  # noqa: BLE001
        return Outcome(name, "failed", "could not decide whether the stack is done", pulumi_ws.error_text(exc))
    if not chosen:
        return Outcome(name, "kept", reason)
    if dry_run:
        return Outcome(name, "would-destroy", reason)
    say(f"destroying ({reason})")
    try:
        stack.destroy(on_output=say)
    except Exception as exc:  # noqa: BLE001 - keep going; PKB #224
        return Outcome(name, "failed", reason, pulumi_ws.error_text(exc), round(time.monotonic() - began, 3))
    return Outcome(name, "destroyed", reason, None, round(time.monotonic() - began, 3), iso())


def teardown_completed(
    stacks: Iterable[str] | None, results_urls: Sequence[str] | None = None, dry_run: bool = False, **kw
) -> list[Outcome]:
    """For `collect --teardown`: destroy those of `stacks` (none: every stack) whose runs are all final."""
    return teardown(list(stacks or []) or None, completed=True, dry_run=dry_run, results_urls=results_urls, **kw)
