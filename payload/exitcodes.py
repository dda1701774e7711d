"""Exit codes: one table for every gpubench command; `TABLE` is what ``gpubench --help`` prints (docs/cli.md
says what each means). Within one payload suite the most urgent outcome wins (`worst`).
"""

from __future__ import annotations  # the legacy image's Python 3.8 cannot evaluate `int | None`

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
