"""The options the commands share: --table and --results (and their environment variables), a stack named
positionally or with -s, --yes, and the sane bounds of numeric options (`check_bounds`, run on every command)."""

from __future__ import annotations

import argparse
import math
import os
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from payload.exitcodes import UsageError

# The results table (the dataset `collect` writes and report, plan, preview and demo read).
TABLE_ENV = "GPUBENCH_TABLE"
DEFAULT_TABLE = "table"  # relative to the current directory, like every path a person gives
RESULTS_ENV = "GPUBENCH_RESULTS"


def table_location(value: str | None = None) -> str:
    """`--table` as given, else $GPUBENCH_TABLE, else `table` (relative to the current directory)."""
    return value or os.environ.get(TABLE_ENV) or DEFAULT_TABLE


def results_locations(values: Sequence[str] | None, default: str | None = None) -> list[str]:
    """`--results` as given (repeatable), else $GPUBENCH_RESULTS, else `default` (none: an empty list)."""
    if values:
        return list(values)
    env = os.environ.get(RESULTS_ENV)
    return [env] if env else ([default] if default else [])


def add_table_argument(parser: argparse.ArgumentParser, writes: bool = False) -> None:
    """`--table LOCATION`: the results table, the same option on every command that writes or reads it."""
    verb = "where collect writes the results table" if writes else "the results table to read (collect writes it)"
    where = f"a directory, or s3://bucket/table/ or gs://bucket/table/ (default: ${TABLE_ENV}, else ./{DEFAULT_TABLE})"
    parser.add_argument("--table", metavar="LOCATION", default=None, help=f"{verb}: {where}")


def add_stack_arguments(parser: argparse.ArgumentParser, many: bool = False, required: bool = True) -> None:
    """A stack named positionally or with -s/--stack (repeatable when `many`)."""
    nargs = "*" if many else "?"
    parser.add_argument("stack_positional", nargs=nargs, metavar="STACK", help="stack name, e.g. aws-g4dn-1x")
    same = "the same, as an option (repeatable)" if many else "the same, as an option"
    parser.add_argument("-s", "--stack", dest="stack_option", action="append", default=[], metavar="STACK", help=same)
    parser.set_defaults(_stack_many=many, _stack_required=required)


def stacks_of(args: argparse.Namespace) -> list[str]:
    """Every stack the user named, positional first; a usage error when none is and one is needed."""
    positional = args.stack_positional
    names = ([positional] if isinstance(positional, str) else list(positional or [])) + list(args.stack_option)
    if not names and args._stack_required:
        raise UsageError(
            "name a stack, e.g. `aws-g4dn-1x` or `-s aws-g4dn-1x` (list them with `gpubench stacks --list`)"
        )
    if len(names) > 1 and not args._stack_many:
        raise UsageError(f"this command takes one stack; got {', '.join(names)}")
    return names


def add_yes_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("-y", "--yes", action="store_true", help="do not ask for confirmation (scripts, CI)")


HOURS_PER_YEAR = 365.25 * 24


@dataclass(frozen=True)
class Bound:
    """The sane range of a numeric option: above `maximum` is refused, above `warn_above` is warned about."""

    flag: str
    maximum: float
    warn_above: float
    unit: str


# Options (by argparse dest) whose values are hours, money or counts; any command that has one is checked.
NUMBER_BOUNDS = {
    "hours": Bound("--hours", 10 * HOURS_PER_YEAR, HOURS_PER_YEAR, "hours"),
    "deadline_hours": Bound("--deadline-hours", 10 * HOURS_PER_YEAR, HOURS_PER_YEAR, "hours"),
    "minutes_up": Bound("--minutes-up", 10 * HOURS_PER_YEAR * 60, HOURS_PER_YEAR * 60, "minutes"),
    "hourly_usd": Bound("--hourly-usd", 100_000.0, 1_000.0, "USD per hour"),
    "max_price": Bound("--max-price", 100_000.0, 1_000.0, "USD per hour"),
    "budget_usd": Bound("--budget-usd", 100_000_000.0, 1_000_000.0, "USD"),
    "days_per_month": Bound("--days-per-month", 31.0, 31.0, "days"),
    "disk_gb": Bound("--disk-gb", 1_000_000.0, 100_000.0, "GB"),
    "poll": Bound("--poll", 7 * 24 * 3600.0, 24 * 3600.0, "seconds"),
}


def check_bounds(values: Mapping[str, object], flags: Mapping[str, str] | None = None) -> None:
    """Refuse an option (by argparse dest) above its sane maximum, warn about a large one; `flags` names
    the option as typed. Non-finite and negative values are left to each command's own check."""
    for dest, bound in NUMBER_BOUNDS.items():
        value = values.get(dest)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            continue
        flag = (flags or {}).get(dest, bound.flag)
        if value > bound.maximum:
            raise UsageError(
                f"{flag} {value:g} is more than the most it can sensibly be ({bound.maximum:,.0f} {bound.unit}); "
                "give a smaller value"
            )
        if value > bound.warn_above:
            print(
                f"warning: {flag} {value:g} is a lot ({bound.unit}, more than {bound.warn_above:,.0f}); "
                "check it is what you meant",
                file=sys.stderr,
            )
