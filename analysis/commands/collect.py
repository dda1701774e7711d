"""`gpubench collect`: gather every run from the results buckets
into a priced table (Parquet + CSV), incrementally and in parallel."""

from __future__ import annotations

import argparse
import sys

from analysis.commands import add_command, check_results_locations, options
from analysis.options import add_table_argument, results_locations, table_location
from analysis.output import emit_json
from analysis.progress import stderr_is_terminal
from payload import exitcodes
from payload.exitcodes import UsageError

EPILOG = """\
examples:
  gpubench collect                                   # $GPUBENCH_RESULTS (else ./results) -> ./table
  gpubench collect --results s3://my-bucket/gpubench --results gs://other/gpubench
  gpubench collect --results file:///data/results --table /tmp/table --json
  gpubench collect --teardown                        # then destroy stacks whose runs finished
  gpubench report                                    # ./table -> ./report/index.html

Only objects that changed since the last collect into the same --table are
downloaded (a local table keeps its manifest in --table/.collect-manifest.sqlite,
a bucket table in $GPUBENCH_CACHE; delete it to start over). A settled stack
(every run has a completed or failed result)
is not listed file by file: a local one is checked by its directory's stamp, a
bucket's by its results journal (journal/<stack>/, where the payload announces
each result that lands) or else by its run directories. Its files are listed
again when a run is added or removed, after a day, or with --full (a final
result rewritten by hand, or a run deleted by hand from a stack checked by its
journal, is seen then).

exit codes: 0 collected (set-aside files are listed); 1 incomplete: a location
could not be listed, held no runs in the runs/<stack>/<run-id>/ layout, or a
download failed (the table keeps the rows it had), or a --teardown failed;
also 1 when a location held no runs at all where runs were expected (a
directory that does not exist; an empty directory or prefix once the table
has runs, e.g. a misspelt prefix): the table and manifest are then left
exactly as they were, and --json says "complete": false; also 1 on a full
disk, a damaged table log or a table another collect holds too long (one line
says what and how to recover: docs/troubleshooting.md);
2 usage error; 3 --teardown needs the Pulumi CLI; 4 a bucket could not be
opened; 5 --strict and some files were set aside.
"""


def register(sub) -> None:
    p = add_command(sub, "collect", run, epilog=EPILOG)
    p.add_argument(
        "--results",
        action="append",
        metavar="URL",
        help="results bucket: s3://bucket[/prefix], gs://bucket[/prefix], file:///dir or a path; "
        "repeat for several (default: $GPUBENCH_RESULTS, else ./results)",
    )
    add_table_argument(p, writes=True)
    p.add_argument("--out", default=None, metavar="DIR", help=argparse.SUPPRESS)  # refused: it is --table
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
        "--export",
        action="store_true",
        default=None,
        help="write results.parquet and results.csv beside a local table whatever its size "
        "(automatic while it holds at most 10,000 rows)",
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
        help="exit 5 if any file was set aside (corrupt, misplaced, duplicate, partial): for CI",
    )
    p.add_argument("--json", action="store_true", help="print the summary as JSON (no progress bar)")


def _exit_code(outcome, strict: bool) -> int:
    """Incomplete beats set-aside files (--strict); a failed teardown is next; a missing Pulumi CLI last."""
    summary, teardown = outcome.summary, outcome.teardown
    if summary.incomplete:
        return exitcodes.FAILED
    if strict and summary.skipped:
        return exitcodes.INVALID
    if teardown is None or not (teardown.failed or teardown.error):
        return exitcodes.OK
    return exitcodes.MISSING if teardown.missing_pulumi and not teardown.failed else exitcodes.FAILED


def run(args) -> int:
    from analysis.collect.run import collect_results  # heavy: pyarrow (the analysis extra); --help, completion

    if args.out is not None:
        raise UsageError(
            f"collect writes the results table, which is --table everywhere: use `--table {args.out}` "
            "(--out is only for what a person opens, e.g. `gpubench report --out DIR`)"
        )
    sources = results_locations(args.results, default="results")
    check_results_locations(sources, "--results" if args.results else "$GPUBENCH_RESULTS")
    outcome = collect_results(
        sources,
        table_location(args.table),
        progress=not args.json and stderr_is_terminal(),
        **options(args, "workers", "spot_history", "full", "teardown", "export"),
    )
    if outcome.teardown is not None and outcome.teardown.error:
        print(f"error: {outcome.teardown.error}", file=sys.stderr)
    if args.json:
        emit_json(outcome.to_dict())
    else:
        print(outcome.text(), end="")
        for problem in outcome.summary.incomplete:
            print(f"incomplete: {problem}", file=sys.stderr)
    return _exit_code(outcome, args.strict)
