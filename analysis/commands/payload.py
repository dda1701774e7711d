"""`payload`: the benchmark runner itself (`run`, `list`, `flush`), as on an instance.

Here, above infra, the catalog is known: `payload run --offering ID` (or $GPUBENCH_OFFERING) must be
one of its offerings, so a mistyped id is refused before anything trains and is never recorded."""

from __future__ import annotations

import argparse
import os

from analysis.commands import add_command
from infra.catalog import load_catalog
from payload.cli import main


def register(sub) -> None:
    p = add_command(sub, "payload", run, add_help=False)
    p.add_argument("rest", nargs=argparse.REMAINDER)


def offering_given(rest: list[str]) -> str | None:
    """The --offering of a `payload run` command line (the last one wins, as argparse does), else $GPUBENCH_OFFERING."""
    found = os.environ.get("GPUBENCH_OFFERING") or None
    for i, arg in enumerate(rest):
        if arg == "--offering" and i + 1 < len(rest):
            found = rest[i + 1]
        elif arg.startswith("--offering="):
            found = arg.split("=", 1)[1]
    return found


def run(args) -> int:
    rest = list(args.rest)
    offering = offering_given(rest) if rest[:1] == ["run"] else None
    if offering is not None:
        load_catalog().get(offering)  # UnknownOffering names the id and the closest ones
    return main(rest or ["--help"])
