"""Exit codes: one table for every gpubench command; `TABLE` is what ``gpubench --help`` prints (docs/cli.md
says what each means). Within one payload suite the most urgent outcome wins (`worst`). The errors that carry
them: `GpubenchError`, `UsageError` (with `check_choice`'s did-you-mean), `Declined`.
"""

from __future__ import annotations  # the legacy image's Python 3.8 cannot evaluate `int | None`

import difflib
from collections.abc import Sequence

OK = 0
FAILED = 1
USAGE = 2
MISSING = 3
REMOTE = 4
INVALID = 5
STRANDED = 6
DECLINED = 10
INTERRUPTED = 75
CANCELLED = 130
NO_GPU = MISSING  # the payload's name for it
SPOOLED = REMOTE  # the payload's name for it

TABLE = {
    OK: "done",
    FAILED: "ran, but something failed (see the output)",
    USAGE: "bad argument, option, config or input; nothing was done",
    MISSING: "a tool, pip extra, credential or GPU it needs is missing",
    REMOTE: "a cloud API or bucket failed or is unreachable (payload: results spooled locally)",
    INVALID: "data refused (a price snapshot that would not load; collect --strict: results set aside)",
    STRANDED: "payload: files are only in the fallback directory (or stderr); flush them with --spool DIR",
    DECLINED: "not confirmed: answer y, or pass --yes",
    INTERRUPTED: "interrupted by the cloud or the deadline; run again to resume",
    CANCELLED: "cancelled with Ctrl-C",
}

_PRECEDENCE = (INTERRUPTED, STRANDED, NO_GPU, FAILED, USAGE, SPOOLED, OK)


def worst(codes) -> int:
    codes = set(codes) or {OK}
    return next(c for c in _PRECEDENCE if c in codes)


class GpubenchError(Exception):
    """An error the user can act on, carrying its exit code; its message names the bad value and the fix."""

    exit_code = FAILED

    def __init__(self, message: str, *, exit_code: int | None = None):
        super().__init__(message)
        if exit_code is not None:
            self.exit_code = exit_code


class UsageError(GpubenchError, ValueError):
    """A bad argument; nothing was done."""

    exit_code = USAGE


class Declined(GpubenchError, RuntimeError):
    """The user did not confirm; nothing was done."""

    exit_code = DECLINED


def did_you_mean(value: str, known: Sequence[str], n: int = 3) -> str:
    """' Did you mean: a, b?' for the closest known names (difflib), or ''."""
    close = difflib.get_close_matches(value, list(known), n=n, cutoff=0.5)
    if not close:
        lowered = {k.lower(): k for k in known}
        close = [lowered[k] for k in difflib.get_close_matches(value.lower(), list(lowered), n=n, cutoff=0.5)]
    return f" Did you mean: {', '.join(close)}?" if close else ""


def check_choice(flag: str, value: str, known: Sequence[str], fix: str) -> str:
    """`value` itself (case-insensitively) when it is one of `known`; else a UsageError naming it and the fix."""
    by_lower = {k.lower(): k for k in known}
    if value.lower() in by_lower:
        return by_lower[value.lower()]
    raise UsageError(f"{flag} {value!r} is not known.{did_you_mean(value, known)} {fix}")
