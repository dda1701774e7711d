"""`gpubench` (and `python -m analysis`): one command for everything. Subcommands live in
analysis/commands/, one module each; errors become a message and a documented exit code
(payload/exitcodes.py), never a traceback."""

from __future__ import annotations

import argparse
import importlib
import os
import pkgutil
import sys

from analysis import commands
from payload import exitcodes

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


def _exit_table() -> str:
    rows = "\n".join(f"  {code:<4} {text}" for code, text in exitcodes.TABLE.items())
    return "exit codes:\n" + rows


def build_parser(prog: str | None = None) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=prog or "gpubench",
        description=DESCRIPTION,
        epilog=_exit_table(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for info in sorted(pkgutil.iter_modules(commands.__path__), key=lambda m: m.name):
        importlib.import_module(f"analysis.commands.{info.name}").register(sub)
    return parser


def _errors() -> tuple[type[BaseException], ...]:
    """Errors any command may raise that mean "bad input or missing piece", not a bug."""
    from infra.catalog import CatalogError
    from infra.config import ConfigError
    from infra.conventions import Declined, UsageError
    from infra.stacks import StackFileError
    from payload.config import ConfigError as PayloadOptionError
    from payload.extras import MissingExtra

    return (
        CatalogError,
        ConfigError,
        PayloadOptionError,
        StackFileError,
        UsageError,
        Declined,
        MissingExtra,
        FileNotFoundError,
    )


def main(argv: list[str] | None = None, prog: str | None = None) -> int:
    if prog is None:
        prog = "gpubench" if os.path.basename(sys.argv[0]) == "gpubench" else "python -m analysis"
    args = build_parser(prog).parse_args(argv)
    try:
        _check_directories(args)
        return int(args.func(args) or 0)
    except _errors() as exc:
        from infra.conventions import exit_code_of

        print(f"error: {exc}", file=sys.stderr)
        return exit_code_of(exc)
    except ModuleNotFoundError as exc:  # a library of an extra the install left out
        from payload.extras import MissingExtra, extra_of

        if extra_of(exc.name or "") is None:
            raise
        print(f"error: {MissingExtra(exc.name, f'`{prog} {args.command}`')}", file=sys.stderr)
        return exitcodes.MISSING
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return exitcodes.CANCELLED
    except BrokenPipeError:  # `gpubench offers | head`
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return exitcodes.OK
    except (FileExistsError, NotADirectoryError, IsADirectoryError, PermissionError) as exc:
        # a path the user gave that cannot be used as asked: say which, no traceback
        print(f"error: {exc.strerror or exc}: {exc.filename!s}; pass a path that can be used", file=sys.stderr)
        return exitcodes.USAGE
    except OSError as exc:  # disk full, I/O error: it ran, and failed
        print(f"error: {exc}", file=sys.stderr)
        return exitcodes.FAILED


# Options that name a directory a command writes into (or, for demo, its local bucket).
_DIRECTORY_OPTIONS = ("out", "results", "project_dir")


def _check_directories(args) -> None:
    """`--out FILE` is refused before any work (a collect or demo would fail at its very end)."""
    from infra.conventions import UsageError

    for name in _DIRECTORY_OPTIONS:
        values = getattr(args, name, None)
        for value in values if isinstance(values, list) else [values]:
            if isinstance(value, str) and "://" not in value and os.path.isfile(value):
                flag = "--" + name.replace("_", "-")
                raise UsageError(
                    f"{flag} {value!r} is a file, not a directory; give a directory (it is created if missing)"
                )
