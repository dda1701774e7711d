"""A campaign stack's state, cost so far and waste, from its manifest entry and the bucket (the states
and the waste are explained in docs/campaigns.md).

Cost so far is billed from the start of the successful `pulumi up` to the result's upload (final states),
to now (running, capped at the deadline) or to the deadline (expired), at the hourly price recorded at
launch. Waste is the time billed after the last upload: until destroyed, else until the deadline when
passed, else until now. AWS instances power off after the upload, so for AWS it is an upper bound; a
stopped GCP VM's disk bills until destroy.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from datetime import datetime
from typing import Any

from analysis.observe import StackObservation
from analysis.price.billed import cost_of
from payload import exitcodes
from payload.result import FINAL_STATUSES
from payload.terminal import terminal_text
from payload.timestamps import iso, parse_time

TERMINAL = frozenset({"finished", "failed", "interrupted", "expired", "launch-failed"})
WITH_RESULTS = frozenset({"finished", "failed", "interrupted"})


@dataclass
class StackStatus:
    stack: str
    state: str
    detail: str
    offering: str | None = None
    market: str | None = None
    zone: str | None = None
    hourly_usd: float | None = None
    launched_at: str | None = None
    deadline: str | None = None
    run_ids: list[str] = field(default_factory=list)
    last_event: str | None = None
    billed_seconds: float | None = None
    cost_usd: float | None = None
    waste_seconds: float | None = None
    waste_usd: float | None = None
    waste_basis: str | None = None
    uploaded_at: str | None = None
    destroyed_at: str | None = None
    failure: dict[str, Any] | None = None
    problems: list[str] = field(default_factory=list)
    unreachable: bool = False  # its bucket could not be read: the state is a guess

    @property
    def terminal(self) -> bool:
        return self.state in TERMINAL

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "terminal": self.terminal}


def _at(moment: Any) -> str:
    """' at <time>' when a time is known, else '': a detail never says 'at None'."""
    return f" at {moment}" if moment else ""


def _event(event: dict[str, Any]) -> str:
    return f"{event.get('event') or 'an unnamed event'}{_at(event.get('time'))}"


def _classify(entry: dict, obs: StackObservation, now: datetime, deadline: datetime | None) -> tuple[str, str]:
    """The first state that holds, in the order of docs/campaigns.md, and its detail."""
    state = entry.get("state")
    if state == "pending":
        return state, "not launched yet"
    if state == "launching":
        return state, "pulumi up" + (f" since {entry['up_started_at']}" if entry.get("up_started_at") else "")
    if state == "launch-failed":
        failure = entry.get("failure") or {}
        return state, f"{failure.get('kind', 'other')}: {failure.get('message', '')}"
    latest = obs.latest_by_benchmark()
    suite = entry.get("suite") or sorted(latest)
    waiting = [b for b in suite if b not in latest or latest[b].status not in FINAL_STATUSES]
    if suite and not waiting:
        if not any(latest[b].status == "failed" for b in suite):
            return "finished", f"{len(obs.runs)} result(s), all completed"
        return "failed", "failed: " + ", ".join(sorted(r.benchmark for r in obs.runs if r.status == "failed"))
    newest = sorted(obs.runs, key=lambda r: (r.finished_at or r.started_at or now).timestamp())[-1:]
    if newest and newest[0].status == "interrupted" and not obs.in_progress:
        return (
            "interrupted",
            f"{newest[0].benchmark} interrupted (spot reclaimed; a new `up` resumes from its checkpoint)",
        )
    if deadline and deadline <= now:
        return "expired", f"deadline {iso(deadline)} passed without final results"
    if obs.last_event is not None:
        return "running", f"last event {_event(obs.last_event)}; waiting for {', '.join(waiting) or '-'}"
    deployed = f"deployed{_at(entry.get('launched_at') or entry.get('up_started_at'))}"
    if obs.unreachable:
        return "launched", f"{deployed}; state unknown: {obs.problems[0]}"
    if obs.problems:  # something is there, and it could not be read: never "nothing yet"
        return "launched", f"{deployed}; {len(obs.problems)} file(s) in the bucket unreadable: {obs.problems[0]}"
    if obs.in_progress:
        return "launched", f"{deployed}; run {obs.in_progress[-1]} started, no event yet"
    return "launched", f"{deployed}; nothing in the bucket yet"


def _usd(entry: dict, seconds: float) -> float | None:
    if entry.get("hourly_usd") is None or not entry.get("offering"):
        return None
    market, hourly = entry.get("market") or "on-demand", float(entry["hourly_usd"])
    try:
        return round(cost_of(entry["offering"], seconds, market=market, hourly_usd=hourly).cost_usd, 6)
    except Exception:  # noqa: BLE001 - an unpriceable row shows '-' rather than stopping status
        return None


def _seconds(start: datetime, end: datetime) -> float:
    return round(max(0.0, (end - start).total_seconds()), 3)


def _window_end(state: str, obs: StackObservation, now: datetime, deadline: datetime | None) -> datetime | None:
    """Where the billed window ends; None before a launch."""
    if state in WITH_RESULTS:
        return obs.last_upload or now
    if state == "expired":
        return deadline
    if state in ("running", "launched"):
        return min(now, deadline) if deadline else now
    return None


def stack_status(name: str, entry: dict, obs: StackObservation, now: datetime) -> StackStatus:
    deadline = parse_time(entry.get("deadline"))
    state, detail = _classify(entry, obs, now, deadline)
    teardown = entry.get("teardown") or {}
    destroyed = parse_time(teardown.get("at")) if teardown.get("action") == "destroyed" else None
    st = StackStatus(
        stack=name,
        state=state,
        detail=terminal_text(detail, multiline=False),  # it quotes what a job or a manifest wrote
        **{k: entry.get(k) for k in ("offering", "market", "zone", "hourly_usd", "launched_at", "deadline", "failure")},
        run_ids=obs.run_ids or list(entry.get("run_ids") or []),
        problems=list(obs.problems),
        unreachable=obs.unreachable,
        destroyed_at=iso(destroyed) if destroyed else None,
        last_event=terminal_text(_event(obs.last_event), multiline=False) if obs.last_event else None,
        uploaded_at=iso(obs.last_upload) if obs.last_upload else None,
    )
    start, end = parse_time(entry.get("up_started_at")), _window_end(state, obs, now, deadline)
    if start and end:
        st.billed_seconds = _seconds(start, end)
        st.cost_usd = _usd(entry, st.billed_seconds)
    if state in WITH_RESULTS and obs.last_upload:  # waste: billed after the last upload
        if destroyed:
            end, st.waste_basis = destroyed, "until destroyed"
        elif deadline and deadline <= now:
            end, st.waste_basis = deadline, "until the deadline"
        else:
            end, st.waste_basis = now, "so far (not destroyed yet)"
        st.waste_seconds = _seconds(obs.last_upload, end)
        if entry.get("hourly_usd") is not None:
            st.waste_usd = round(st.waste_seconds / 3600.0 * float(entry["hourly_usd"]), 6)
    return st


def status_of(
    name: str, entry: dict, observe: Callable[[str, datetime | None], StackObservation], now: datetime
) -> StackStatus:
    """A campaign's or a bench's stack; `observe(stack, launch start)` reads the bucket when it is launched."""
    launched = entry.get("state") == "launched"
    obs = observe(name, parse_time(entry.get("up_started_at"))) if launched else StackObservation()
    return stack_status(name, entry, obs, now)


def unreachable(stacks: list[str]) -> exitcodes.GpubenchError | None:
    """The REMOTE error of a status (every mode alike) when the bucket of some stacks could not be read."""
    if not stacks:
        return None
    return exitcodes.GpubenchError(
        f"could not read the bucket of {len(stacks)} stack(s) ({', '.join(stacks)}): their state is "
        "unknown; check the bucket and your credentials (`gpubench check --results URL`)",
        exit_code=exitcodes.REMOTE,
    )
