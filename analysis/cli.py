"""`gpubench` (and `python -m analysis`): one command for everything. Subcommands live in
analysis/commands/, one module each; they raise, and payload.entrypoint.guarded turns every error
into a message and a documented exit code (payload/exitcodes.py), never a traceback."""

from __future__ import annotations

import argparse
import contextlib
import importlib
import os
import sys
from importlib.metadata import PackageNotFoundError, version

from analysis.bench.signals import stop_signals_as_interrupt
from analysis.commands import COMMANDS, check_results_locations, module_of
from analysis.options import check_bounds
from infra.catalog import load_catalog
from infra.projectfiles import known_stacks
from payload import exitcodes
from payload.entrypoint import debug_requested, guarded
from payload.exitcodes import UsageError
from payload.terminal import safe_terminal

DESCRIPTION = """\
Where should we train, and what will it cost? Find and price GPU offerings, plan
and launch benchmark stacks, collect their results, tear them down and report.

Start here (no cloud account, no Pulumi needed):
  gpubench offers --gpu T4:1               what you can rent, cheapest first
  gpubench cost aws-g4dn-1x --hours 6      what a stack costs for 6 hours
  gpubench plan aws-g4dn-1x                what `up` would launch and its cost bound
  gpubench check                           what is installed and reachable
  gpubench demo                            a short real benchmark on this machine
  gpubench bench task.yaml --local         where YOUR job should run: probed, extrapolated

Conventions: a stack is named positionally or with -s/--stack, and a stack name
works wherever an offering id does; commands that launch or destroy show what
they will do and its cost, then ask (--yes skips); --json for scripts.

Offering ids:
  aws/<instance-type>                aws/p3.8xlarge
  gcp/<machine-type>+<n>x<gpu>       gcp/n1-standard-8+1xv100 (N1 + attached GPUs)
  gcp/<machine-type>                 gcp/a2-highgpu-1g (GPUs built in)
  <provider>/<product>               hetzner/ex51-ssd-gpu, leadergpu/2xp100
  onprem/<box>                       onprem/parkopedia-4x1080ti
  local/this-machine                 the machine you run on (gpubench demo)
"""


def package_version() -> str:
    try:
        return version("gpubench")
    except PackageNotFoundError:
        return "(not installed: run from a checkout)"


