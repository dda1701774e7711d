"""The one timestamp format: what strftime wrote before, for a datetime, an epoch float and an offset."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from payload.timestamps import iso, parse_iso, parse_time, stamp

T = datetime(2026, 1, 2, 3, 4, 5, 678999, tzinfo=timezone.utc)


def test_iso_is_the_strftime_text_truncated_to_the_millisecond():
    assert iso(T) == T.strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z" == "2026-01-02T03:04:05.678Z"
    assert iso(T.timestamp()) == iso(T)
    assert iso(T.astimezone(timezone(timedelta(hours=2)))) == iso(T)  # another offset: the same instant in UTC
    assert iso(T, seconds=True) == "2026-01-02T03:04:05Z"
    assert stamp(T) == "20260102T030405Z"


def test_parse_time_reads_what_iso_writes_and_takes_a_bare_time_as_utc():
    assert parse_time(iso(T)) == T.replace(microsecond=678000)
    assert parse_time("2026-01-02T05:04:05+02:00") == parse_time("2026-01-02T03:04:05") == T.replace(microsecond=0)
    assert parse_time("") is None and parse_time(None) is None
    assert parse_iso(iso(T)) == pytest.approx(T.timestamp(), abs=1e-3)
    with pytest.raises(ValueError):
        parse_iso("")


def test_a_z_is_read_where_fromisoformat_reads_none(monkeypatch):
    """Python before 3.11 (the legacy image runs the payload on 3.8) refuses a Z suffix; it is read all the same."""
    from payload import timestamps

    class Before311(datetime):
        @classmethod
        def fromisoformat(cls, text):
            if "Z" in text:
                raise ValueError(f"Invalid isoformat string: {text!r}")
            return datetime.fromisoformat(text)

    monkeypatch.setattr(timestamps, "datetime", Before311)
    assert parse_time("2026-01-02T03:04:05.678Z") == T.replace(microsecond=678000)
