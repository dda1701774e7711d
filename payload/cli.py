"""Command line: ``python -m payload {run,list,flush}``; ``run`` is the container entrypoint."""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import threading
import time

from payload import __version__, exitcodes
from payload.benchmarks import REGISTRY, ParamError, get
from payload.builtin import BuiltinJob
from payload.config import ConfigError, RunConfig, add_run_arguments, resolve
from payload.entrypoint import guarded
from payload.events import note
from payload.identity import PreemptionWatcher, detect_identity
from payload.run import Run, SuiteContext, price_row
from payload.spool import Spool, SpoolingStore
from payload.storage import open_store
from payload.workloads.job import WorkloadJob
from payload.workloads.spec import load_spec

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
    # unannounced results were delivered all the same: the exit code stays the delivery's
    for line in [f"{dest}: {err}" for dest, err in report.failed.items()] + report.unannounced:
        print(f"  {line}", file=sys.stderr)
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
    return run_suite(cfg)


def _install_stop_handlers(watcher: PreemptionWatcher) -> dict:
    """SIGTERM (docker stop, ACPI shutdown, `timeout`), SIGINT (Ctrl-C) and SIGHUP (a closed terminal) act like
    a preemption notice: the job's process tree is ended, an ``interrupted`` result written; the old handlers."""
    if threading.current_thread() is not threading.main_thread():
        return {}
    old = {}
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        name = signal.Signals(sig).name
        old[sig] = signal.signal(sig, lambda signum, frame, name=name: watcher.trigger(f"{name} received"))
    return old


def run_suite(cfg: RunConfig) -> int:
    """``run``: one result per benchmark, nothing lost; the spool flush, identity, price, watcher and stop signals
    once, then one payload.run.Run per job; the first interruption ends the suite (the next boot resumes it)."""
    boot = time.time()
    spool = Spool(cfg.spool)
    flush = spool.flush()
    for message in flush.unannounced:  # a hint lost, never a result: said, and the run goes on
        note(message)
    flushed = {"delivered": len(flush.delivered), "still_spooled": len(flush.failed)}
    store = SpoolingStore(open_store(cfg.results, write_once=True), spool)  # never overwrites: see layout
    identity = detect_identity()
    cfg.market = cfg.market or identity.lifecycle or ("spot" if cfg.stack.endswith("-spot") else "on-demand")
    price, warnings = price_row(cfg)
    if cfg.probe_seconds and cfg.benchmark:
        warnings.append("--probe-seconds applies to workloads only: the built-in benchmarks ran in full")
    watcher = PreemptionWatcher(cfg.watch_interval, cfg.deadline).start()
    old_handlers = _install_stop_handlers(watcher)
    ctx = SuiteContext(cfg, boot, identity, store, watcher, price, warnings, flushed if any(flushed.values()) else None)
    codes = []
    try:
        for name in cfg.benchmark:
            codes.append(Run(ctx, lambda run, name=name: BuiltinJob(run, name)).execute())
            if codes[-1] == exitcodes.INTERRUPTED:
                break  # the next boot resumes this one and runs the rest
        if cfg.workload:
            spec = load_spec(cfg.workload).with_environment(os.environ)
            codes.append(Run(ctx, lambda run: WorkloadJob(run, spec)).execute())
    finally:
        watcher.stop()
        for sig, handler in old_handlers.items():
            signal.signal(sig, handler)
    if store.stranded:
        where = ", ".join(map(str, spool.used_fallbacks)) or "stderr (LOST-FILE markers)"
        message = (
            f"{len(store.stranded)} file(s) are in neither the bucket nor the spool {spool.dir}: they are in {where}"
        )
        if spool.used_fallbacks:
            message += f"; deliver with `python -m payload flush --spool {spool.used_fallbacks[0]}`"
        note(message + (f"; lost: {', '.join(store.lost)}" if store.lost else ""))
        codes.append(exitcodes.STRANDED)
    if store.spooled and exitcodes.worst(codes) == exitcodes.OK:
        codes.append(exitcodes.SPOOLED)
    return exitcodes.worst(codes)


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
