"""`preview`: render stacks under Pulumi's mocks, offline: every resource, its tags and user-data.

examples:
  gpubench preview aws-g4dn-1x                  one stack (JSON: one object)
  gpubench preview 'aws-g4dn-*' --no-user-data  globs over the shipped stacks, quoted (JSON: a list)
  gpubench preview --all --json --table s3://my-results/table/
"""

from __future__ import annotations

import argparse

from infra.conventions import add_stack_arguments, add_table_argument, stacks_of

HELP = "render stacks' resources offline (names or globs; needs the infra extra, no CLI)"


def register(sub) -> None:
    p = sub.add_parser("preview", help=HELP, description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_stack_arguments(p, many=True, required=False)
    p.add_argument("--all", action="store_true", help="every stack in stacks/")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.add_argument("--no-user-data", action="store_true", help="omit the user-data from text output")
    add_table_argument(p)
    p.set_defaults(func=run)


def selected(args) -> tuple[list[str], bool]:
    """The stacks to render and whether the answer is one stack (one name, no glob, no --all)."""
    from infra.conventions import GLOB_CHARS, UsageError, expand_stacks, known_stacks
    from infra.stacks import stack_names

    patterns = stacks_of(args)
    if args.all == bool(patterns):
        raise UsageError("preview needs stack names (or globs) or --all, not both and not neither")
    if args.all:
        return stack_names(), False
    single = len(patterns) == 1 and not GLOB_CHARS & set(patterns[0])
    return expand_stacks(patterns, known_stacks()), single


def run(args) -> int:
    from analysis.price.estimate import measured_runs_of
    from infra.catalog import load_catalog
    from infra.conventions import table_location
    from payload import exitcodes
    from payload.extras import require

    names, single = selected(args)
    require("pulumi", "pulumi_aws", "pulumi_gcp", needed_for="`gpubench preview` (Pulumi's mocks)")
    from infra import preview

    measured = measured_runs_of(table_location(args.table), names)
    text = preview.run(
        names, load_catalog(), as_json=args.json, single=single, show_user_data=not args.no_user_data, measured=measured
    )
    print(text)
    return exitcodes.OK
