"""`preview`: render a stack under Pulumi's mocks, offline: every resource, its tags and user-data."""

from __future__ import annotations

from infra.conventions import RESULTS_HELP, add_stack_arguments, stacks_of


def register(sub) -> None:
    p = sub.add_parser("preview", help="render a stack's resources offline (needs the infra extra, no CLI)")
    add_stack_arguments(p, required=False)
    p.add_argument("--all", action="store_true", help="every stack in stacks/")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.add_argument("--no-user-data", action="store_true", help="omit the user-data from text output")
    p.add_argument("--results", metavar="PATH", help=RESULTS_HELP)
    p.set_defaults(func=run)


def run(args) -> int:
    from analysis.price.estimate import REPORT_DIR, measured_runs_of
    from infra.cli import preview_command
    from payload.extras import require

    require("pulumi", "pulumi_aws", "pulumi_gcp", needed_for="`gpubench preview` (Pulumi's mocks)")
    names = stacks_of(args)
    return preview_command(
        names[0] if names else None,
        all_stacks=args.all,
        as_json=args.json,
        show_user_data=not args.no_user_data,
        measured=measured_runs_of(args.results or REPORT_DIR, None if args.all else names),
    )
