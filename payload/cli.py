"""Command line: ``python -m payload {run,list,flush}``; ``run`` is the container entrypoint."""

from __future__ import annotations

import argparse
import json
import sys

from payload import __version__, exitcodes, runner
from payload.benchmarks import REGISTRY, ParamError, get
from payload.config import ConfigError, RunConfig, add_run_arguments, resolve
from payload.entrypoint import guarded
from payload.spool import Spool
from payload.workloads import load_spec

EPILOG = """exit codes: 0 ok, 1 failed, 2 usage, 3 --expect-gpu without GPU,
4 completed but results spooled locally, 6 spool unwritable: files in
$TMPDIR/gpubench-fallback/ (flush --spool DIR), 75 interrupted or SIGTERM/SIGINT/SIGHUP
(rerun to resume)"""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m payload",
        description="gpubench payload: run GPU benchmarks and write priced, reproducible results.",
    )
    parser.add_argument("--version", action="version", version=f"gpubench payload {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="{run,list,flush}")
    run = sub.add_parser(
        "run",
        help="run a benchmark suite, or your own workload, and upload results",
        description="Run built-in benchmarks (--benchmark) or your own job (--workload spec.yaml); "
        "results go to <results>/runs/<stack>/<run-id>/. "
        "Every option can also be set through the GPUBENCH_* variable shown with it; "
        "the command line wins.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_run_arguments(run)
    lst = sub.add_parser("list", help="list benchmarks and their parameters")
    lst.add_argument("--json", action="store_true", help="machine-readable output")
    flush = sub.add_parser("flush", help="upload results waiting in the local spool")
    flush.add_argument("--spool", default=None, help="spool directory [env GPUBENCH_SPOOL]")
    return parser


def _cmd_list(args) -> int:
    items = [b.describe() for b in REGISTRY.values()]
    if args.json:
        print(json.dumps(items, indent=2, default=str))
        return exitcodes.OK
    for b in items:
        print(f"{b['name']:<17} {b['kind']:<10} {b['description']}")
        print(f"{'':<17} study: {b['study']}; data: {b['dataset']}")
        print(f"{'':<17} params: " + ", ".join(f"{k}={v}" for k, v in b["params"].items()))
    return exitcodes.OK


def _cmd_flush(args) -> int:
    spool = Spool(args.spool)
    report = spool.flush()
    print(f"delivered {len(report.delivered)}, still spooled {len(report.failed)} ({spool.dir})")
    for dest, err in report.failed.items():
        print(f"  {dest}: {err}", file=sys.stderr)
    for message in report.unannounced:  # delivered all the same: the exit code stays the delivery's
        print(f"  {message}", file=sys.stderr)
    return exitcodes.OK if report.ok else exitcodes.SPOOLED


def check_run(cfg: RunConfig) -> None:
    """Every benchmark's --param values and a workload spec that loads: a typo fails in a second, naming the
    option, not after a model is built."""
    for name in cfg.benchmark:
        get(name).run_params(cfg)
    unknown = [k for k in cfg.param if not any(k in get(n).defaults for n in cfg.benchmark)]
    if unknown:
        raise ParamError(
            f"--param {unknown[0]!r} is not a parameter of {', '.join(cfg.benchmark)} (see `python -m payload list`)"
        )
    if cfg.workload:
        load_spec(cfg.workload)


def _cmd_run(args) -> int:
    try:
        cfg = resolve(args)
        check_run(cfg)
    except (ConfigError, ParamError, ValueError) as exc:
        print(f"python -m payload run: error: {exc}", file=sys.stderr)
        return exitcodes.USAGE
    return runner.run(cfg)  # looked up now: tests stand in for it


COMMANDS = {"run": _cmd_run, "list": _cmd_list, "flush": _cmd_flush}


def _run(argv: list[str] | None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not args.command:
        parser.print_help()
        return exitcodes.USAGE
    return COMMANDS[args.command](args)


def main(argv: list[str] | None = None) -> int:
    """Every error through payload.entrypoint.guarded: a message and an exit code, never a traceback."""
    return guarded(lambda: _run(argv), prog="python -m payload")
