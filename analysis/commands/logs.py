"""`gpubench logs STACK`: the newest run's log tail of a stack, from the results bucket."""

from __future__ import annotations

import os
import sys
from datetime import timedelta
from pathlib import Path

from analysis.bench.record import ENDED, follow_log, latest_log
from analysis.bench.run import RESULTS_ENV
from analysis.commands import add_command, check_results_locations
from analysis.commands.teardown import bench_probes
from analysis.observe import CLOCK_SKEW, runs_of
from analysis.output import poll_problem, terminal_text
from infra.config import MAX_HOURS_LIMIT
from payload import exitcodes
from payload.exitcodes import UsageError
from payload.storage import open_store
from payload.timestamps import parse_time, utcnow

EPILOG = """\
examples:
  gpubench logs aws-g4dn-1x-b3f2a --results s3://my-results
  gpubench logs local --results results --follow

--results defaults to the bucket the stack's bench recorded, else $GPUBENCH_RESULTS.
The payload uploads the rolling tail (its last 200 lines) about every 30 s while the
job runs; --follow prints new lines until the run is over: it has its result (exit 0), or
its deadline passed without one (exit 1; the deadline is the bench record's, else the
longest any stack may live after the run's last upload). --poll is 1 second to a week.
"""


def register(sub) -> None:
    p = add_command(sub, "logs", run, epilog=EPILOG)
    p.add_argument("stack", metavar="STACK", help="the stack (a probe's name as `gpubench status` shows it)")
    p.add_argument("--results", metavar="URL", help="the bucket (default: the bench's, else $GPUBENCH_RESULTS)")
    p.add_argument("-f", "--follow", action="store_true", help="keep printing new lines until the run ends")
    p.add_argument(
        "--poll",
        type=float,
        default=10.0,
        metavar="SECONDS",
        help="--follow: seconds between reads (default 10, at least 1)",
    )
    p.add_argument(
        "--wait",
        type=float,
        default=None,
        metavar="MINUTES",
        help="--follow: give up when no log tail has appeared after MINUTES (default 15: boot and setup come first; at most 4,320, three days)",
    )
    p.add_argument(
        "--project-dir", type=Path, metavar="DIR", help="look for the bench records under DIR/.gpubench/bench/ only"
    )


def _results(args, recorded: str | None) -> str:
    for url, given_by in (
        (args.results, "--results"),
        (recorded, "the bench record"),
        (os.environ.get(RESULTS_ENV), f"${RESULTS_ENV}"),
    ):
        if url:
            check_results_locations([url], given_by)
            return url
    raise UsageError(f"no bench recorded {args.stack!r} and {RESULTS_ENV} is not set; pass --results URL")


def _follow_seconds(store, stack: str, entry: dict) -> float:
    """How long `--follow` may wait for the run's result: until the stack's deadline (its bench record's),
    else until the latest any stack may live after the run's newest upload; 0 for a probe its bench ended.

    A run that died without a result never writes one: its deadline is when following it is over."""
    now = utcnow()
    if (entry.get("teardown") or {}).get("action") in ENDED:
        return 0.0
    deadline = parse_time(entry.get("deadline")) if entry.get("deadline") else None
    if deadline is None:
        newest = max((r["updated"] for r in runs_of(store, stack).values() if r["updated"]), default=now)
        deadline = newest + timedelta(hours=MAX_HOURS_LIMIT)
    return max(0.0, (deadline + CLOCK_SKEW - now).total_seconds())


def run(args) -> int:
    if poll_problem(args.poll):
        raise UsageError(poll_problem(args.poll))
    if args.wait is not None and not 0.0 <= args.wait <= MAX_HOURS_LIMIT * 60:  # NaN too
        raise UsageError(
            f"--wait {args.wait:g}: give minutes from 0 to {MAX_HOURS_LIMIT * 60:,.0f} (the longest a stack "
            "lives), e.g. --wait 15"
        )
    record, entry = bench_probes(args.project_dir).get(args.stack, (None, {}))
    recorded = entry.get("results") or (record.data.get("results") if record else None)
    store = open_store(_results(args, recorded))
    if args.follow:
        wait = None if args.wait is None else args.wait * 60.0
        limit = _follow_seconds(store, args.stack, entry)
        run_id = follow_log(store, args.stack, sys.stdout, poll=args.poll, first_log_wait=wait, timeout=limit)
        if run_id is None:
            raise exitcodes.GpubenchError(
                f"no run of {args.stack} wrote a log tail to {store.url_for('runs/' + args.stack + '/')} "
                "in time: check the stack name (`gpubench status`), or wait longer with --wait MINUTES"
            )
        found = latest_log(store, args.stack)
        if found is None or not found[2]:
            raise exitcodes.GpubenchError(
                f"run {run_id} of {args.stack} is over without a result: its deadline passed "
                "(or its bench ended it); `gpubench status --all` shows how it ended"
            )
        return exitcodes.OK
    found = latest_log(store, args.stack)
    if found is None:
        raise exitcodes.GpubenchError(
            f"no run of {args.stack} has a log tail in {store.url_for('runs/' + args.stack + '/')}"
        )
    run_id, text, finished = found
    shown = terminal_text(run_id, multiline=False)  # a key's part: one line, whatever the bucket holds
    print(f"# {args.stack} run {shown} ({'finished' if finished else 'running'})", file=sys.stderr)
    sys.stdout.write(text if text.endswith("\n") or not text else text + "\n")
    return exitcodes.OK