def build_parser(prog: str | None = None, command: str | None = None) -> argparse.ArgumentParser:
    """The CLI's parser: without `command`, every command's (completion, tests); with a command's name, only
    its module is imported; with any other word (or ""), the summaries alone: `--help` imports no command."""
    parser = argparse.ArgumentParser(
        prog=prog or "gpubench",
        description=DESCRIPTION,
        epilog="exit codes:\n" + "\n".join(f"  {code:<4} {text}" for code, text in exitcodes.TABLE.items()),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--debug", action="store_true", help="show the traceback of an unexpected error (or GPUBENCH_DEBUG=1)"
    )
    parser.add_argument("--version", action="version", version=f"gpubench {package_version()}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    if command in COMMANDS:
        importlib.import_module(module_of(command)).register(sub)
    elif command is not None:  # bare parsers: enough for `gpubench --help` and its usage errors
        for name, summary in COMMANDS.items():
            sub.add_parser(name, **({} if summary is None else {"help": summary}))
    else:  # every module (on the base install too: a command module imports no extra at its top)
        for module in dict.fromkeys(map(module_of, COMMANDS)):
            importlib.import_module(module).register(sub)
    return parser


def _command_of(argv: list[str]) -> str:
    return next((a for a in argv if not a.startswith("-")), "")


def main(argv: list[str] | None = None, prog: str | None = None) -> int:
    """Parse, check every argument, run the command; every error goes through payload.entrypoint.guarded."""
    if prog is None:
        prog = "gpubench" if os.path.basename(sys.argv[0]) == "gpubench" else "python -m analysis"
    argv = list(sys.argv[1:] if argv is None else argv)
    command = _command_of(argv)
    # What a bucket, a job or a manifest wrote reaches the terminal only through payload.terminal;
    # a pass-through command (the payload itself) keeps its own output byte for byte, and its own
    # signal handling. SIGTERM and SIGHUP (`timeout`, a closed terminal, a cancelled CI job) end every
    # other command as Ctrl-C does: a collect lets go of the table's lock, a campaign records its stacks.
    passthrough = command == PASSTHROUGH
    parsed: list[argparse.Namespace] = []  # the arguments, once parsed: their --debug asks for tracebacks
    with (
        contextlib.nullcontext() if passthrough else safe_terminal(),
        contextlib.nullcontext() if passthrough else stop_signals_as_interrupt(),
    ):
        return guarded(
            lambda: _run(argv, prog, parsed),
            prog=f"{prog} {command}".strip(),
            debug=lambda: debug_requested() or any(a.debug for a in parsed),
        )


PASSTHROUGH = "payload"  # the command whose words (`payload --help`, `payload run ...`) go to its own parser as is


def _run(argv: list[str], prog: str, parsed: list[argparse.Namespace]) -> int:
    command = _command_of(argv)
    completing = "_ARGCOMPLETE" in os.environ  # the shell asks for completions: every command
    parser = build_parser(prog, None if completing else command)
    if completing:
        complete(parser)  # prints the completions and exits
    at = argv.index(command) + 1 if command == PASSTHROUGH else len(argv)
    args = parser.parse_args(argv[:at])
    if command == PASSTHROUGH:
        args.rest = argv[at:]
    parsed.append(args)
    _check_directories(args)
    if getattr(args, "results", None):
        check_results_locations(args.results if isinstance(args.results, list) else [args.results], "--results")
    check_bounds(vars(args), flags=_typed_flags(parser, argv))
    return int(args.func(args) or 0)


def _typed_flags(parser: argparse.ArgumentParser, argv: list[str]) -> dict[str, str]:
    """dest -> the option string the user typed for it (`--deadline`, where the dest is `deadline_hours`)."""
    typed = {a.split("=", 1)[0] for a in argv if a.startswith("--")}
    return {a.dest: option for a in every_action(parser) for option in a.option_strings if option in typed}


# Options that name a directory a command writes into (or, for demo, its local bucket).
_DIRECTORY_OPTIONS = ("out", "table", "results", "project_dir")


def _check_directories(args) -> None:
    """`--out FILE` (or --table FILE) is refused before any work (a collect or demo would fail at its very end)."""
    for name in _DIRECTORY_OPTIONS:
        values = getattr(args, name, None)
        for value in values if isinstance(values, list) else [values]:
            if isinstance(value, str) and "://" not in value and os.path.isfile(value):
                flag = "--" + name.replace("_", "-")
                raise UsageError(
                    f"{flag} {value!r} is a file, not a directory; give a directory (it is created if missing)"
                )


# Shell completion (argcomplete; $_ARGCOMPLETE set): arguments (by argparse dest) that take a stack name or
# glob, and those that take an offering id (`cost` takes an offering id or a stack).
STACK_DESTS = frozenset({"stack_positional", "stack_option", "stacks", "stack"})
OFFERING_DESTS = frozenset({"offering", "base"})


def stack_names(prefix: str = "", **_) -> list[str]:
    return [n for n in known_stacks() if n.startswith(prefix)]


def offering_ids(prefix: str = "", **_) -> list[str]:
    ids = [o.id for o in load_catalog().offerings()]
    return [i for i in [*ids, *stack_names()] if i.startswith(prefix)]


def every_action(parser: argparse.ArgumentParser):
    """Every argument of the parser and of its subcommands (a tree: no command has an alias)."""
    for action in parser._actions:
        yield action
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                yield from every_action(sub)


def attach_completers(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """Stack names for every stack argument, offering ids for every offering argument."""
    for action in every_action(parser):
        if action.dest in STACK_DESTS:
            action.completer = stack_names  # type: ignore[attr-defined]
        elif action.dest in OFFERING_DESTS:
            action.completer = offering_ids  # type: ignore[attr-defined]
    return parser


def complete(parser: argparse.ArgumentParser) -> None:
    """The shell asks ($_ARGCOMPLETE): print the completions and exit."""
    try:
        import argcomplete  # only when the shell asks: 8 ms on every other command
    except ImportError:  # completion installed in the shell, the library not in this environment
        raise SystemExit(1) from None
    argcomplete.autocomplete(attach_completers(parser))
