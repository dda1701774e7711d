"""`up`, `destroy`, `refresh`: the Pulumi CLI on a benchmark stack, with gpubench's plan and confirmation.

`up` shows what it will launch and the most it can cost (see `plan`), asks,
then runs `pulumi up --stack STACK --yes`. `destroy` names what it will delete
and asks. Both need the Pulumi CLI; without it they say how to install it
before asking anything (exit 3).

examples:
  gpubench up aws-g4dn-1x                 show the plan and the cost bound, ask, launch
  gpubench up 'aws-g4dn-1x-sp*' --yes     a glob must select exactly one stack
  gpubench destroy aws-g4dn-1x            name what is deleted, ask, destroy (results stay)
  gpubench up aws-g4dn-1x -- --diff       after --: passed to pulumi as they are
"""

from __future__ import annotations

import argparse
import shutil
import subprocess

from analysis.commands import add_command
from analysis.options import add_stack_arguments, add_yes_argument, stacks_of
from analysis.output import confirm
from analysis.planning import plan_stack
from infra.catalog import load_catalog
from infra.projectfiles import expand_stacks, known_stacks
from infra.workspace import PulumiMissing, cli_context
from payload import exitcodes
from payload.exitcodes import UsageError
from payload.money import usd_amount


def register(sub) -> None:
    for name in ("up", "destroy", "refresh"):
        p = add_command(sub, name, description=__doc__)
        add_stack_arguments(p)
        if name != "refresh":
            add_yes_argument(p)
        p.add_argument("extra", nargs=argparse.REMAINDER, help="after --: arguments passed to pulumi as they are")
        p.set_defaults(func=run, pulumi_command=name)


def checked_stack(args) -> str:
    """The one stack named, which must have a file in stacks/ (a glob must select exactly one)."""
    (pattern,) = stacks_of(args)
    names = expand_stacks([pattern], known_stacks())
    if len(names) != 1:
        raise UsageError(f"`gpubench {args.pulumi_command}` takes one stack; {pattern!r} selects {', '.join(names)}")
    return names[0]


def run(args) -> int:
    stack = checked_stack(args)  # before looking for the Pulumi CLI: a typo is named as a typo
    exe = shutil.which("pulumi")
    if exe is None:
        offline = "`gpubench plan STACK` and `gpubench preview STACK` need none"
        raise PulumiMissing(f"needed for `gpubench {args.pulumi_command}`; offline, {offline}")
    extra = [a for a in args.extra if a != "--"]
    if args.pulumi_command == "up":
        plan = plan_stack(stack, load_catalog())
        bound = "unknown (no catalog price)" if plan["bound_usd"] is None else "$" + usd_amount(plan["bound_usd"])
        lines = [
            f"{stack}: {plan['what']}",
            f"  offering {plan['offering'] or '-'} ({plan['market'] or '-'}), "
            f"deadline {plan['max_hours'] or '-'} h, costs at most {bound}",
        ]
        lines += [f"  warning: {w}" for w in plan["warnings"]]
        confirm(lines, f"Launch {stack}?", args.yes)
    elif args.pulumi_command == "destroy":
        confirm(
            [f"{stack}: every resource of the stack is deleted; results in the bucket stay"],
            f"Destroy {stack}?",
            args.yes,
        )
    argv = [exe, args.pulumi_command, "--stack", stack]
    if args.pulumi_command != "refresh":
        argv.append("--yes")  # confirmed above
    project, env = cli_context()  # the project's Pulumi.yaml and stacks, from any directory
    code = subprocess.run([*argv, *extra], check=False, cwd=project, env=env).returncode
    return exitcodes.OK if code == 0 else exitcodes.FAILED
