"""What a leak sweep did to one resource: the record every cloud's sweep primitives return.

Each cloud's `sweep()` (infra/<cloud>/sweep.py) lists what carries the project's
expires-at tag or label and returns one `Action` per resource; `gpubench sweep`
(analysis/commands/sweep.py) prints them and sets the exit code. `ownership` is the one
ownership rule every cloud applies: the project tag equal to this deployment's
project id and a stack tag in the project's stack-name convention
(infra.tags.project_id, is_project_stack); `classify` adds a launcher-format deadline.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass
from datetime import datetime
from typing import Any

from infra.tags import BadDeadline, is_project_stack, parse_deadline
from payload import exitcodes

# action -> counts as a failure for the exit code
ACTIONS = {
    "terminated": False,
    "would-terminate": False,
    "deleted": False,
    "would-delete": False,
    "kept": False,  # ours, deadline not reached
    "left-alone": False,  # not provably ours (no stack tag, or an expiry the launcher never writes): never touched
    "skipped": False,  # ours, but could not be read (e.g. a schedule deleted meanwhile)
    "failed": True,
}

NO_STACK = "no {key} tag"
FOREIGN_PROJECT = "{key}={value!r} is not this project ({project!r})"
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
    """None when the resource is provably this project's, else why it is not (it is then left alone).

    A non-empty stack tag is not enough: another team may use the same key. The
    project tag must equal this deployment's id AND the stack name must follow
    the project's convention for this cloud."""
    if not isinstance(tags, Mapping):
        return f"tags are not a key/value map ({type(tags).__name__})"
    stack = tags.get(owner.stack_key)
    if not str(stack or "").strip():
        return NO_STACK.format(key=owner.stack_key)
    if tags.get(owner.project_key) != owner.project:
        value = tags.get(owner.project_key)
        return FOREIGN_PROJECT.format(key=owner.project_key, value=value, project=owner.project)
    if not is_project_stack(stack, owner.cloud):
        return FOREIGN_STACK.format(key=owner.stack_key, value=stack, cloud=owner.cloud)
    return None


def classify(
    tags: Mapping[str, Any], now: datetime, *, owner: Owner, expires_key: str, is_launcher_deadline
) -> tuple[str, str]:
    """('expired' | 'kept' | 'left-alone', reason) from a resource's tags or labels.

    A resource is ours only if `ownership` says so AND it carries an expiry in the
    exact form the launcher writes; anything else (another tool's tag that merely
    looks like a date, a hand-edited value, a foreign stack) is left alone, never guessed at.
    """
    foreign = ownership(tags, owner)
    if foreign:
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
    action: str
    stack: str | None = None
    expires_at: str | None = None
    reason: str = ""
    error: str | None = None

    @property
    def ok(self) -> bool:
        return not ACTIONS[self.action]

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "ok": self.ok}
