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

from infra.conventions import RESULTS_HELP
from payload import exitcodes

INSTALL_HINT = (
    "the Pulumi CLI is not installed (needed for `{cmd}`).\n"
    "Install it: `curl -fsSL https://get.pulumi.com | sh` (or `brew install pulumi`), then `pulumi login`.\n"
    "Offline alternatives that need no CLI: `python -m infra preview STACK` and `python -m infra stacks --check`."
)
CLI_COMMANDS = ("up", "destroy", "refresh")


def _catalog():
    from infra.catalog import load_catalog

    return load_catalog()


def stacks_command(check: bool) -> int:
    """`stacks`: write stacks/ from the catalog matrix, or with `check` say what is stale; an exit code."""
    from infra import stacks

    if check:
        problems = stacks.check(_catalog())
        for p in problems:
            print(p, file=sys.stderr)
        if problems:
            print(f"stacks/ is stale ({len(problems)} problems): run `python -m infra stacks`", file=sys.stderr)
            return exitcodes.FAILED
        print("stacks/ is up to date")
        return 0
    changed = stacks.write(_catalog())
    print("\n".join(changed) if changed else "stacks/ already up to date")
    return 0


def preview_command(
    stack: str | None,
    *,
    all_stacks: bool = False,
    as_json: bool = False,
    show_user_data: bool = True,
    results: str | None = None,
) -> int:
    """`preview`: print one stack (or every one) rendered under Pulumi's mocks; an exit code."""
    from infra import preview, stacks

    if all_stacks == bool(stack):
        print("preview needs exactly one of STACK or --all", file=sys.stderr)
        return exitcodes.USAGE
    names = stacks.stack_names() if all_stacks else [stack]
    text = preview.run(
        names, _catalog(), as_json=as_json, single=not all_stacks, show_user_data=show_user_data, results=results
    )
    print(text)
    return 0


def cmd_stacks(args) -> int:
    return stacks_command(args.check)


def cmd_preview(args) -> int:
    return preview_command(
        args.stack,
        all_stacks=args.all,
        as_json=args.json,
        show_user_data=not args.no_user_data,
        results=getattr(args, "results", None),
    )


def cmd_pulumi(args) -> int:
    exe = shutil.which("pulumi")
    if exe is None:
        print("error: " + INSTALL_HINT.format(cmd=f"python -m infra {args.command}"), file=sys.stderr)
        return exitcodes.MISSING
    argv = [exe, args.command, "--stack", args.stack, *args.extra]
    os.execv(exe, argv)
    return 0  # pragma: no cover


def _campaign_moved(args) -> int:
    command = f"gpubench campaign {' '.join(args.rest)}".rstrip()
    print(
        f"error: campaigns moved up a layer (they collect, report and tear down): run `{command}` "
        "(or `python -m analysis campaign ...`)",
        file=sys.stderr,
    )
    return exitcodes.USAGE


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
    pv.add_argument("--results", metavar="PATH", help=RESULTS_HELP)
    pv.set_defaults(func=cmd_preview)
    for name in CLI_COMMANDS:
        c = sub.add_parser(name, help=f"pulumi {name} --stack STACK (needs the Pulumi CLI)")
        c.add_argument("stack")
        c.add_argument("extra", nargs=argparse.REMAINDER)
        c.set_defaults(func=cmd_pulumi)
    from infra.ssh.cli import register as register_ssh  # `python -m infra ssh STACK` (infra/ssh/, docs/ssh.md)

    register_ssh(sub)
    moved = sub.add_parser(
        "campaign", help="moved: `gpubench campaign` (or `python -m analysis campaign`)", add_help=False
    )
    moved.add_argument("rest", nargs=argparse.REMAINDER)
    moved.set_defaults(func=_campaign_moved)
    return ap


def main(argv: Sequence[str] | None = None) -> int:
    from infra.config import ConfigError

    args = parser().parse_args(argv)
    try:
        return args.func(args)
    except (ConfigError, FileNotFoundError, KeyError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return exitcodes.USAGE
