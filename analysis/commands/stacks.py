"""`stacks`: list, check or regenerate the stack files in stacks/ (one per cloud offering and market).

examples:
  gpubench stacks --list                 every stack name (cloud, results and SSH stacks)
  gpubench stacks --list --json          the same as a JSON list
  gpubench stacks --check                fail when stacks/ no longer matches the catalog
"""

from __future__ import annotations


def register(sub) -> None:
    import argparse

    p = sub.add_parser(
        "stacks",
        help="list (--list), check (--check) or regenerate stacks/ from the catalog",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--check", action="store_true", help="fail when stacks/ is stale instead of writing")
    p.add_argument("--list", action="store_true", help="list the stack names (cloud, results and SSH stacks)")
    p.add_argument("--json", action="store_true", help="with --list: a JSON list")
    p.set_defaults(func=run)


def run(args) -> int:
    if args.list:
        from analysis.output import emit_json
        from infra.stacks import ssh_stack_names, stack_names

        names = stack_names() + ssh_stack_names()
        if args.json:
            emit_json(names)
        else:
            print("\n".join(names))
        return 0
    from infra.cli import stacks_command

    return stacks_command(args.check)
