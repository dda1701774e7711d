"""Walks over an argparse tree, shared by the CLI tests that check every subcommand (a uniquely named
module: several test directories sit on sys.path in one session)."""

from __future__ import annotations

import argparse
from collections.abc import Iterator

Node = tuple[tuple[str, ...], argparse.ArgumentParser]


def subcommands(parser: argparse.ArgumentParser) -> list[argparse._SubParsersAction]:
    """The parser's sub-command actions (argparse keeps them among its private _actions)."""
    return [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]


def all_parsers(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()) -> Iterator[Node]:
    """(command words, parser) for the parser itself and every sub-command below it, groups included."""
    yield path, parser
    for action in subcommands(parser):
        for name, child in action.choices.items():
            yield from all_parsers(child, (*path, name))


def leaves(parser: argparse.ArgumentParser) -> Iterator[Node]:
    """(command words, parser) for every runnable sub-command: the nodes with no sub-commands of their own."""
    return ((path, node) for path, node in all_parsers(parser) if not subcommands(node))
