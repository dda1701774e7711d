"""Recurring campaigns: a schedule file (a cron expression and the campaign's arguments, as in
schedules/campaign/weekly-spot.yaml) checked, and its cron as systemd OnCalendar=. Each occurrence is
`gpubench campaign run --schedule FILE`, which the runners in schedules/campaign/ call at the cron time.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from analysis.output import poll_problem
from payload.yamlfile import YamlFileError, read_yaml

KEYS = {"name", "cron", "stacks", "results", "concurrency", "poll", "timeout", "out", "retry_failed"}
FIELDS = (("minute", 0, 59), ("hour", 0, 23), ("day of month", 1, 31), ("month", 1, 12), ("day of week", 0, 7))
DOW = ("Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")
DOW_NAMES = {n.lower(): i for i, n in enumerate(DOW[:7])}
_DURATION = re.compile(r"^(\d+(?:\.\d+)?)\s*([smhd]?)$")
_UNITS = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400}


class ScheduleError(ValueError):
    """A schedule file problem; the message names the file, the key and the fix."""


def parse_duration(text: Any) -> float:
    """`90`, `90s`, `30m`, `8h`, `1d` -> seconds."""
    m = _DURATION.match(str(text).strip().lower())
    if not m:
        raise ValueError(f"{text!r} is not a duration; use seconds or a number with s/m/h/d, e.g. 8h")
    return float(m.group(1)) * _UNITS[m.group(2)]


def _field_values(text: str, name: str, lo: int, hi: int) -> None:
    for part in text.split(","):
        base, _, step = part.partition("/")
        if step and not step.isdigit():
            raise ScheduleError(f"cron {name} {text!r}: step {step!r} is not a number")
        if base == "*":
            continue
        for bound in base.split("-"):
            value = DOW_NAMES.get(bound.lower(), bound) if name == "day of week" else bound
            if not str(value).isdigit() or not lo <= int(value) <= hi:
                raise ScheduleError(f"cron {name} {text!r}: {bound!r} is outside {lo}..{hi}")


def check_cron(expr: str) -> list[str]:
    """The five fields of a standard cron expression (minute hour dom month dow), validated."""
    fields = str(expr).split()
    if len(fields) != 5:
        raise ScheduleError(
            f"cron {expr!r} needs 5 fields (minute hour day-of-month month day-of-week), e.g. '0 6 * * 1'"
        )
    for text, (name, lo, hi) in zip(fields, FIELDS):
        _field_values(text, name, lo, hi)
    return fields


def _calendar_part(text: str) -> str:
    out = []
    for part in text.split(","):
        base, _, step = part.partition("/")
        base = "*" if base == "*" else "..".join(b.zfill(2) for b in base.split("-"))
        out.append(f"{'00' if base == '*' and step else base}/{step}" if step else base)
    return ",".join(out)


def to_oncalendar(expr: str) -> str:
    """systemd OnCalendar= for a cron expression (UTC), e.g. '0 6 * * 1' -> 'Mon *-*-* 06:00:00 UTC'."""
    minute, hour, dom, month, dow = check_cron(expr)
    days = ""
    if dow != "*":
        names = []
        for part in dow.split(","):
            base, _, step = part.partition("/")
            ends = (
                [DOW_NAMES.get(p.lower(), int(p) if p.isdigit() else 0) for p in base.split("-")]
                if base != "*"
                else [0, 6]
            )
            if step:  # systemd weekdays take no step: list the days cron means (`*/2` = Sun,Tue,Thu,Sat)
                first, last = ends[0], ends[-1] if "-" in base or base == "*" else 6
                names.extend(DOW[d] for d in range(first, last + 1, int(step)))
            else:
                names.append("..".join(DOW[d] for d in ends))
        days = ",".join(names) + " "
    return (
        f"{days}*-{_calendar_part(month)}-{_calendar_part(dom)} {_calendar_part(hour)}:{_calendar_part(minute)}:00 UTC"
    )


@dataclass(frozen=True)
class Schedule:
    name: str
    cron: str
    stacks: tuple[str, ...]
    results: str
    concurrency: int = 4
    poll: float = 300.0
    timeout: float | None = None
    out: str | None = None
    retry_failed: bool = False
    path: str = ""


def load(path: str | Path) -> Schedule:
    p = Path(path)
    try:
        doc = read_yaml(p)
    except FileNotFoundError:
        raise ScheduleError(f"{p}: no such schedule file (examples in schedules/campaign/)") from None
    except YamlFileError as exc:
        raise ScheduleError(str(exc)) from None
    if not isinstance(doc, dict):
        raise ScheduleError(f"{p}: expected a mapping with cron, stacks and results")
    unknown = sorted(set(doc) - KEYS)
    if unknown:
        raise ScheduleError(f"{p}: unknown key(s) {', '.join(unknown)}; allowed: {', '.join(sorted(KEYS))}")
    for key in ("cron", "stacks", "results"):
        if not doc.get(key):
            raise ScheduleError(f"{p}: {key} is required (see schedules/campaign/weekly-spot.yaml)")
    check_cron(doc["cron"])
    stacks = doc["stacks"] if isinstance(doc["stacks"], list) else [doc["stacks"]]
    try:
        timeout = parse_duration(doc["timeout"]) if doc.get("timeout") is not None else None
        poll = parse_duration(doc.get("poll", 300))
        concurrency = int(doc.get("concurrency", 4))
    except ValueError as exc:
        raise ScheduleError(f"{p}: {exc}") from None
    if concurrency < 1:
        raise ScheduleError(f"{p}: concurrency must be at least 1, got {concurrency}")
    if poll_problem(poll, "poll"):
        raise ScheduleError(f"{p}: {poll_problem(poll, 'poll')}")
    return Schedule(
        name=str(doc.get("name") or p.stem),
        cron=str(doc["cron"]),
        stacks=tuple(map(str, stacks)),
        results=str(doc["results"]),
        concurrency=concurrency,
        poll=poll,
        timeout=timeout,
        out=doc.get("out"),
        retry_failed=bool(doc.get("retry_failed", False)),
        path=str(p),
    )


def describe(path: str | Path, now_id: str) -> dict[str, Any]:
    """What `campaign schedule FILE` shows; `now_id`, a campaign id made now, shows what the next looks like."""
    sch = load(path)
    return {
        "name": sch.name,
        "cron": sch.cron,
        "systemd_oncalendar": to_oncalendar(sch.cron),
        "stacks": list(sch.stacks),
        "results": sch.results,
        "concurrency": sch.concurrency,
        "poll_seconds": sch.poll,
        "timeout_seconds": sch.timeout,
        "command": f"python -m analysis campaign run --schedule {path}",
        "next_campaign_id_looks_like": now_id,
    }
