"""`python -m infra ssh STACK`: run the payload on an SSH host and upload its results from here.

One invocation makes sure one run of the stack is done and in the bucket: it
picks up a run that is still going or finished but not uploaded (after a dropped
connection, say), and otherwise checks the host and starts a new one. Ctrl-C
stops the remote run cleanly (SIGTERM: the payload checkpoints and writes an
`interrupted` result), then uploads what there is.

The stack runs built-in benchmarks (gpubench:benchmark) or your own job
(gpubench:workload: path/to/workload.yaml, shipped with its workdir; see
docs/workloads.md). Its gpubench:offering may come from your own catalog
directory ($GPUBENCH_CATALOG_DIRS or ./catalog).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from infra.ssh import SUMMARY
from infra.ssh.config import RUNTIMES
from infra.ssh.session import EXIT_CODES, run_named_stack


def register(sub) -> argparse.ArgumentParser:
    """Add the `ssh` subcommand to `python -m infra`'s subparsers."""
    p = sub.add_parser("ssh", help=SUMMARY, description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    stack = "an SSH stack in stacks/ (Pulumi.<stack>.yaml with gpubench:host), e.g. ssh-hetzner-ex51"
    p.add_argument("stack", help=stack)
    p.add_argument("--runtime", choices=sorted(RUNTIMES), help="override gpubench:runtime")
    python = "venv runtime: run with this remote interpreter (it must have TensorFlow) instead of building a venv"
    p.add_argument("--python", dest="remote_python", metavar="PATH", help=python)
    gpu = "require a GPU (default: gpubench:expectGpu, else whether the offering has GPUs)"
    p.add_argument("--expect-gpu", dest="expect_gpu", action=argparse.BooleanOptionalAction, default=None, help=gpu)
    p.add_argument("--check", action="store_true", help="only check the host and say what is missing")
    detach = "start (or find) the run and return; run again later to collect it"
    p.add_argument("--detach", action="store_true", help=detach)
    p.add_argument("--json", action="store_true", help="print one JSON object at the end (progress goes to stderr)")
    p.add_argument("--stacks-dir", type=Path, default=None, help="where the stack files are (default: stacks/)")
    p.add_argument("--poll", type=float, default=2.0, help="seconds between log polls (default 2)")
    stop = "on Ctrl-C, seconds to let the payload checkpoint before it is killed (default 120)"
    p.add_argument("--stop-timeout", type=float, default=120.0, help=stop)
    p.set_defaults(func=run)
    return p


def run(args) -> int:
    """Entry point for `python -m infra ssh` (args from `register`); returns the exit code."""
    progress = sys.stderr if args.json else sys.stdout
    options = {k: getattr(args, k) for k in ("runtime", "remote_python", "expect_gpu", "check", "detach", "poll")}
    try:
        status, report = run_named_stack(
            args.stack, stacks_dir=args.stacks_dir, stop_timeout=args.stop_timeout, progress=progress, **options
        )
    except KeyboardInterrupt:
        message = (
            "interrupted (Ctrl-C); if a run was started, or is still stopping on the host, "
            f"`python -m infra ssh {args.stack}` picks it up and collects it"
        )
        status, report = "stopped-by-user", {"stack": args.stack, "message": message}
    if report.get("message"):
        print(f"error: {report['message']}", file=sys.stderr, flush=True)
    report["status"] = "interrupted" if status == "stopped-by-user" else status
    if args.json:
        print(json.dumps(report, indent=2, default=str), flush=True)
    return EXIT_CODES.get(status, 1)
