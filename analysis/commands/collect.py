"""`python -m analysis collect`: gather every run from the results buckets
into a priced table (Parquet + CSV), incrementally and in parallel."""

from __future__ import annotations

from analysis.output import emit_json
from payload import exitcodes

HELP = "collect run results from buckets into the results table"
EPILOG = """\
examples:
  python -m analysis collect                                   # ./results -> ./report
  python -m analysis collect --results s3://my-bucket/gpubench --results gs://other/gpubench
  python -m analysis collect --results file:///data/results --out /tmp/report --json
  python -m analysis collect --teardown                        # then destroy stacks whose runs finished

Only objects that changed since the last collect into the same --out are
downloaded (the manifest is --out/.collect-manifest.sqlite; delete it to start
over). A settled stack (every run has a completed or failed result)
is checked by its run directories only: its files are listed again when a run
is added or removed, after a day, or with --full (a final result rewritten by
hand is seen then).

exit codes: 0 collected (set-aside files are listed); 1 incomplete: a location
could not be listed, held no runs in the runs/<stack>/<run-id>/ layout, or a
download failed (the table keeps the rows it had), or a --teardown failed;
also 1 when a location held no runs at all where runs were expected (a
directory that does not exist; an empty directory or prefix once the table
has runs, e.g. a misspelt prefix): the table and manifest are then left
exactly as they were, and --json says "complete": false;
2 usage error; 3 --teardown needs the Pulumi CLI; 4 a bucket could not be
opened; 5 --strict and some files were set aside.
"""


def register(sub) -> None:
    import argparse

    p = sub.add_parser(
        "collect",
        help=HELP,
        description=HELP + ".",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument(
        "--results",
        action="append",
        metavar="URL",
        help="results location: s3://bucket[/prefix], gs://bucket[/prefix], file:///dir or a path; "
        "repeat for several (default: results)",
    )
    p.add_argument("--out", default="report", metavar="DIR", help="where the table and manifest go (default: report)")
    p.add_argument(
        "--workers",
        type=int,
        default=None,
        metavar="N",
        help="downloads in flight (default: 128 for s3://, through obstore; 10 for gs:// and files, the SDKs' connection pool size)",
    )
    p.add_argument(
        "--full",
        action="store_true",
        help="list every file again, settled stacks included, and re-read any result whose ETag changed",
    )
    p.add_argument(
        "--teardown",
        action="store_true",
        help="afterwards, destroy the Pulumi stacks whose runs all finished (completed or failed)",
    )
    p.add_argument(
        "--spot-history",
        choices=("auto", "on", "off"),
        default="auto",
        help="price new AWS spot runs at the time-weighted spot price of their own zone and window "
        "from EC2's spot price history (auto: when AWS credentials are available)",
    )
    p.add_argument(
        "--strict",
        action="store_true",
        help="exit 4 if any file was set aside (corrupt, misplaced, duplicate, partial): for CI",
    )
    p.add_argument("--json", action="store_true", help="print the summary as JSON (no progress bar)")
    p.set_defaults(func=run)


def _exit_code(outcome, strict: bool) -> int:
    """Incomplete beats set-aside files (--strict); a failed teardown is next; a missing Pulumi CLI last."""
    summary, teardown = outcome.summary, outcome.teardown
    code = exitcodes.OK
    if summary.incomplete:
        code = exitcodes.FAILED
    elif strict and summary.skipped:
        code = exitcodes.INVALID
    if teardown is not None and teardown.failed:
        code = code or exitcodes.FAILED
    if teardown is not None and teardown.error:
        code = code or (exitcodes.MISSING if teardown.missing_pulumi else exitcodes.FAILED)
    return code


def run(args) -> int:
    import sys

    from analysis.collecting import collect_results
    from payload.storage import StorageError

    if args.workers is not None and args.workers < 1:
        print(f"error: --workers must be at least 1, got {args.workers}", file=sys.stderr)
        return exitcodes.USAGE
    try:
        outcome = collect_results(
            args.results or ["results"],
            args.out,
            workers=args.workers,
            progress=not args.json and sys.stderr.isatty(),
            spot_history=args.spot_history,
            full=args.full,
            teardown=args.teardown,
        )
    except StorageError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return exitcodes.REMOTE
    if outcome.teardown is not None and outcome.teardown.error:
        print(f"error: {outcome.teardown.error}", file=sys.stderr)
    if args.json:
        emit_json(outcome.to_dict())
    else:
        print(outcome.text(), end="")
        for problem in outcome.summary.incomplete:
            print(f"incomplete: {problem}", file=sys.stderr)
    return _exit_code(outcome, args.strict)
