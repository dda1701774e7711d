"""Warns when the newest catalog price an answer used is old: a snapshot a year old can be far from today's bill.
Callers pass catalog dates only (a price a run recorded at launch is what was paid, not a quote)."""

from __future__ import annotations

import math
import os
import sys
from collections.abc import Iterable
from datetime import date

from payload.exitcodes import UsageError

ENV = "GPUBENCH_MAX_PRICE_AGE_DAYS"
DEFAULT_DAYS = 365
REFRESH = "gpubench prices refresh"


def add_argument(parser) -> None:
    parser.add_argument(
        "--max-price-age",
        type=float,
        metavar="DAYS",
        help=f"warn when the newest catalog price used is older than DAYS (default: ${ENV} or {DEFAULT_DAYS}; 0 turns it off)",
    )


def limit(option: float | None) -> float:
    """The age limit in days: the option, else $GPUBENCH_MAX_PRICE_AGE_DAYS, else 365; a UsageError
    when either is not a number of days (commands call it before any work to check them)."""
    if option is not None:
        value, where = option, "--max-price-age"
    elif os.environ.get(ENV):
        where = ENV
        try:
            value = float(os.environ[ENV])
        except ValueError:
            raise UsageError(
                f"{ENV}={os.environ[ENV]!r} is not a number of days (e.g. 365; 0 turns the warning off)"
            ) from None
    else:
        return DEFAULT_DAYS
    if not math.isfinite(value) or value < 0:
        raise UsageError(f"{where} {value!r}: give a number of days >= 0 (0 turns the warning off)")
    return value


def as_date(value) -> date | None:
    """A date, or the date an ISO text starts with; None for anything else."""
    if isinstance(value, date):
        return value
    try:
        return date.fromisoformat(str(value)[:10])
    except ValueError:
        return None


def warning(dates: Iterable, max_days: float, today: date | None = None) -> str | None:
    """A warning naming the newest price date when it is older than `max_days`."""
    known = [d for d in (as_date(v) for v in dates) if d is not None]
    if not known or max_days == 0:
        return None
    newest = max(known)
    age = ((today or date.today()) - newest).days
    if age <= max_days:
        return None
    return (
        f"the newest catalog price used is from {newest.isoformat()}, {age} days old "
        f"(limit {max_days:g} days, --max-price-age or ${ENV}); refresh with `{REFRESH}`"
    )


def report(dates: Iterable, max_price_age: float | None, as_of: date | None = None) -> None:
    """Print the warning (stderr) for the dates a command priced from, unless it priced at --as-of."""
    if as_of is not None:
        return  # an explicit date asks for that day's prices, old or not
    text = warning(dates, limit(max_price_age))
    if text:
        print(f"warning: {text}", file=sys.stderr)
