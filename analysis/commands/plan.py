"""`plan`: what `gpubench up` would launch, one line per stack, and the most it can cost.

Offline and light: the catalog and the stack files only (no Pulumi, no cloud
call), so it works in the base install. The bound is each stack's price for its
whole deadline (`gpubench:maxHours`) under the offering's billing rules: the
cloud-side deadline terminates the instance then at the latest. Beside it, the
estimate from measurements: the median billed time of the stack's collected
runs (the results table `collect` wrote, report/results.parquet by default or
--results PATH) x its price, per benchmark; each says whether it was measured
or is the bound (no runs, or pandas not installed).
"""

from __future__ import annotations

import argparse
import sys
from datetime import datetime, timedelta, timezone

from analysis.output import emit_json, print_table
from analysis.price import age as price_age
from infra.conventions import RESULTS_HELP, add_stack_arguments, stacks_of
from payload import exitcodes
from payload.money import usd_amount

HELP = "show what each stack launches and the most it can cost (offline; user-data with -v)"


def register(sub) -> None:
    p = sub.add_parser("plan", help=HELP, description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_stack_arguments(p, many=True, required=False)
    p.add_argument("--all", action="store_true", help="every cloud stack in stacks/")
    p.add_argument("-v", "--verbose", action="store_true", help="also print each stack's rendered user-data")
    p.add_argument("--results", metavar="PATH", help=RESULTS_HELP)
    price_age.add_argument(p)
    p.add_argument("--json", action="store_true", help="print a JSON object")
    p.set_defaults(func=run)


def plan_stack(name: str, catalog, measured=None) -> dict:
    """One stack's plan line: offering, market, price, deadline, cost bound, warnings, user-data."""
    from analysis.price.billed import cost_of
    from analysis.price.estimate import estimate_costs
    from infra import cloud_init
    from infra.config import BenchmarkConfig, parse_config
    from infra.launch import payload_env, resolve
    from infra.stacks import load_config

    cfg = parse_config(load_config(name), name)
    if not isinstance(cfg, BenchmarkConfig):
        return {
            "stack": name,
            "kind": "results",
            "offering": None,
            "market": None,
            "hourly_usd": None,
            "price_as_of": None,
            "max_hours": None,
            "bound_usd": 0.0,
            "estimated_cost": [],
            "what": f"a private results bucket ({cfg.provider}), no instance",
            "warnings": [],
            "user_data": None,
        }
    launch = resolve(cfg, catalog)
    bound = None
    if launch.hourly_usd is not None:
        bound = cost_of(
            launch.offering.id, cfg.max_hours * 3600, market=cfg.market, hourly_usd=launch.hourly_usd, catalog=catalog
        ).cost_usd
    gpu = f"{launch.offering.gpu_count}x {launch.offering.gpu_model}" if launch.offering.gpu_model else "no GPU"
    deadline = (datetime.now(timezone.utc) + timedelta(hours=cfg.max_hours)).strftime("%Y-%m-%dT%H:%M:%SZ")
    results = cfg.results or f"<resultsUrl of stack {cfg.results_ref(launch.provider).split(':', 1)[1]}>"
    env = payload_env(launch, results, deadline)  # the deadline as if launched now
    return {
        "stack": name,
        "kind": "benchmark",
        "offering": launch.offering.id,
        "market": cfg.market,
        "hourly_usd": launch.hourly_usd,
        "price_as_of": launch.price.as_of.isoformat() if launch.price is not None else None,
        "max_hours": cfg.max_hours,
        "bound_usd": bound,
        "estimated_cost": estimate_costs(cfg, launch.hourly_usd, measured),
        "what": f"1 instance ({gpu}) running {', '.join(cfg.suite)}",
        "warnings": list(launch.warnings),
        "user_data": cloud_init.render_user_data(cloud_init.PayloadLaunch(launch.image, env)),
    }


def run(args) -> int:
    from infra.catalog import load_catalog
    from infra.stacks import stack_names

    names = stack_names() if args.all else stacks_of(args)
    if not names:
        print("error: name stacks (e.g. `gpubench plan aws-g4dn-1x`) or pass --all", file=sys.stderr)
        return exitcodes.USAGE
    problem = price_age.check(args)
    if problem:
        print(f"error: {problem}", file=sys.stderr)
        return exitcodes.USAGE
    catalog = load_catalog()
    from analysis.price.estimate import read_results

    results = read_results(args.results or "report")  # collect's default --out
    plans = [plan_stack(n, catalog, results) for n in names]
    price_age.report(args, [p["price_as_of"] for p in plans])
    priced = [p["bound_usd"] for p in plans if p["bound_usd"] is not None]
    unpriced = [p["stack"] for p in plans if p["bound_usd"] is None]
    total = {"bound_usd": round(sum(priced), 6), "stacks": len(plans), "unpriced": unpriced}
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
