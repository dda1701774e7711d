"""`check`: is this machine ready? The Pulumi CLI, each cloud's credentials, the installed
extras and (with --results) whether a results bucket answers. Reads only; changes nothing."""

from __future__ import annotations

import argparse
import sys

from analysis.output import emit_json, print_table
from payload import exitcodes


def register(sub) -> None:
    p = sub.add_parser(
        "check",
        help="check the Pulumi CLI, credentials, extras and buckets (read-only)",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument(
        "--results",
        action="append",
        default=[],
        metavar="URL",
        help="also check that this results bucket answers (s3://, gs://, file://; repeatable)",
    )
    p.add_argument("--json", action="store_true", help="print a JSON list of checks")
    p.set_defaults(func=run)


def run(args) -> int:
    from analysis.readiness import readiness_checks

    checks = readiness_checks(args.results)
    if args.json:
        emit_json(checks)
    else:
        print_table(
            ((c["check"], "ok" if c["ok"] else "MISSING", c["detail"]) for c in checks), ("check", "status", "detail")
        )
    if any(not c["ok"] for c in checks if c["check"].startswith("bucket")):
        return exitcodes.REMOTE
    if not all(c["ok"] for c in checks):
        print(
            "\nsome pieces are missing: each line says how to add it; what you have works without them", file=sys.stderr
        )
        return exitcodes.MISSING
    return exitcodes.OK
