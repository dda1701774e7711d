"""What a leak sweep did to one resource: the record every cloud's sweep primitives return.

Each cloud's `sweep()` (infra/<cloud>/sweep.py) lists what carries the project's
expires-at tag or label and returns one `Action` per resource; the command in
analysis/sweep/ prints them and sets the exit code. `classify` is the one
ownership rule every cloud applies: stack tag plus a launcher-format deadline.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass
from datetime import datetime
from typing import Any

from infra.tags import BadDeadline, parse_deadline

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
FOREIGN_DEADLINE = "expires-at not in the launcher's format"


def classify(
    tags: Mapping[str, Any], now: datetime, *, stack_key: str, expires_key: str, is_launcher_deadline
) -> tuple[str, str]:
    """('expired' | 'kept' | 'left-alone', reason) from a resource's tags or labels.

    A resource is ours only if it carries the project's stack tag AND an expiry in
    the exact form the launcher writes; anything else (another tool's tag that
    merely looks like a date, a hand-edited value) is left alone, never guessed at.
    """
    if not isinstance(tags, Mapping):
        return "left-alone", f"tags are not a key/value map ({type(tags).__name__})"
    if not str(tags.get(stack_key) or "").strip():
        return "left-alone", NO_STACK.format(key=stack_key)
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
