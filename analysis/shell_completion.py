"""Shell completion for `gpubench` (argcomplete): subcommands and options from the parser, stack names and
offering ids from the stacks and catalog. Nothing here runs unless the shell asks ($_ARGCOMPLETE set)."""

from __future__ import annotations

import argparse

from infra.catalog import load_catalog
from infra.conventions import known_stacks

SHELLS = ("bash", "zsh", "fish")
# Arguments (by argparse dest) that take a stack name or glob; `cost` takes an offering id or a stack.
STACK_DESTS = frozenset({"stack_positional", "stack_option", "stacks", "stack"})
OFFERING_DESTS = frozenset({"offering", "base"})


def stack_names(prefix: str = "", **_) -> list[str]:
    return [n for n in known_stacks() if n.startswith(prefix)]


def offering_ids(prefix: str = "", **_) -> list[str]:
    ids = [o.id for o in load_catalog().offerings()]
    return [i for i in [*ids, *stack_names()] if i.startswith(prefix)]


def every_action(parser: argparse.ArgumentParser):
    """Every argument of the parser and of its subcommands, once."""
    seen: set[int] = set()
    stack = [parser]
    while stack:
        current = stack.pop()
        if id(current) in seen:
            continue
        seen.add(id(current))
        for action in current._actions:
            yield action
            if isinstance(action, argparse._SubParsersAction):
                stack.extend(action.choices.values())


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


def script(shell: str, prog: str = "gpubench") -> str:
    """The shell code that makes `shell` ask `prog` for completions (argcomplete must be installed)."""
    import argcomplete  # as above

    return argcomplete.shellcode([prog], shell=shell)
