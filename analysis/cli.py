"""`python -m analysis`: the command-line entry point. Subcommands live in
analysis/commands/, one module each."""

from __future__ import annotations

import argparse
import importlib
import pkgutil
import sys

from analysis import commands
from infra.catalog import CatalogError

DESCRIPTION = """\
Where should we train, and what will it cost? Price GPU offerings, collect
benchmark results and report on them.

Offering ids:
  aws/<instance-type>                aws/p3.8xlarge
  gcp/<machine-type>+<n>x<gpu>       gcp/n1-standard-8+1xv100 (N1 + attached GPUs)
  gcp/<machine-type>                 gcp/a2-highgpu-1g (GPUs built in)
  <provider>/<product>               hetzner/ex51-ssd-gpu, leadergpu/2xp100
  onprem/<box>                       onprem/parkopedia-4x1080ti
  local/this-machine                 the machine you run on (make demo)
"""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m analysis", description=DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for info in sorted(pkgutil.iter_modules(commands.__path__), key=lambda m: m.name):
        importlib.import_module(f"analysis.commands.{info.name}").register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except CatalogError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
