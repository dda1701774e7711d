"""What a leak sweep did to one resource (`Action`, returned by each infra/<cloud>/sweep.py and printed
by `gpubench sweep`) and the rules every cloud applies: `ownership` (project tag and stack-name convention,
infra.tags) and `classify` (plus an expiry in the launcher's format).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass
from datetime import datetime
from typing import Any

from infra.tags import BadDeadline, is_project_stack, parse_deadline
from payload import exitcodes

FOREIGN_STACK = "{key}={value!r} is not a {cloud} stack name of this project"
FOREIGN_DEADLINE = "expires-at not in the launcher's format"


class NoAccess(exitcodes.GpubenchError, RuntimeError):
    """A cloud's sweep cannot start: no credentials or project; the message says how to provide them."""

    exit_code = exitcodes.MISSING


@dataclass(frozen=True)
class Owner:
    """What marks a resource as this project's on one cloud: the tag keys and the expected values."""

    cloud: str
    stack_key: str
    project_key: str
    project: str


def ownership(tags: Mapping[str, Any], owner: Owner) -> str | None:
    """None when the resource is provably this project's (project tag AND stack-name convention: another
    team may use the same stack key), else why not (it is then left alone)."""
    if not isinstance(tags, Mapping):
        return f"tags are not a key/value map ({type(tags).__name__})"
    stack = tags.get(owner.stack_key)
    if not str(stack or "").strip():
        return f"no {owner.stack_key} tag"
    if (value := tags.get(owner.project_key)) != owner.project:
        return f"{owner.project_key}={value!r} is not this project ({owner.project!r})"
    if not is_project_stack(stack, owner.cloud):
        return FOREIGN_STACK.format(key=owner.stack_key, value=stack, cloud=owner.cloud)
    return None


def classify(
    tags: Mapping[str, Any], now: datetime, *, owner: Owner, expires_key: str, is_launcher_deadline
) -> tuple[str, str]:
    """('expired' | 'kept' | 'left-alone', reason): ours only with an expiry in the launcher's exact form;
    anything else (a date-like foreign tag, a hand-edited value) is left alone, never guessed at."""
    if foreign := ownership(tags, owner):
        return "left-alone", foreign
    raw = tags.get(expires_key)
    if not isinstance(raw, str) or not is_launcher_deadline(raw):
        return "left-alone", f"{FOREIGN_DEADLINE}: {raw!r}"
    try:
        deadline = parse_deadline(raw)
    except BadDeadline as exc:
        return "left-alone", f"{FOREIGN_DEADLINE}: {exc}"
    if deadline <= now:
        return "expired", f"expired at {deadline.isoformat()}"
    return "kept", f"expires at {deadline.isoformat()}"


def carry_out(verdict: str, dry_run: bool, act: Callable[[], Any], error_of=str, verb="terminate") -> tuple[str, Any]:
    """(action, error) for a resource judged `verdict`: anything but 'expired' stands; an expired
    one is 'would-<verb>' in a dry run, else `act()` makes it '<verb>d', or 'failed' with its error."""
    if verdict != "expired":
        return verdict, None
    if dry_run:
        return f"would-{verb}", None
    try:
        act()
    except Exception as exc:  # noqa: BLE001 - one failure never stops the sweep
        return "failed", error_of(exc)
    return f"{verb}d", None


@dataclass
class Action:
    """What the sweeper did (or would do) to one resource."""

    provider: str
    region: str
    kind: str  # instance | schedule | security-group
    id: str
    # [would-]terminated | [would-]deleted | kept (ours, deadline not reached) | left-alone (not provably ours:
    # no stack tag, or an expiry the launcher never writes; never touched) | skipped (ours, but could not be
    # read, e.g. a schedule deleted meanwhile) | failed (the only one that fails the exit code)
    action: str
    stack: str | None = None
    expires_at: str | None = None
    reason: str = ""
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.action != "failed"

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "ok": self.ok}
