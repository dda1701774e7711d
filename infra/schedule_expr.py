"""Schedule expressions of recurring runs: `rate(4 hours)`, AWS `cron(0 */4 * * ? *)`, unix `0 */4 * * *`:
one parser for the monthly bill and the schedulers (EventBridge: rate()/6-field cron; Cloud Scheduler: unix).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date, timedelta
from fractions import Fraction

from infra.catalog.errors import CatalogError

# A full Gregorian cycle: 400 years = 146097 days = 20871 weeks exactly, so
# averaging firings over it is exact for every cron pattern (weekdays, leap days).
CYCLE_START = date(2001, 1, 1)
CYCLE_DAYS = 146097

_RATE = re.compile(r"^rate\(\s*(\d+)\s+(minute|minutes|hour|hours|day|days)\s*\)$")
_UNIT_MINUTES = {"minute": 1, "hour": 60, "day": 1440}
_MONTHS = {m: i + 1 for i, m in enumerate("JAN FEB MAR APR MAY JUN JUL AUG SEP OCT NOV DEC".split())}
_UNIX_DOW = {d: i for i, d in enumerate("SUN MON TUE WED THU FRI SAT".split())}

EXAMPLES = "e.g. 'rate(4 hours)', 'cron(0 */4 * * ? *)' (AWS) or '0 */4 * * *' (unix cron)"


class ScheduleError(CatalogError):
    """A schedule expression this project cannot read or translate."""


def _field(text: str, lo: int, hi: int, names: dict[str, int], what: str, expr: str) -> frozenset[int]:
    """Values of one cron field: *, a, a-b, */n, a-b/n, lists, names."""
    out: set[int] = set()
    for part in text.split(","):
        step, stepped = 1, "/" in part
        if stepped:
            part, step_text = part.split("/", 1)
            if not step_text.isdigit() or int(step_text) == 0:
                raise ScheduleError(f"{expr!r}: step {step_text!r} in the {what} field must be a positive number")
            step = int(step_text)
        if part == "*":
            a, b = lo, hi
        else:
            bounds = part.split("-")
            if len(bounds) > 2 or not all(bounds):
                raise ScheduleError(f"{expr!r}: cannot read {part!r} in the {what} field ({EXAMPLES})")
            bad = next((v for v in bounds if not v.isdigit() and v.upper() not in names), None)
            if bad is not None:
                raise ScheduleError(
                    f"{expr!r}: {bad.upper()!r} in the {what} field is not a number"
                    " (L, W and # are not supported; list the days instead)"
                )
            a, b = (int(v) if v.isdigit() else names[v.upper()] for v in (bounds[0], bounds[-1]))
            if stepped and len(bounds) == 1:  # "5/15": from 5 to the end, every 15
                b = hi
        if not (lo <= a <= hi and lo <= b <= hi and a <= b):
            raise ScheduleError(f"{expr!r}: {part!r} is outside {lo}-{hi} in the {what} field")
        out.update(range(a, b + 1, step))
    return frozenset(out)


@dataclass(frozen=True)
class Schedule:
    """A parsed recurring schedule (UTC)."""

    text: str
    every_minutes: int | None = None  # rate()
    minutes: frozenset[int] = frozenset()
    hours: frozenset[int] = frozenset()
    days_of_month: frozenset[int] | None = None  # None: any day
    months: frozenset[int] = frozenset(range(1, 13))
    days_of_week: frozenset[int] | None = None  # 0 = Sunday; None: any day

    def runs_per_day(self) -> Fraction:
        """Mean firings per day, exact, over a full 400-year calendar cycle."""
        if self.every_minutes is not None:
            return Fraction(1440, self.every_minutes)
        days = (CYCLE_START + timedelta(days=i) for i in range(CYCLE_DAYS))
        matching = sum(1 for day in days if day.month in self.months and self._day_matches(day))
        return Fraction(len(self.minutes) * len(self.hours) * matching, CYCLE_DAYS)

    def _day_matches(self, day: date) -> bool:
        dom = self.days_of_month is None or day.day in self.days_of_month
        dow = self.days_of_week is None or (day.isoweekday() % 7) in self.days_of_week
        if self.days_of_month is not None and self.days_of_week is not None:
            return dom or dow  # unix cron: either restricted field matches
        return dom and dow

    def runs_per_month(self, hours_per_month: Fraction | float) -> Fraction:
        return self.runs_per_day() * Fraction(hours_per_month) / 24

    # --- the forms each scheduler accepts ---------------------------------
    def aws(self) -> str:
        """EventBridge Scheduler form: rate(...) or cron(6 fields)."""
        if self.every_minutes is not None:
            for unit, size in (("day", 1440), ("hour", 60), ("minute", 1)):
                if self.every_minutes % size == 0:
                    n = self.every_minutes // size
                    return f"rate({n} {unit}{'s' if n != 1 else ''})"
        f = self._unix_fields()
        dom, dow = f[2], f[4]
        if dow != "*":
            # AWS numbers weekdays 1 (Sunday) to 7; one of dom/dow must be '?'.
            if dom != "*":
                raise ScheduleError(
                    f"{self.text!r}: EventBridge cron cannot restrict both day of month and day of week"
                )
            dow = ",".join(str(d + 1) for d in sorted(self.days_of_week or ()))
            dom = "?"
        else:
            dow = "?"
        return f"cron({f[0]} {f[1]} {dom} {f[3]} {dow} *)"

    def unix(self) -> str:
        """Cloud Scheduler form: unix cron, five fields."""
        if self.every_minutes is not None:
            n = self.every_minutes
            if n < 60 and 60 % n == 0:
                return f"*/{n} * * * *" if n > 1 else "* * * * *"
            if n == 1440:
                return "0 0 * * *"
            if n % 60 == 0 and 24 % (n // 60) == 0:
                h = n // 60
                return f"0 {'*' if h == 1 else f'*/{h}'} * * *"
            raise ScheduleError(
                f"{self.text!r}: every {n} minutes does not divide a day, so it has no unix cron form; "
                "give a cron expression instead"
            )
        return " ".join(self._unix_fields())

    def _unix_fields(self) -> list[str]:
        def show(values: frozenset[int] | None, lo: int, hi: int) -> str:
            if values is None or values == frozenset(range(lo, hi + 1)):
                return "*"
            return ",".join(str(v) for v in sorted(values))

        bounds = ((self.minutes, 0, 59), (self.hours, 0, 23), (self.days_of_month, 1, 31), (self.months, 1, 12))
        return [show(*b) for b in (*bounds, (self.days_of_week, 0, 6))]


def parse_schedule(text: str) -> Schedule:
    """Read a rate(), AWS cron() or unix cron expression; errors name the fix."""
    expr = " ".join(str(text).split())
    m = _RATE.match(expr)
    if m:
        n, unit = int(m.group(1)), m.group(2).rstrip("s")
        if n == 0:
            raise ScheduleError(f"{expr!r}: a rate must be at least 1 {unit}")
        return Schedule(text=expr, every_minutes=n * _UNIT_MINUTES[unit])
    if expr.startswith("rate("):
        raise ScheduleError(f"{expr!r}: a rate is 'rate(N minutes|hours|days)', e.g. 'rate(4 hours)'")
    aws = expr.startswith("cron(") and expr.endswith(")")
    fields = expr[5:-1].split() if aws else expr.split()
    if aws:
        if len(fields) != 6:
            raise ScheduleError(f"{expr!r}: AWS cron() has six fields (min hour day-of-month month day-of-week year)")
        if fields[5] not in ("*", "?"):
            raise ScheduleError(f"{expr!r}: the year field must be '*' for a recurring benchmark")
        if "?" not in (fields[2], fields[4]):
            raise ScheduleError(f"{expr!r}: AWS cron needs '?' in day-of-month or day-of-week")
        fields = fields[:5]
    elif len(fields) != 5:
        raise ScheduleError(f"{expr!r} is not a schedule expression ({EXAMPLES})")
    minute, hour, dom, month, dow = fields
    days_of_week = None
    if dow not in ("*", "?"):
        if aws:  # AWS: 1 = Sunday .. 7 = Saturday
            raw = _field(dow, 1, 7, {k: v + 1 for k, v in _UNIX_DOW.items()}, "day-of-week", expr)
            days_of_week = frozenset(d - 1 for d in raw)
        else:  # unix: 0 or 7 = Sunday
            days_of_week = frozenset(d % 7 for d in _field(dow, 0, 7, _UNIX_DOW, "day-of-week", expr))
    return Schedule(
        text=expr,
        minutes=_field(minute, 0, 59, {}, "minute", expr),
        hours=_field(hour, 0, 23, {}, "hour", expr),
        days_of_month=None if dom in ("*", "?") else _field(dom, 1, 31, {}, "day-of-month", expr),
        months=_field(month, 1, 12, _MONTHS, "month", expr),
        days_of_week=days_of_week,
    )
