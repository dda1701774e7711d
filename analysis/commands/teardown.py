"""`gpubench teardown`: destroy benchmark stacks that are done or past their deadline."""

from __future__ import annotations

HELP = "destroy benchmark stacks (named, --completed, --expired) through Pulumi; never the results stacks"
EPILOG = """\
examples:
  gpubench teardown aws-p3-8x gcp-v100-1x-spot
  gpubench teardown --completed --results s3://my-gpubench-results
  gpubench teardown --expired --dry-run
  gpubench teardown --completed --expired --json   # what the scheduled jobs run

With --completed and --expired together a stack is destroyed when either holds.
The results stacks (aws-results, gcp-results) and buckets are always refused.
Needs the Pulumi CLI: curl -fsSL https://get.pulumi.com | sh
"""


def register(sub) -> None:
    import argparse

    p = sub.add_parser(
        "teardown",
        help=HELP,
        description=HELP + ".",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument(
        "stacks",
        nargs="*",
        metavar="STACK",
        help="stack names, e.g. aws-p3-8x (default: every stack in the backend that still has resources, filtered by --completed/--expired)",
    )
    p.add_argument(
        "--completed",
        action="store_true",
        help="only stacks whose benchmarks all have a final result (completed or failed) in the results bucket",
    )
    p.add_argument(
        "--expired", action="store_true", help="only stacks whose deadline (stack output `deadline`) has passed"
    )
    p.add_argument(
        "--results",
        action="append",
        metavar="URL",
        help="results bucket URL to read runs from (repeatable; default: the stack's resultsUrl output or gpubench:results)",
    )
    p.add_argument("--dry-run", action="store_true", help="say what would be destroyed, destroy nothing")
    p.add_argument("-y", "--yes", action="store_true", help="destroy without asking (scripts, schedules)")
    p.add_argument("--now", metavar="ISO", help="treat this UTC time as now for --expired (testing, replays)")
    p.add_argument(
        "--project-dir",
        metavar="DIR",
        help="the gpubench checkout holding Pulumi.yaml (default: found from this package)",
    )
    p.add_argument("--json", action="store_true", help="print a JSON object with every outcome")
    p.set_defaults(func=run)


def report(outcomes, dry_run: bool) -> None:
    from analysis.output import print_table

    print_table(
        ((o.stack, o.action, o.reason, o.error and o.error.splitlines()[-1]) for o in outcomes),
        ("stack", "outcome", "why", "error"),
    )
    counts: dict[str, int] = {}
    for o in outcomes:
        counts[o.action] = counts.get(o.action, 0) + 1
    summary = ", ".join(f"{n} {a}" for a, n in sorted(counts.items())) or "no stacks"
    print(f"\n{summary}{' (dry run: nothing destroyed)' if dry_run else ''}")


def checked_stacks(names: list[str], project_dir: str | None) -> list[str] | None:
    """Named stacks must have a file in stacks/ (globs expanded), checked before Pulumi is needed.

    Results stacks and bucket URLs pass through, for teardown to refuse with its own reason; a
    checkout whose stacks/ holds no stack file has nothing to check against. A stack whose file is
    gone is still covered by `teardown` with no name (every stack in the backend). None: no name given."""
    from pathlib import Path

    from infra.clouds import RESULTS_STACKS
    from infra.conventions import expand_stacks, known_stacks

    if not names:
        return None
    folder = Path(project_dir) / "stacks" if project_dir else None
    known = known_stacks(folder)
    if not known:
        return names
    out: list[str] = []
    for name in names:
        refused_later = name in RESULTS_STACKS or "://" in name
        out += [name] if refused_later else expand_stacks([name], known, str(folder or "stacks/"))
    return list(dict.fromkeys(out))


def run(args, workspace_factory=None) -> int:
    import sys
    from pathlib import Path

    from analysis.output import emit_json
    from analysis.teardown import teardown
    from infra.conventions import confirm
    from infra.tags import BadDeadline, parse_now
    from infra.workspace import ProjectNotFound, PulumiMissing
    from payload import exitcodes

    stacks = checked_stacks(args.stacks, args.project_dir)  # before Pulumi is needed: a typo is named as a typo

    def run_teardown(dry_run: bool):
        return teardown(
            stacks,
            completed=args.completed,
            expired=args.expired,
            dry_run=dry_run,
            results_urls=args.results,
            now=now,
            work_dir=Path(args.project_dir).resolve() if args.project_dir else None,
            workspace_factory=workspace_factory,
        )

    try:
        now = parse_now(args.now)
        if not (args.dry_run or args.yes):  # show what would go, then ask
            planned = [o for o in run_teardown(True) if o.action == "would-destroy"]
            if not planned:
                print("nothing to destroy", file=sys.stderr)
                return exitcodes.OK
            confirm(
                [f"  {o.stack}: {o.reason}" for o in planned],
                f"Destroy these {len(planned)} stack(s)? (results in the buckets stay)",
                args.yes,
            )
        outcomes = run_teardown(args.dry_run)
    except (PulumiMissing, ProjectNotFound, BadDeadline, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return exitcodes.MISSING if isinstance(exc, PulumiMissing) else exitcodes.USAGE
    if args.json:
        emit_json(
            {"dry_run": args.dry_run, "outcomes": [o.to_dict() for o in outcomes], "ok": all(o.ok for o in outcomes)}
        )
    else:
        report(outcomes, args.dry_run)
    return 0 if all(o.ok for o in outcomes) else 1
