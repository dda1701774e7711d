"""`payload`: the benchmark runner itself (`run`, `list`, `flush`), as on an instance."""

from __future__ import annotations

import argparse


def register(sub) -> None:
    p = sub.add_parser(
        "payload", help="run, list or flush benchmarks here (the same as `python -m payload`)", add_help=False
    )
    p.add_argument("rest", nargs=argparse.REMAINDER)
    p.set_defaults(func=run)


def run(args) -> int:
    from payload.cli import main

    return main(args.rest or ["--help"])
