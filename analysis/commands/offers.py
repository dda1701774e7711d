"""`offers`: what you can rent, filtered and sorted the way `sky show-gpus` and `dstack offer` users expect."""

from __future__ import annotations

import argparse
import re
import sys
from datetime import date

from analysis.output import emit_json, fmt_usd, parse_date, print_table
from analysis.price import age as price_age
from payload import exitcodes

HELP = "find offerings by GPU, count, market, region and price (catalog data, no cloud call)"
EPILOG = """examples:
  gpubench offers --gpu T4:1                 one T4, cheapest first
  gpubench offers --gpu V100 --spot --max-price 3
  gpubench offers --region us-west-2 --sort gpus --json
Prices come from the catalog's dated snapshots (source and date in --json); unpriced
offerings are listed last with `-` (add a price: docs in `gpubench prices --help`)."""
SORTS = ("price", "gpus", "gpu-memory", "name")
_GPU = re.compile(r"^(?P<model>[A-Za-z0-9][A-Za-z0-9_.-]*)(?::(?P<count>\d+))?$")


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


def parse_gpu(text: str) -> tuple[str, int | None]:
    match = _GPU.match(text or "")
    if not match:
        raise ValueError(f"--gpu {text!r}: expected MODEL or MODEL:COUNT, e.g. T4 or V100:4")
    count = int(match["count"]) if match["count"] else None
    if count == 0:
        raise ValueError(f"--gpu {text!r}: the count must be at least 1")
    return match["model"], count


def select(
    rows: list[dict], gpu: str | None, spot: bool, max_price: float | None, region: str | None, provider: str | None
) -> list[dict]:
    """The filters, as data: each row must pass every one that was given."""
    model, count = parse_gpu(gpu) if gpu else (None, None)
    price_key = "spot_hourly_usd" if spot else "hourly_usd"
    checks = [
        (model is not None, lambda r: (r["gpu"] or "").lower() == model.lower()),
        (count is not None, lambda r: r["gpu_count"] == count),
        (spot, lambda r: "spot" in r["markets"]),
        (max_price is not None, lambda r: r[price_key] is not None and r[price_key] <= max_price),
        (region is not None, lambda r: region in r["regions"] or any(z.startswith(region) for z in r["zones"])),
        (provider is not None, lambda r: r["provider"] == provider),
    ]
    return [r for r in rows if all(test(r) for given, test in checks if given)]


def order(rows: list[dict], sort: str, spot: bool) -> list[dict]:
    price_key = "spot_hourly_usd" if spot else "hourly_usd"
    keys = {
        "price": lambda r: (r[price_key] is None, r[price_key] or 0.0, r["id"]),
        "gpus": lambda r: (-(r["gpu_count"] or 0), r[price_key] is None, r[price_key] or 0.0, r["id"]),
        "gpu-memory": lambda r: (-(r["gpu_memory_gb"] or 0) * (r["gpu_count"] or 0), r["id"]),
        "name": lambda r: r["id"],
    }
    return sorted(rows, key=keys[sort])


def run(args) -> int:
    from analysis.commands.offerings import offering_row
    from infra.catalog import load_catalog

    if args.max_price is not None and not args.max_price >= 0:
        print(f"error: --max-price {args.max_price}: must be a price >= 0 in USD per hour", file=sys.stderr)
        return exitcodes.USAGE
    problem = price_age.check(args)
    if problem:
        print(f"error: {problem}", file=sys.stderr)
        return exitcodes.USAGE
    catalog = load_catalog()
    day = args.as_of or date.today()
    rows = [offering_row(catalog, o, args.as_of) for o in catalog.offerings() if not o.is_retired_on(day)]
    try:
        found = order(
            select(rows, args.gpu, args.spot, args.max_price, args.region, args.provider), args.sort, args.spot
        )
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return exitcodes.USAGE
    price_key = "spot_hourly_usd" if args.spot else "hourly_usd"
    price_age.report(
        args, [r["as_of"] for r in found if r[price_key] is not None and r["kind"] not in ("onprem", "local")]
    )
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
                fmt_usd(r[price_key]),
                r["as_of"] if r[price_key] is not None else "-",
                ", ".join(r["stacks"]) or "(ssh)" if r["kind"] != "local" else "-",
            )
            for r in found
        ),
        ("offering", "gpus", "GB/gpu", "vcpus", "spot $/h" if args.spot else "$/h", "price as of", "stacks"),
    )
    unpriced = sum(1 for r in found if r[price_key] is None)
    if unpriced:
        print(f"\n{unpriced} without a catalog price (shown as -): they are never hidden, only unranked")
    return exitcodes.OK
