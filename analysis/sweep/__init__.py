"""Leak sweeper (teardown layer 4 of DESIGN.md): whatever Pulumi's state says, find what this
project launched whose `expires-at` has passed and delete it. One module per cloud.

Only resources carrying the project's expires-at tag/label are looked at, and
only those whose deadline is at or before `now` are touched; everything else
is reported as `kept` or `skipped`, never modified.
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


def sweeper(provider: str):
    """The sweep function of one provider: (regions, now, dry_run, **kw) -> list[Action]."""
    import importlib

    if provider not in ("aws", "gcp"):
        raise ValueError(f"unknown provider {provider!r}; choose aws or gcp")
    return importlib.import_module(f"analysis.sweep.{provider}").sweep
