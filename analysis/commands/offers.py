"""`offers`: what you can rent, filtered and sorted the way `sky show-gpus` and `dstack offer` users expect."""

from __future__ import annotations

import argparse
import sys

from analysis import price_age
from analysis.offerings import SORTS, find_offers, order, parse_gpu, price_key, select  # noqa: F401  (the filters, re-exported)
from analysis.output import emit_json, fmt_usd, parse_date, print_table
from payload import exitcodes

HELP = "find offerings by GPU, count, market, region and price (catalog data, no cloud call)"
EPILOG = """examples:
  gpubench offers --gpu T4:1                 one T4, cheapest first
  gpubench offers --gpu V100 --spot --max-price 3
  gpubench offers --region us-west-2 --sort gpus --json
Prices come from the catalog's dated snapshots (source and date in --json); unpriced
offerings are listed last with `-` (add a price: docs in `gpubench prices --help`)."""


def register(sub) -> None:
    p = sub.add_parser(
        "offers", help=HELP, description=HELP + ".", epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--gpu", metavar="MODEL[:COUNT]", help="GPU model and optionally count, e.g. T4, V100:4, A100:8")
    p.add_argument("--spot", action="store_true", help="only offerings sold on the spot market, at their spot price")
    p.add_argument("--max-price", type=float, metavar="USD", help="only offerings at or below this price per hour")
    p.add_argument("--region", metavar="REGION", help="only offerings available in this region, e.g. us-east-1")
    p.add_argument("--provider", metavar="NAME", help="only this provider (aws, gcp, hetzner, onprem, ...)")
    p.add_argument("--sort", choices=SORTS, default="price", help="order (default: price, cheapest first)")
    p.add_argument("--as-of", type=parse_date, metavar="YYYY-MM-DD", help="prices in force on this date")
    price_age.add_argument(p)
    p.add_argument("--json", action="store_true", help="print a JSON list")
    p.set_defaults(func=run)


def run(args) -> int:
    from infra.catalog import load_catalog

    if args.max_price is not None and not args.max_price >= 0:
        print(f"error: --max-price {args.max_price}: must be a price >= 0 in USD per hour", file=sys.stderr)
        return exitcodes.USAGE
    problem = price_age.check(args)
    if problem:
        print(f"error: {problem}", file=sys.stderr)
        return exitcodes.USAGE
    try:
        found = find_offers(
            load_catalog(),
            gpu=args.gpu,
            spot=args.spot,
            max_price=args.max_price,
            region=args.region,
            provider=args.provider,
            sort=args.sort,
            as_of=args.as_of,
        )
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return exitcodes.USAGE
    key = price_key(args.spot)
    price_age.report(args, [r["as_of"] for r in found if r[key] is not None and r["kind"] not in ("onprem", "local")])
    if args.json:
        emit_json(found)
        return exitcodes.OK
    if not found:
        print("no offering matches; loosen a filter (see `gpubench offers --help`)", file=sys.stderr)
        return exitcodes.OK
    print_table(
        (
            (
                r["id"],
                f"{r['gpu_count']}x {r['gpu']}" if r["gpu"] else "none",
                r["gpu_memory_gb"],
                r["vcpus"],
                fmt_usd(r[key]),
                r["as_of"] if r[key] is not None else "-",
                ", ".join(r["stacks"]) or "(ssh)" if r["kind"] != "local" else "-",
            )
            for r in found
        ),
        ("offering", "gpus", "GB/gpu", "vcpus", "spot $/h" if args.spot else "$/h", "price as of", "stacks"),
    )
    unpriced = sum(1 for r in found if r[key] is None)
    if unpriced:
        print(f"\n{unpriced} without a catalog price (shown as -): they are never hidden, only unranked")
    return exitcodes.OK
