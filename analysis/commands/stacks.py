"""`stacks`: list, check or regenerate the stack files in stacks/ (one per cloud offering and market).

examples:
  gpubench stacks --list                 every stack name (cloud, results and SSH stacks)
  gpubench stacks --list --json          the same as a JSON list
  gpubench stacks --check                fail when stacks/ no longer matches the catalog
"""

from __future__ import annotations

from analysis.commands import add_command
from analysis.output import emit_json
from infra.cli import cmd_stacks
from infra.stacks import ssh_stack_names, stack_names


def register(sub) -> None:
    p = add_command(sub, "stacks", run, description=__doc__)
    p.add_argument("--check", action="store_true", help="fail when stacks/ is stale instead of writing")
    p.add_argument("--list", action="store_true", help="list the stack names (cloud, results and SSH stacks)")
    p.add_argument("--json", action="store_true", help="with --list: a JSON list")


def run(args) -> int:
    if args.list:
        names = stack_names() + ssh_stack_names()
        if args.json:
            emit_json(names)
        else:
            print("\n".join(names))
        return 0
    return cmd_stacks(args)
