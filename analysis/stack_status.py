"""Per-stack state of a campaign, its cost so far and its waste, from the manifest plus the bucket.

States, first matching rule wins (RULES):
  pending        in the manifest, not launched yet
  launching      `up` in flight (or the orchestrator died during it)
  launch-failed  `up` failed; the failure kind and the provider's message are kept
  finished       every benchmark of the suite has a final result, all completed
  failed         every benchmark final, at least one failed
  interrupted    the newest result is `interrupted` (spot reclaimed the instance: our
                 stacks use one-time spot requests that terminate, so nothing resumes it)
  expired        the deadline passed without final results
  running        events in the bucket; the last one is shown
  launched       deployed, no event in the bucket yet (booting, pulling the image); the
                 detail names a run already started, or the run files that cannot be read

Cost so far is billed from the start of the successful `pulumi up` to the result's
upload (final states), to now (running, capped at the deadline) or to the deadline
(expired), at the hourly price recorded at launch (analysis.price.billed.cost_of with
hourly_usd). Waste is the time billed after the last result was uploaded: until the
stack was destroyed, else until its deadline when passed, else until now ("so far").
AWS instances power themselves off after the upload, so for AWS this is an upper
bound; on GCP the stopped VM's disk bills until destroy, as counted.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from datetime import datetime
from typing import Any

from analysis.observe import StackObservation, observe
from analysis.price.billed import cost_of
from payload.terminal import terminal_text
from payload.timestamps import iso, parse_time

TERMINAL = frozenset({"finished", "failed", "interrupted", "expired", "launch-failed"})
from payload.result import FINAL_STATUSES as FINAL_RESULTS  # noqa: E402

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


# --- state rules: (state, predicate(entry, obs, now, ctx) -> detail or None) -----------------


def _at(moment: Any) -> str:
    """' at <time>' when a time is known, else '': a detail never says 'at None'."""
    return f" at {moment}" if moment else ""


def _event(event: dict[str, Any]) -> str:
    """An event as `name at time`, the name as the job wrote it (the detail is made safe as a whole)."""
    return f"{event.get('event') or 'an unnamed event'}{_at(event.get('time'))}"


def _suite_verdict(entry: dict, obs: StackObservation) -> tuple[bool, bool, list[str]]:
    """(every suite benchmark final, any failed, waiting-for list)."""
    latest = obs.latest_by_benchmark()
    suite = entry.get("suite") or sorted(latest)
    waiting = [b for b in suite if b not in latest or latest[b].status not in FINAL_RESULTS]
    failed = any(latest[b].status == "failed" for b in suite if b in latest)
    return (bool(suite) and not waiting), failed, waiting


def _manifest_state(state: str) -> Callable[..., str | None]:
    def rule(entry, obs, now, deadline):
        if entry.get("state") != state:
            return None
        if state == "launch-failed":
            f = entry.get("failure") or {}
            return f"{f.get('kind', 'other')}: {f.get('message', '')}"
        since = entry.get("up_started_at")
        return {"pending": "not launched yet", "launching": "pulumi up" + (f" since {since}" if since else "")}[state]

    return rule


def _finished(entry, obs, now, deadline):
    done, failed, _ = _suite_verdict(entry, obs)
    return f"{len(obs.runs)} result(s), all completed" if done and not failed else None


def _failed(entry, obs, now, deadline):
    done, failed, _ = _suite_verdict(entry, obs)
    if done and failed:
        names = sorted(r.benchmark for r in obs.runs if r.status == "failed")
        return f"failed: {', '.join(names)}"
    return None


def _interrupted(entry, obs, now, deadline):
    latest = sorted(obs.runs, key=lambda r: (r.finished_at or r.started_at or now).timestamp())
    if latest and latest[-1].status == "interrupted" and not obs.in_progress:
        return f"{latest[-1].benchmark} interrupted (spot reclaimed; a new `up` resumes from its checkpoint)"
    return None


def _expired(entry, obs, now, deadline):
    return f"deadline {iso(deadline)} passed without final results" if deadline and deadline <= now else None


def _running(entry, obs, now, deadline):
    if obs.last_event is None:
        return None
    _, _, waiting = _suite_verdict(entry, obs)
    return f"last event {_event(obs.last_event)}; waiting for {', '.join(waiting) or '-'}"


def _launched(entry, obs, now, deadline):
    deployed = f"deployed{_at(entry.get('launched_at') or entry.get('up_started_at'))}"
    if obs.unreachable:
        return f"{deployed}; state unknown: {obs.problems[0]}"
    if obs.problems:  # something is there, and it could not be read: never "nothing yet"
        return f"{deployed}; {len(obs.problems)} file(s) in the bucket unreadable: {obs.problems[0]}"
    if obs.in_progress:
        return f"{deployed}; run {obs.in_progress[-1]} started, no event yet"
    return f"{deployed}; nothing in the bucket yet"


RULES: tuple[tuple[str, Callable[..., str | None]], ...] = (
    ("pending", _manifest_state("pending")),
    ("launching", _manifest_state("launching")),
    ("launch-failed", _manifest_state("launch-failed")),
    ("finished", _finished),
    ("failed", _failed),
    ("interrupted", _interrupted),
    ("expired", _expired),
    ("running", _running),
    ("launched", _launched),
)


def classify(entry: dict, obs: StackObservation, now: datetime) -> tuple[str, str]:
    """(state, detail); the detail quotes what a job or a manifest wrote, so it is made one safe line."""
    deadline = parse_time(entry.get("deadline"))
    for state, rule in RULES:
        detail = rule(entry, obs, now, deadline)
        if detail is not None:
            return state, terminal_text(detail, multiline=False)
    raise AssertionError("the last rule always matches")


# --- money ---------------------------------------------------------------------------------


def _usd(entry: dict, seconds: float) -> float | None:
    if entry.get("hourly_usd") is None or not entry.get("offering"):
        return None
    try:
        return round(
            cost_of(
                entry["offering"],
                seconds,
                market=entry.get("market") or "on-demand",
                hourly_usd=float(entry["hourly_usd"]),
            ).cost_usd,
            6,
        )
    except Exception:  # noqa: BLE001 - an unpriceable row shows '-' rather than stopping status
        return None


def _window_end(state: str, obs: StackObservation, now: datetime, deadline: datetime | None) -> datetime | None:
    if state in WITH_RESULTS:
        return obs.last_upload or now
    if state == "expired":
        return deadline
    if state in ("running", "launched"):
        return min(now, deadline) if deadline else now
    return None


def waste(
    obs: StackObservation, destroyed_at: datetime | None, deadline: datetime | None, now: datetime
) -> tuple[float | None, str | None]:
    """Seconds billed after the last upload, and what ended the count."""
    upload = obs.last_upload
    if upload is None:
        return None, None
    if destroyed_at is not None:
        end, basis = destroyed_at, "until destroyed"
    elif deadline is not None and deadline <= now:
        end, basis = deadline, "until the deadline"
    else:
        end, basis = now, "so far (not destroyed yet)"
    return round(max(0.0, (end - upload).total_seconds()), 3), basis


def stack_status(name: str, entry: dict, obs: StackObservation, now: datetime) -> StackStatus:
    state, detail = classify(entry, obs, now)
    deadline = parse_time(entry.get("deadline"))
    destroyed = (
        parse_time((entry.get("teardown") or {}).get("at"))
        if (entry.get("teardown") or {}).get("action") == "destroyed"
        else None
    )
    st = StackStatus(
        stack=name,
        state=state,
        detail=detail,
        **{k: entry.get(k) for k in ("offering", "market", "zone", "hourly_usd", "launched_at", "deadline", "failure")},
        run_ids=obs.run_ids or list(entry.get("run_ids") or []),
        problems=list(obs.problems),
        unreachable=obs.unreachable,
        destroyed_at=iso(destroyed) if destroyed else None,
    )
    if obs.last_event:
        st.last_event = terminal_text(_event(obs.last_event), multiline=False)
    if obs.last_upload:
        st.uploaded_at = iso(obs.last_upload)
    start, end = parse_time(entry.get("up_started_at")), _window_end(state, obs, now, deadline)
    if state not in ("pending", "launching", "launch-failed") and start and end:
        st.billed_seconds = round(max(0.0, (end - start).total_seconds()), 3)
        st.cost_usd = _usd(entry, st.billed_seconds)
    if state in WITH_RESULTS:
        st.waste_seconds, st.waste_basis = waste(obs, destroyed, deadline, now)
        if st.waste_seconds is not None and entry.get("hourly_usd") is not None:
            st.waste_usd = round(st.waste_seconds / 3600.0 * float(entry["hourly_usd"]), 6)
    return st


def campaign_status(manifest: Any, store: Any, now: datetime, observe_fn: Callable | None = None) -> list[StackStatus]:
    """Status of every stack in the manifest (reads the bucket once per launched stack)."""
    look = observe_fn or observe
    out = []
    for name, entry in manifest.stacks.items():
        needs_bucket = entry.get("state") == "launched"
        obs = look(store, name, parse_time(entry.get("up_started_at"))) if needs_bucket else StackObservation()
        out.append(stack_status(name, entry, obs, now))
    return out
