"""`python -m infra`: stacks [--check], preview STACK | --all [--json], and CLI pass-throughs.

Commands that need the Pulumi CLI (up, destroy, refresh) run it when installed and
otherwise fail with how to install it; everything else works offline.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
from collections.abc import Sequence

from infra import stacks
from infra.catalog import load_catalog
from infra.projectfiles import expand_stacks, from_checkout, known_stacks, user_project_dir
from infra.ssh.cli import register as register_ssh
from infra.workspace import PulumiMissing, cli_context, project_dir
from payload import exitcodes
from payload.entrypoint import guarded
from payload.exitcodes import UsageError
from payload.terminal import safe_terminal

CLI_COMMANDS = ("up", "destroy", "refresh")


def _stacks_dir(write: bool):
    """A checkout's stacks/; for a packaged install your copy (made when writing; checking reads the
    shipped files until you have one)."""
    if from_checkout():
        return stacks.STACKS_DIR
    if write:
        return project_dir() / "stacks"
    mine = user_project_dir() / "stacks"
    return mine if mine.is_dir() else stacks.STACKS_DIR


def cmd_stacks(args) -> int:
    """`stacks`: write stacks/ from the catalog matrix, or with `--check` say what is stale."""
    folder = _stacks_dir(write=not args.check)
    if args.check:
        problems = stacks.check(load_catalog(), folder)
        for p in problems:
            print(p, file=sys.stderr)
        if problems:
            print(f"stacks/ is stale ({len(problems)} problems): run `python -m infra stacks`", file=sys.stderr)
            return exitcodes.FAILED
        print("stacks/ is up to date")
        return 0
    changed = stacks.write(load_catalog(), folder)
    print("\n".join(changed) if changed else "stacks/ already up to date")
    return 0


def cmd_preview(args) -> int:
    """`preview`: one stack (or every one) rendered under mocks, costs the deadline bound. `--table` is
    refused: infra never reads the results table (`gpubench preview` does)."""
    from infra import preview  # heavy: pulumi (infra.render); `stacks` and the pass-throughs run without it

    if args.all == bool(args.stack):
        raise UsageError("preview needs exactly one of STACK or --all")
    if args.results:
        raise UsageError(
            f"`python -m infra preview` does not read results tables ({args.results}): "
            f"run `gpubench preview {args.stack or '--all'} --table {args.results}` to estimate from collected runs"
        )
    names = stacks.stack_names() if args.all else [args.stack]
    catalog = load_catalog()
    print(preview.run(names, catalog, as_json=args.json, single=not args.all, show_user_data=not args.no_user_data))
    return 0


def cmd_pulumi(args) -> int:
    names = expand_stacks([args.stack], known_stacks())  # a typo is named before the CLI is needed
    if len(names) != 1:
        raise UsageError(f"`python -m infra {args.command}` takes one stack; {args.stack!r} selects {', '.join(names)}")
    args.stack = names[0]
    exe = shutil.which("pulumi")
    if exe is None:
        offline = "`python -m infra preview STACK` and `python -m infra stacks --check` need none"
        raise PulumiMissing(f"needed for `python -m infra {args.command}`; offline, {offline}")
    project, env = cli_context()  # the checkout, or a packaged install's copy: from any directory
    argv = [exe, args.command, "--stack", args.stack, *args.extra]
    os.chdir(project)
    os.execve(exe, argv, env)
    return 0  # pragma: no cover


def _campaign_moved(args) -> int:
    command = f"gpubench campaign {' '.join(args.rest)}".rstrip()
    raise UsageError(
        f"campaigns moved up a layer (they collect, report and tear down): run `{command}` "
        "(or `python -m analysis campaign ...`)"
    )


def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="python -m infra", description=__doc__)
    sub = ap.add_subparsers(dest="command", required=True)
    st = sub.add_parser("stacks", help="write stacks/Pulumi.<stack>.yaml for the catalog matrix")
    st.add_argument("--check", action="store_true", help="fail when stacks/ is stale instead of writing")
    st.set_defaults(func=cmd_stacks)
    pv = sub.add_parser("preview", help="render a stack offline under mocks (no CLI, no credentials)")
    pv.add_argument("stack", nargs="?")
    pv.add_argument("--all", action="store_true", help="every stack in stacks/")
    pv.add_argument("--json", action="store_true", help="machine-readable output")
    pv.add_argument("--no-user-data", action="store_true", help="omit the user-data from text output")
    estimating = "estimating from collected runs is `gpubench preview --table`"
    pv.add_argument("--table", "--results", dest="results", metavar="PATH", help=estimating)
    pv.set_defaults(func=cmd_preview)
    for name in CLI_COMMANDS:
        c = sub.add_parser(name, help=f"pulumi {name} --stack STACK (needs the Pulumi CLI)")
        c.add_argument("stack")
        c.add_argument("extra", nargs=argparse.REMAINDER)
        c.set_defaults(func=cmd_pulumi)
    register_ssh(sub)  # `python -m infra ssh STACK` (infra/ssh/, docs/ssh.md)
    moved = sub.add_parser(
        "campaign", help="moved: `gpubench campaign` (or `python -m analysis campaign`)", add_help=False
    )
    moved.add_argument("rest", nargs=argparse.REMAINDER)
    moved.set_defaults(func=_campaign_moved)
    return ap


def main(argv: Sequence[str] | None = None) -> int:
    """`python -m infra`: every error through payload.entrypoint.guarded (a message, a documented exit code)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    with safe_terminal():  # nothing a bucket or a job wrote reaches the terminal raw (payload.terminal)
        return guarded(lambda: (args := parser().parse_args(argv)).func(args), prog="python -m infra")
