"""What a leak sweep did to one resource: the record every cloud's sweep primitives return.

Each cloud's `sweep()` (infra/<cloud>/sweep.py) lists what carries the project's
expires-at tag or label and returns one `Action` per resource; the command in
analysis/sweep/ prints them and sets the exit code.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

# action -> counts as a failure for the exit code
ACTIONS = {
    "terminated": False,
    "would-terminate": False,
    "deleted": False,
    "would-delete": False,
    "kept": False,  # tagged, deadline not reached
    "skipped": False,  # tagged, but the deadline is unreadable: never guess
    "failed": True,
}


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
