"""`gpubench logs STACK`: the newest run's log tail of a stack, from the results bucket."""

from __future__ import annotations

HELP = "print the newest run's log tail (runs/<stack>/<run-id>/log-tail.txt) from the bucket; --follow polls it"
EPILOG = """\
examples:
  gpubench logs aws-g4dn-1x-b3f2a --results s3://my-results
  gpubench logs local --results results --follow

--results defaults to the bucket the stack's bench recorded, else $GPUBENCH_RESULTS.
The payload uploads the rolling tail (its last 200 lines) about every 30 s while the
job runs; --follow prints new lines until the run has its result.
"""


def register(sub) -> None:
    import argparse
    from pathlib import Path

    p = sub.add_parser(
        "logs", help=HELP, description=HELP + ".", epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("stack", metavar="STACK", help="the stack (a probe's name as `gpubench status` shows it)")
    p.add_argument("--results", metavar="URL", help="the bucket (default: the bench's, else $GPUBENCH_RESULTS)")
    p.add_argument("-f", "--follow", action="store_true", help="keep printing new lines until the run ends")
    p.add_argument("--poll", type=float, default=10.0, metavar="SECONDS", help="--follow: seconds between reads")
    p.add_argument(
        "--wait",
        type=float,
        default=None,
        metavar="MINUTES",
        help="--follow: give up when no log tail has appeared after MINUTES (default 15: boot and setup come first)",
    )
    p.add_argument(
        "--project-dir", type=Path, metavar="DIR", help="look for the bench records under DIR/.gpubench/bench/ only"
    )
    p.set_defaults(func=run)


def _results(args) -> str:
    import os

    from analysis.bench.record import BenchRecord, bench_dirs
    from analysis.bench.run import RESULTS_ENV
    from infra.conventions import UsageError

    if args.results:
        return args.results
    for directory in reversed(bench_dirs(args.project_dir)):
        record = BenchRecord.load(directory)
        entry = record.stacks.get(args.stack)
        if entry is not None and (entry.get("results") or record.data.get("results")):
            return entry.get("results") or record.data["results"]
    if os.environ.get(RESULTS_ENV):
        return os.environ[RESULTS_ENV]
    raise UsageError(f"no bench recorded {args.stack!r} and {RESULTS_ENV} is not set; pass --results URL")


def run(args) -> int:
    import sys

    from analysis.bench.live import follow_log, latest_log
    from payload import exitcodes
    from payload.storage import StorageError, open_store

    try:
        store = open_store(_results(args))
        if args.follow:
            wait = None if args.wait is None else max(0.0, args.wait) * 60.0
            run_id = follow_log(store, args.stack, sys.stdout, poll=args.poll, first_log_wait=wait)
            if run_id is None:
                print(
                    f"error: no run of {args.stack} wrote a log tail to {store.url_for('runs/' + args.stack + '/')} "
                    "in time: check the stack name (`gpubench status`), or wait longer with --wait MINUTES",
                    file=sys.stderr,
                )
            return exitcodes.OK if run_id else exitcodes.FAILED
        found = latest_log(store, args.stack)
    except StorageError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return exitcodes.REMOTE
    if found is None:
        print(
            f"error: no run of {args.stack} has a log tail in {store.url_for('runs/' + args.stack + '/')}",
            file=sys.stderr,
        )
        return exitcodes.FAILED
    run_id, text, finished = found
    print(f"# {args.stack} run {run_id} ({'finished' if finished else 'running'})", file=sys.stderr)
    sys.stdout.write(text if text.endswith("\n") or not text else text + "\n")
    return exitcodes.OK
