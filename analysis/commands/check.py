"""`check`: is this machine ready for what you want to do? The Pulumi CLI, each cloud's credentials,
the installed extras and (with --results) whether a results bucket answers. Reads only; changes nothing.

Every check is listed; the exit status answers only what you asked:
  gpubench check               can this machine launch on at least one cloud?
  gpubench check aws           can it launch on AWS (Pulumi CLI, infra extra, AWS credentials)?
  gpubench check gcp analysis  GCP, and the analysis extra (collect, report)?
  gpubench check --results s3://my-results    and does this bucket answer?

exit codes: 0 ready for what was asked; 3 something it needs is missing (each line
says how to add it); 4 a --results bucket does not answer; 2 an unknown name.
Offline commands (offers, cost, plan, stacks) need none of this and always work.
"""

from __future__ import annotations

import argparse
import sys

from analysis.output import emit_json, print_table
from payload import exitcodes


def _choices() -> list[str]:
    from analysis.readiness import EXTRAS
    from infra import clouds

    return [*clouds.NAMES, *EXTRAS]


def register(sub) -> None:
    p = sub.add_parser(
        "check",
        help="check the Pulumi CLI, credentials, extras and buckets for what you want to do (read-only)",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument(
        "what",
        nargs="*",
        metavar="CLOUD|EXTRA",
        help=f"what to be ready for: {', '.join(_choices())} (default: any one cloud)",
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
    from analysis.readiness import readiness_checks, verdict
    from infra import clouds
    from infra.conventions import check_choice

    asked = [check_choice("check", w, _choices(), f"Choose from {', '.join(_choices())}.") for w in args.what]
    checks = readiness_checks(args.results)
    ready, missing = verdict(checks, asked, list(clouds.NAMES))
    if args.json:
        emit_json(checks)
    else:
        print_table(
            ((c["check"], "ok" if c["ok"] else "MISSING", c["detail"]) for c in checks), ("check", "status", "detail")
        )
        print(f"\nready for: {', '.join(ready) or 'no cloud yet'}; offline commands (offers, cost, plan) always work")
    if any(not c["ok"] for c in checks if c["check"].startswith("bucket")):
        return exitcodes.REMOTE
    if missing:
        wanted = ", ".join(missing) if asked else "any cloud"
        print(f"not ready for {wanted}: the MISSING lines above say how to add what it needs", file=sys.stderr)
        return exitcodes.MISSING
    return exitcodes.OK
