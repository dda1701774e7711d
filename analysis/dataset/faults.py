"""A full disk or a damaged table, named with the way to recover; OSErrors, which every command reports as
a message and exit code 1. Each is recognised here once, whichever library met it (SQLite, Delta Lake, pyarrow)."""

from __future__ import annotations

import errno
import sqlite3

SQLITE_FULL = 13  # sqlite3's primary result code for "database or disk is full"


class DiskFull(OSError):
    def __init__(self, where: str, detail: str):
        self.where = where
        super().__init__(
            f"no space left on the disk holding {where} ({detail}): free some space there (df -h), then run the "
            "same collect again: what it committed stays in the table, and the next collect reads the rest "
            "and rebuilds results.parquet and results.csv from the table"
        )


class TableDamaged(OSError):
    def __init__(self, where: str, detail: str):
        self.where = where
        super().__init__(
            f"the results table at {where} is damaged: its log (_delta_log/) cannot be read ({detail}). "
            f"Nothing is lost that the buckets hold: move it aside (mv {where} {where}.damaged) and collect again "
            f"into {where}, which reads every result again; or put back _delta_log/ from a backup"
        )


def is_disk_full(exc: BaseException) -> bool:
    """Whether `exc` or a cause is a full disk (ENOSPC, EDQUOT, SQLITE_FULL, or Delta Lake's Rust message)."""
    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        if isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EDQUOT):
            return True
        if isinstance(exc, sqlite3.Error) and (getattr(exc, "sqlite_errorcode", 0) or 0) & 0xFF == SQLITE_FULL:
            return True
        text = str(exc)
        if "No space left on device" in text or "os error 28" in text or "Disk quota exceeded" in text:
            return True
        exc = exc.__cause__ or exc.__context__
    return False


def first_line(exc: BaseException, limit: int = 200) -> str:
    """The first line of an error's text, at most `limit` characters (Delta Lake's carry a backtrace)."""
    text = str(exc).strip()
    return (text.splitlines()[0] if text else type(exc).__name__)[:limit]
