"""`preview`: render stacks under Pulumi's mocks, offline: every resource, its tags and user-data.

examples:
  gpubench preview aws-g4dn-1x                  one stack (JSON: one object)
  gpubench preview 'aws-g4dn-*' --no-user-data  globs over the shipped stacks, quoted (JSON: a list)
  gpubench preview --all --json --table s3://my-results/table/
"""

from __future__ import annotations

from analysis.commands import add_command
from analysis.commands.plan import chosen_stacks
from analysis.options import add_stack_arguments, add_table_argument, stacks_of, table_location
from analysis.planning import measured_runs_of
from infra.catalog import load_catalog
from infra.projectfiles import GLOB_CHARS
from payload import exitcodes
from payload.exitcodes import UsageError
from payload.extras import require


def register(sub) -> None:
    p = add_command(sub, "preview", run, description=__doc__)
    add_stack_arguments(p, many=True, required=False)
    p.add_argument("--all", action="store_true", help="every stack in stacks/")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.add_argument("--no-user-data", action="store_true", help="omit the user-data from text output")
    add_table_argument(p)


def run(args) -> int:
    patterns = stacks_of(args)
    if args.all == bool(patterns):
        raise UsageError("preview needs stack names (or globs) or --all, not both and not neither")
    names = chosen_stacks(args)
    single = len(patterns) == 1 and not GLOB_CHARS & set(patterns[0])  # the answer is one stack, not a list
    require("pulumi", "pulumi_aws", "pulumi_gcp", needed_for="`gpubench preview` (Pulumi's mocks)")
    from infra import preview  # heavy: Pulumi (the infra extra), after the check that names it

    measured = measured_runs_of(table_location(args.table), names)
    text = preview.run(
        names, load_catalog(), as_json=args.json, single=single, show_user_data=not args.no_user_data, measured=measured
    )
    print(text)
    return exitcodes.OK
