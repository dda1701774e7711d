"""The command-line conventions every `gpubench` command shares: --table and --results, naming stacks
(positional or -s, globs, did-you-mean), `UsageError`, `Declined` and --yes, numeric bounds."""

from __future__ import annotations

import argparse
import difflib
import fnmatch
import math
import os
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from infra.projectfiles import STACKS_DIR, ssh_stack_names, stack_names
from payload import exitcodes

# The results table (the dataset `collect` writes and report, plan, preview and demo read).
TABLE_ENV = "GPUBENCH_TABLE"
DEFAULT_TABLE = "table"
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


class UsageError(exitcodes.GpubenchError, ValueError):
    """A bad argument; nothing was done."""

    exit_code = exitcodes.USAGE


class Declined(exitcodes.GpubenchError, RuntimeError):
    """The user did not confirm; nothing was done."""

    exit_code = exitcodes.DECLINED


def confirm(what: Sequence[str], question: str, yes: bool, stdin=None, out=None) -> None:
    """Show what will happen (and its most cost), then ask; `--yes` skips it; no terminal: refused."""
    stdin = stdin or sys.stdin
    out = out or sys.stderr
    for line in what:
        print(line, file=out)
    if yes:
        return
    if not stdin.isatty():
        raise Declined(f"{question} Not confirmed: no terminal to ask on; pass --yes to go ahead")
    print(f"{question} [y/N] ", end="", file=out, flush=True)
    answer = stdin.readline().strip().lower()
    if answer not in ("y", "yes"):
        raise Declined("not confirmed; nothing was done")


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


def known_stacks(stacks_dir=None) -> list[str]:
    """Every stack with a file in stacks/ (cloud, results and SSH stacks)."""
    folder = STACKS_DIR if stacks_dir is None else stacks_dir
    return stack_names(folder) + ssh_stack_names(folder)


def expand_stacks(patterns: Sequence[str], known: Sequence[str], where: str = "stacks/") -> list[str]:
    """Stack names as given, globs expanded over `known`; a UsageError for any that names nothing (checked
    before any tool is looked for: a typo is named as one, not as a missing Pulumi CLI)."""
    chosen: dict[str, None] = {}
    for pattern in patterns:
        hits = fnmatch.filter(known, pattern) if GLOB_CHARS & set(pattern) else [pattern] * (pattern in known)
        if not hits:
            raise UsageError(
                f"stack {pattern!r} matches no stack in {where}.{did_you_mean(pattern, known)} "
                "List them with `gpubench stacks --list`."
            )
        for name in sorted(hits):
            chosen.setdefault(name)
    return list(chosen)


GLOB_CHARS = frozenset("*?[")
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
