"""UTC timestamps as every layer writes them: ISO 8601 with milliseconds and a Z (`iso`), read back by
`parse_time`; `stamp` is the compact form ids and folder names use.
"""

from __future__ import annotations

import time
from datetime import datetime, timezone


def utcnow() -> datetime:
    return datetime.now(timezone.utc)


def _utc(moment: datetime | float | None) -> datetime:
    if not isinstance(moment, datetime):
        return datetime.fromtimestamp(time.time() if moment is None else moment, tz=timezone.utc)
    return moment if moment.tzinfo is timezone.utc else moment.astimezone(timezone.utc)


def iso(moment: datetime | float | None = None, *, seconds: bool = False) -> str:
    """`moment` (a datetime or seconds since the epoch; default now) as `2026-01-02T03:04:05.678Z`,
    truncated to the millisecond (to the second with `seconds`)."""
    t = _utc(moment)
    # %-formatting: a third of strftime's time, the same text (year unpadded, as glibc's %Y)
    if seconds:
        return "%d-%02d-%02dT%02d:%02d:%02dZ" % (t.year, t.month, t.day, t.hour, t.minute, t.second)  # noqa: UP031
    fields = (t.year, t.month, t.day, t.hour, t.minute, t.second, t.microsecond // 1000)
    return "%d-%02d-%02dT%02d:%02d:%02d.%03dZ" % fields  # noqa: UP031


def stamp(moment: datetime | float | None = None) -> str:
    """`20260102T030405Z`: a moment (default now) as ids and folder names carry it."""
    t = _utc(moment)
    return "%d%02d%02dT%02d%02d%02dZ" % (t.year, t.month, t.day, t.hour, t.minute, t.second)  # noqa: UP031


def parse_time(text: str | None) -> datetime | None:
    """Aware UTC datetime of an ISO 8601 text (no offset: UTC); None for none."""
    return _parse(text) if text else None


def parse_iso(text: str) -> float:
    """Seconds since the epoch of an ISO 8601 text (parse_time's rules); ValueError for no time."""
    return _parse(text).timestamp()


def _parse(text: str) -> datetime:
    t = datetime.fromisoformat(text.replace("Z", "+00:00"))  # Python < 3.11 (the legacy image) reads no Z
    if t.tzinfo is timezone.utc:
        return t
    return t.replace(tzinfo=timezone.utc) if t.tzinfo is None else t.astimezone(timezone.utc)
