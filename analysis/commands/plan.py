"""`plan`: what `gpubench up` would launch, one line per stack, and the most it can cost.

Offline and light: the catalog and the stack files only (no Pulumi, no cloud
call), so it works in the base install. The bound is each stack's price for its
whole deadline (`gpubench:maxHours`) under the offering's billing rules: the
cloud-side deadline terminates the instance then at the latest. Beside it, the
estimate from measurements: the median billed time of the stack's collected
runs (the results table `collect` wrote: --table, default $GPUBENCH_TABLE, else
./table) x its price, per benchmark; each says whether it was measured or is the
bound (no runs, or pandas not installed).

examples:
  gpubench plan aws-g4dn-1x                     one stack
  gpubench plan 'aws-g4dn-*' gcp-t4-1x          globs over the shipped stacks, quoted
  gpubench plan --all --table s3://my-results/table/ --json
"""

from __future__ import annotations

import sys

from analysis.commands import add_command
from analysis.options import add_stack_arguments, add_table_argument, stacks_of, table_location
from analysis.output import emit_json, print_table
from analysis.planning import plan_stacks
from analysis.price import age as price_age
from infra.projectfiles import expand_stacks, known_stacks
from infra.stacks import stack_names
from payload import exitcodes
from payload.exitcodes import UsageError
from payload.money import usd_amount


def register(sub) -> None:
    p = add_command(sub, "plan", run, description=__doc__)
    add_stack_arguments(p, many=True, required=False)
    p.add_argument("--all", action="store_true", help="every cloud stack in stacks/")
    p.add_argument("-v", "--verbose", action="store_true", help="also print each stack's rendered user-data")
    add_table_argument(p)
    price_age.add_argument(p)
    p.add_argument("--json", action="store_true", help="print a JSON object")


def chosen_stacks(args) -> list[str]:
    """With --all every cloud stack in stacks/, else the stacks named (plan's and preview's), globs expanded."""
    return stack_names() if args.all else expand_stacks(stacks_of(args), known_stacks())


def run(args) -> int:
    names = chosen_stacks(args)
    if not names:
        raise UsageError("name stacks (e.g. `gpubench plan aws-g4dn-1x`) or pass --all")
    price_age.limit(args.max_price_age)  # a bad --max-price-age is refused before any price is read
    outcome = plan_stacks(names, table=table_location(args.table))
    price_age.report(outcome.price_dates, args.max_price_age)
    plans, total, unpriced = outcome.plans, outcome.total, outcome.unpriced
    if args.json:
        emit_json(
            {
                "stacks": [{k: v for k, v in p.items() if args.verbose or k != "user_data"} for p in plans],
                "total": total,
            }
        )
        return exitcodes.OK
    print_table(
        (
            (
                p["stack"],
                p["offering"] or "-",
                p["market"] or "-",
                "-" if p["hourly_usd"] is None else f"${p['hourly_usd']:g}",
                "-" if p["max_hours"] is None else f"{p['max_hours']:g} h",
                "unpriced" if p["bound_usd"] is None else "$" + usd_amount(p["bound_usd"]),
                p["what"],
            )
            for p in plans
        ),
        ("stack", "offering", "market", "$/h", "deadline", "at most", "launches"),
    )
    for p in plans:
        for e in p["estimated_cost"]:
            usd = "unpriced" if e["usd"] is None else "$" + usd_amount(e["usd"])
            print(f"  {p['stack']} {e['benchmark']}: {usd} ({e['source']})")
    for p in plans:
        for warning in p["warnings"]:
            print(f"warning: {p['stack']}: {warning}", file=sys.stderr)
    line = f"\ntotal: at most ${usd_amount(total['bound_usd'])} for {len(plans)} stack(s), each stopped by its deadline"
    if unpriced:
        line += f"; not bounded (no catalog price): {', '.join(unpriced)}"
    print(line)
    if args.verbose:
        for p in plans:
            if p["user_data"]:
                print(f"\n--- {p['stack']}: user-data ---\n{p['user_data']}")
    return exitcodes.OK
