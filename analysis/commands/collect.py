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
over). On s3://, a settled stack (every run has a completed or failed result)
is checked by its run directories only: its files are listed again when a run
is added or removed, after a day, or with --full (a final result rewritten by
hand is seen then).

exit codes: 0 collected (set-aside files are listed); 1 incomplete: a location
could not be listed, held no runs in the runs/<stack>/<run-id>/ layout, or a
download failed (the table keeps the rows it had), or a --teardown failed;
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


def finished_stacks(rows: list[dict]) -> list[str]:
    """Stacks whose every run finished: an interrupted run will resume, so its stack stays."""
    from payload.result import FINAL_STATUSES

    state: dict[str, bool] = {}
    for r in rows:
        state[r["stack"]] = state.get(r["stack"], True) and r["status"] in FINAL_STATUSES
    return sorted(s for s, done in state.items() if done)


def _teardown(stacks: list[str], urls: list[str]) -> tuple[list, str | None]:
    """Destroy `stacks` through analysis.teardown (which re-checks each stack's
    results itself). An empty list destroys nothing: teardown_completed would
    read it as "every stack"."""
    if not stacks:
        return [], None
    try:
        from analysis.teardown import teardown_completed
    except ImportError as exc:
        return [], (
            f"--teardown is not available: analysis.teardown.teardown_completed could not be "
            f"imported ({exc}). Destroy the stacks with `pulumi destroy -s STACK`: {', '.join(stacks)}"
        )
    try:
        return list(teardown_completed(stacks, results_urls=urls)), None
    except Exception as exc:  # noqa: BLE001 - PulumiMissing and friends carry their own advice
        return [], f"teardown failed before destroying anything: {exc}"


def run(args) -> int:
    import sys

    from analysis.collect import collect, spot_history_pricer
    from payload.storage import StorageError

    if args.workers is not None and args.workers < 1:
        print(f"error: --workers must be at least 1, got {args.workers}", file=sys.stderr)
        return exitcodes.USAGE
    urls = args.results or ["results"]
    show = not args.json and sys.stderr.isatty()
    try:
        summary, rows = collect(
            urls,
            args.out,
            workers=args.workers,
            progress=show,
            spot_pricer=spot_history_pricer(args.spot_history),
            full=args.full,
        )
    except StorageError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return exitcodes.REMOTE
    result = summary.to_dict()
    code = exitcodes.OK
    if summary.incomplete:
        code = exitcodes.FAILED
    elif args.strict and summary.skipped:
        code = exitcodes.INVALID
    if args.teardown:
        outcomes, problem = _teardown(finished_stacks(rows), urls)
        result["teardown"] = {
            "outcomes": [o.to_dict() if hasattr(o, "to_dict") else o for o in outcomes],
            "error": problem,
        }
        if any(not getattr(o, "ok", True) for o in outcomes):
            code = code or exitcodes.FAILED
        if problem:
            print(f"error: {problem}", file=sys.stderr)
            missing = "Pulumi CLI" in problem or "not available" in problem
            code = code or (exitcodes.MISSING if missing else exitcodes.FAILED)
    if args.json:
        emit_json(result)
        return code
    print(
        f"collected {summary.valid} valid runs from {len(urls)} location(s) in {summary.seconds:.2f} s: "
        f"{summary.new} downloaded, {summary.cached} unchanged (not downloaded), {len(summary.skipped)} set aside"
    )
    if summary.settled_stacks:
        print(
            f"  {summary.settled_stacks} settled stack(s) checked by run directory only "
            "(every run finished and none added or removed); --full lists every file"
        )
    if summary.runs == 0:
        print(
            f"  no runs/<stack>/<run-id>/ found under: {', '.join(urls)} (is that where the payload writes? "
            "see --results)"
        )
    for s in summary.set_aside():
        print(f"  skipped {s.get('url') or s['key']}: {s['reason']}")
    for problem in summary.incomplete:
        print(f"incomplete: {problem}", file=sys.stderr)
    print(
        f"table: {summary.table['parquet']} and {summary.table['csv']}"
        + ("" if summary.table_written else " (unchanged)")
    )
    if args.teardown and not result["teardown"]["error"]:
        for o in result["teardown"]["outcomes"]:
            print(
                f"  teardown {o.get('stack')}: {o.get('action')} {o.get('reason') or ''}"
                f"{' ERROR ' + o['error'] if o.get('error') else ''}"
            )
    return code
