"""`offers`: what you can rent, filtered and sorted the way `sky show-gpus` and `dstack offer` users expect.

`offerings` (the old name) is kept as a hidden alias: it prints a one-line notice on stderr and runs
`offers --retired` (the old command listed retired offerings too)."""

from __future__ import annotations

import argparse
import sys

from analysis.commands import COMMANDS, add_command, options
from analysis.offerings import SORTS, age_key, price_key, search_offers
from analysis.output import emit_json, fmt_usd, parse_date, print_table
from analysis.price import age as price_age
from analysis.price.refresh import live_catalog
from infra.catalog import load_catalog
from payload import exitcodes

EPILOG = """examples:
  gpubench offers --gpu T4:1                 one T4, cheapest first
  gpubench offers --gpu V100 --spot --max-price 3
  gpubench offers --region us-west-2 --sort gpus --json
  gpubench offers --gpu V100 --retired       retired types too (P3, G3: the studies ran on them)
  gpubench offers --as-of 2018-07-01         prices and offerings of that day
  gpubench offers --live                     only prices from `gpubench prices refresh` snapshots
  gpubench offers --gpu T4:1 --stale         prices older than --max-price-age too, with their age
Prices come from the catalog's dated snapshots (source and date in --json); unpriced
offerings are listed last with `-` (add a price: docs in `gpubench prices --help`).
Each row is judged by its own price date: one older than --max-price-age (default 365
days) is hidden, and the count of hidden rows is said; --stale lists them with their age.
Your own offerings are read from $GPUBENCH_CATALOG_DIRS and ./catalog."""
ALIAS_NOTICE = "note: `gpubench offerings` is now `gpubench offers --retired`; showing that"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--gpu", metavar="MODEL[:COUNT]", help="GPU model and optionally count, e.g. T4, V100:4, A100:8")
    p.add_argument("--spot", action="store_true", help="only offerings sold on the spot market, at their spot price")
    p.add_argument("--max-price", type=float, metavar="USD", help="only offerings at or below this price per hour")
    p.add_argument("--region", metavar="REGION", help="only offerings available in this region, e.g. us-east-1")
    p.add_argument("--provider", metavar="NAME", help="only this provider (aws, gcp, hetzner, onprem, ...)")
    p.add_argument("--sort", choices=SORTS, default="price", help="order (default: price, cheapest first)")
    p.add_argument("--as-of", type=parse_date, metavar="YYYY-MM-DD", help="prices in force on this date")
    p.add_argument(
        "--retired",
        action="store_true",
        help="also list offerings retired by the date (hidden by default; the count is always said)",
    )
    p.add_argument(
        "--live", action="store_true", help="only prices from snapshots written by `gpubench prices refresh`"
    )
    p.add_argument(
        "--stale",
        action="store_true",
        help="also list offerings whose price is older than --max-price-age, with its age in days",
    )
    price_age.add_argument(p)
    p.add_argument("--json", action="store_true", help="print a JSON list")


def register(sub) -> None:
    p = add_command(sub, "offers", run, epilog=EPILOG)
    add_arguments(p)
    alias = add_command(sub, "offerings", run_alias, f"{COMMANDS['offers']} (the old name of `offers`).", EPILOG)
    add_arguments(alias)  # not listed in `gpubench --help`


def run_alias(args) -> int:
    print(ALIAS_NOTICE, file=sys.stderr)
    args.retired = True
    return run(args)


def run(args) -> int:
    days = price_age.limit(args.max_price_age)  # a bad --max-price-age is refused before any price is read
    catalog = live_catalog(load_catalog()) if args.live else load_catalog()  # live: None without a snapshot
    if catalog is None:
        raise exitcodes.GpubenchError(
            "no refreshed price snapshot yet; run `gpubench prices refresh` "
            "(needs AWS/GCP credentials, see `gpubench prices --help`), or drop --live",
            exit_code=exitcodes.MISSING,
        )
    offers = search_offers(
        catalog,
        max_age_days=days,
        **options(args, "gpu", "spot", "max_price", "region", "provider", "sort", "as_of", "retired", "stale"),
    )
    found = offers.rows
    if args.live:  # only what a refreshed snapshot prices
        found = [r for r in found if r["hourly_usd"] is not None or r["spot_hourly_usd"] is not None]
    key = price_key(args.spot)
    dates = [r["as_of"] for r in found if r[key] is not None and r["kind"] not in ("onprem", "local")]
    price_age.report(dates, args.max_price_age, args.as_of)
    when = args.as_of or "today"
    if offers.retired_hidden:
        print(
            f"{offers.retired_hidden} retired offering(s) hidden (retired by {when}); --retired lists them",
            file=sys.stderr,
        )
    if offers.stale_hidden:
        print(
            f"{offers.stale_hidden} offering(s) hidden: their price is more than {days:g} days older than {when} "
            "(--max-price-age); --stale lists them with their age, `gpubench prices refresh` renews prices",
            file=sys.stderr,
        )
    if args.json:
        emit_json(found)
        return exitcodes.OK
    if not found:
        print("no offering matches; loosen a filter (see `gpubench offers --help`)", file=sys.stderr)
        return exitcodes.OK
    _print_rows(found, key, args)
    return exitcodes.OK


def _print_rows(found: list[dict], key: str, args) -> None:
    age = age_key(args.spot)
    columns = {  # header -> its cell, for the columns shown (the last three only with their option)
        "offering": lambda r: r["id"],
        "gpus": lambda r: f"{r['gpu_count']}x {r['gpu']}" if r["gpu"] else "none",
        "GB/gpu": lambda r: r["gpu_memory_gb"],
        "vcpus": lambda r: r["vcpus"],
        "spot $/h" if args.spot else "$/h": lambda r: fmt_usd(r[key]),
        "price as of": lambda r: r["as_of"] if r[key] is not None else "-",
        "stacks": lambda r: ", ".join(r["stacks"]) or "(ssh)" if r["kind"] != "local" else "-",
        **({"snapshot": lambda r: r["snapshot"] or "-"} if args.live else {}),
        **({"price age": lambda r: "-" if r[age] is None else f"{r[age]} d"} if args.stale else {}),
        **({"retired": lambda r: r["retired"] or ""} if args.retired else {}),
    }
    print_table(([cell(r) for cell in columns.values()] for r in found), list(columns))
    unpriced = sum(1 for r in found if r[key] is None)
    if unpriced:
        print(f"\n{unpriced} without a catalog price (shown as -): they are never hidden, only unranked")
        for r in found:
            if r[key] is None and r.get("unpriced"):
                print(f"  {r['id']}: {r['unpriced']}")
