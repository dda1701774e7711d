"""`gpubench sweep`: terminate expired instances this project tagged, whatever Pulumi's state says."""

from __future__ import annotations

import sys
from collections import Counter

from analysis.commands import add_command, print_tally
from analysis.output import emit_json, planned_then_run, print_table
from infra import clouds
from infra.sweep_targets import check_cloud, check_regions
from infra.tags import BadDeadline, parse_now
from payload.exitcodes import UsageError

EPILOG = """\
examples:
  gpubench sweep --provider aws --dry-run
  gpubench sweep --provider aws --region us-east-1 --region us-west-2 --json
  gpubench sweep --provider gcp --project my-project

Only resources carrying both the gpubench stack tag (AWS `gpubench:stack`, GCP
label `gpubench-stack`) and an expires-at (AWS `gpubench:expires-at`, GCP
`gpubench-expires-at`) in the exact format the launcher writes are ours; any
other resource with an expires-at is reported as `left-alone` with the reason,
and unexpired ones are `kept`. Nothing else is ever touched.
Exit codes: 0 every resource handled, 1 at least one `failed` (a delete, an
unreadable listing, zone or region: the others are still swept), 2 usage error,
3 no credentials (or no GCP project) for the cloud, 10 not confirmed; the same
in every mode (without --yes the dry run comes first, and when it would delete nothing
it is the answer, failures included). On AWS the instance's deadline schedule and its security
group are deleted too (the group after the instance is terminated).
Regions default to where the catalog and stacks/ launch. The scheduled jobs in
schedules/ run this command; see schedules/README.md for the permissions.
"""


def register(sub) -> None:
    p = add_command(sub, "sweep", run, epilog=EPILOG)
    p.add_argument("--provider", required=True, choices=clouds.NAMES, help="which cloud to sweep")
    p.add_argument(
        "--region",
        action="append",
        metavar="R",
        help="region to sweep (repeatable; default: every region the catalog and stacks/ use)",
    )
    p.add_argument(
        "--project",
        metavar="ID",
        help="GCP project (default: GOOGLE_CLOUD_PROJECT, CLOUDSDK_CORE_PROJECT or the credentials' project)",
    )
    p.add_argument("--dry-run", action="store_true", help="report what would be deleted, delete nothing")
    p.add_argument("-y", "--yes", action="store_true", help="delete without asking (scripts, schedules)")
    p.add_argument(
        "--now", metavar="ISO", help="treat this UTC time as now, e.g. 2024-05-01T12:00:00Z (default: the current time)"
    )
    p.add_argument("--json", action="store_true", help="print a JSON object with every action")


def run(args) -> int:
    try:
        now = parse_now(args.now)
    except BadDeadline:
        raise UsageError(f"--now {args.now!r} is not a time; use ISO 8601 UTC, e.g. 2024-05-01T12:00:00Z") from None
    kw = {"project": args.project} if args.project else {}  # a cloud without projects refuses it clearly
    log = lambda line: print(line, file=sys.stderr, flush=True)
    # the cloud and regions checked against the catalog before credentials or an SDK are looked for
    provider = check_cloud("--provider", args.provider)
    regions = check_regions(provider, args.region)
    actions = planned_then_run(
        lambda dry_run: clouds.get(provider).sweep_expired(regions, now, dry_run, log=log, **kw),
        acts=lambda a: a.action.startswith("would-"),
        describe=lambda a: f"  {a.region} {a.kind} {a.id} ({a.stack}, {a.reason})",
        question="Delete these {n} resource(s)?",
        yes=args.yes,
        dry_run=args.dry_run,
        nothing="nothing expired to delete",
    )
    ok = all(a.ok for a in actions)
    if args.json:
        emit_json(
            {
                "provider": args.provider,
                "now": now.isoformat(),
                "dry_run": args.dry_run,
                "regions": sorted({a.region for a in actions}) if not args.region else args.region,
                "counts": dict(Counter(a.action for a in actions)),
                "actions": [a.to_dict() for a in actions],
                "ok": ok,
            }
        )
    else:
        print_table(
            ((a.region, a.kind, a.id, a.stack, a.expires_at, a.action, a.error or a.reason) for a in actions),
            ("region", "kind", "id", "stack", "expires-at", "action", "why"),
        )
        print_tally(actions, "nothing tagged by gpubench found", args.dry_run and "nothing changed")
    return 0 if ok else 1
