"""Conventions every `gpubench` command shares: naming stacks, confirming before spending or
destroying, JSON output. One definition, so every command behaves the same."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from payload import exitcodes

# Where preview and plan read collected runs from (the table `collect` writes).
RESULTS_HELP = (
    "results table of collected runs, a results.parquet/.csv file or the directory holding it "
    "(default: report/ in the repository, where `gpubench collect` writes); without it, or without "
    "pandas, the estimate is the deadline bound"
)


def add_stack_arguments(parser: argparse.ArgumentParser, many: bool = False, required: bool = True) -> None:
    """A stack named positionally or with -s/--stack (repeatable when `many`)."""
    parser.add_argument(
        "stack_positional", nargs="*" if many else "?", metavar="STACK", help="stack name, e.g. aws-g4dn-1x"
    )
    parser.add_argument(
        "-s",
        "--stack",
        dest="stack_option",
        action="append",
        default=[],
        metavar="STACK",
        help="the same, as an option (repeatable)" if many else "the same, as an option",
    )
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


class UsageError(ValueError):
    """A bad argument; the CLI prints it and exits with exitcodes.USAGE."""


class Declined(RuntimeError):
    """The user did not confirm; nothing was done (exitcodes.DECLINED)."""


def confirm(what: Sequence[str], question: str, yes: bool, stdin=None, out=None) -> None:
    """Show what will happen (and what it costs at most), then ask; `--yes` skips the question.

    With no terminal to ask on, it refuses rather than guess: scripts pass --yes."""
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


def exit_code_of(exc: BaseException) -> int:
    """The documented exit code for the errors every command can raise."""
    from payload.extras import MissingExtra

    if isinstance(exc, Declined):
        return exitcodes.DECLINED
    if isinstance(exc, MissingExtra):
        return exitcodes.MISSING
    return exitcodes.USAGE
