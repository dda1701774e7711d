"""`check`: is this machine ready for what you want to do? The Pulumi CLI, each cloud's credentials,
the installed extras and (with --results) whether a results bucket answers. Reads only; changes nothing.

Named, a cloud is checked as a first real run needs it, with read-only API calls: the account and
its credentials, the network (AWS: the default VPC or each configured gpubench:subnet), the GPU
quotas of the stacks' instance families (AWS Service Quotas; GCP regional GPU quotas and
GPUS_ALL_REGIONS), the APIs a GCP project must enable, and the Pulumi backend you are logged in to.

Every check is listed; the exit status answers only what you asked:
  gpubench check               can this machine launch on at least one cloud? (no API calls)
  gpubench check aws           is AWS ready for a first run (credentials, VPC, quotas, backend)?
  gpubench check gcp --stack 'gcp-l4-*'        GCP, with quotas for the L4 stacks only
  gpubench check gcp analysis  GCP, and the analysis extra (collect, report)?
  gpubench check aws --offline                 only what this machine has (no API calls)
  gpubench check --results s3://my-results    and does this bucket answer?

Quotas: with --stack, every selected stack must fit; without, at least the smallest stack of
each quota (the detail says which stacks fit and the request that would fit the largest).

exit codes: 0 ready for what was asked; 3 something it needs is missing (each line
says how to add it); 4 a --results bucket does not answer; 2 an unknown name.
Offline commands (offers, cost, plan, stacks) need none of this and always work.
"""

from __future__ import annotations

import sys

from analysis.commands import add_command
from analysis.output import emit_json, print_table
from analysis.readiness import EXTRAS, account_checks, pulumi_login_check, readiness_checks, verdict
from infra import clouds
from payload import exitcodes
from payload.exitcodes import UsageError, check_choice

CHOICES = [*clouds.NAMES, *EXTRAS]


def register(sub) -> None:
    p = add_command(sub, "check", run, description=__doc__)
    p.add_argument(
        "what",
        nargs="*",
        metavar="CLOUD|EXTRA",
        help=f"what to be ready for: {', '.join(CHOICES)} (default: any one cloud)",
    )
    p.add_argument(
        "--results",
        action="append",
        default=[],
        metavar="URL",
        help="also check that this results bucket answers (s3://, gs://, file://; repeatable)",
    )
    p.add_argument(
        "--stack",
        action="append",
        default=[],
        metavar="PATTERN",
        help="with a cloud: the stacks whose quotas to check (shell pattern; repeatable; default: every "
        "stack file of the cloud whose offering is not retired)",
    )
    p.add_argument(
        "--offline",
        action="store_true",
        help="with a cloud: only the Pulumi CLI, the extra and credentials being there (no API calls, no backend)",
    )
    p.add_argument("--json", action="store_true", help="print a JSON list of checks")


def run(args) -> int:
    asked = [check_choice("check", w, CHOICES, f"Choose from {', '.join(CHOICES)}.") for w in args.what]
    checks = readiness_checks(args.results)
    asked_clouds = [w for w in asked if clouds.is_cloud(w) and not args.offline]
    if args.stack and (args.offline or not any(clouds.is_cloud(w) for w in asked)):
        raise UsageError(
            "--stack selects the stacks whose quotas a cloud's account checks read: name the cloud, "
            "without --offline, e.g. gpubench check aws --stack 'aws-g5-*'"
        )
    if asked_clouds:
        checks.append({**pulumi_login_check(), "for": "clouds"})
    for cloud in asked_clouds:
        checks.extend(account_checks(cloud, args.stack))
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
