"""`python -m analysis offerings`: the catalog as a table or JSON, like
`sky show-gpus` but with billing rules, price dates and sources."""

from __future__ import annotations

import sys

from analysis.output import emit_json, fmt_usd, parse_date, print_table
from payload import exitcodes

HELP = "list GPU offerings with prices, billing rules, sources and dates"


def register(sub) -> None:
    p = sub.add_parser(
        "offerings",
        help=HELP,
        description=HELP + ". Your own offerings are read from $GPUBENCH_CATALOG_DIRS and ./catalog "
        "(README: Your own hardware).",
    )
    p.add_argument(
        "--provider",
        help="only this provider (aws, gcp, hetzner, leadergpu, softlayer, paperspace, vastai, onprem, local)",
    )
    p.add_argument("--gpu", help="only this GPU model (K80, M60, P100, V100, T4, A10G, L4, A100, H100, GTX-1080, ...)")
    p.add_argument(
        "--as-of",
        type=parse_date,
        metavar="YYYY-MM-DD",
        help="prices in force on this date (default: the newest snapshot)",
    )
    p.add_argument(
        "--live",
        action="store_true",
        help="only prices from snapshots written by `prices refresh`, with the snapshot each came from",
    )
    p.add_argument("--json", action="store_true", help="print a JSON list instead of a table")
    p.set_defaults(func=run)


def run(args) -> int:
    from analysis.offerings import offering_row
    from infra.catalog import load_catalog

    catalog = load_catalog()
    if getattr(args, "live", False):
        from analysis.prices.snapshot import live_catalog

        catalog = live_catalog(catalog)
        if catalog is None:
            print(
                "error: no refreshed price snapshot yet; run `python -m analysis prices refresh` "
                "(needs AWS/GCP credentials, see `prices refresh --help`)",
                file=sys.stderr,
            )
            return exitcodes.FAILED
    if args.provider and args.provider not in catalog.providers():
        print(
            f"error: unknown provider {args.provider!r}; choose from {', '.join(catalog.providers())}", file=sys.stderr
        )
        return exitcodes.USAGE
    if args.gpu and not catalog.offerings(gpu=args.gpu):
        print(
            f"error: no offering has GPU {args.gpu!r}; choose from {', '.join(catalog.gpu_models())}", file=sys.stderr
        )
        return exitcodes.USAGE
    rows = [offering_row(catalog, o, args.as_of) for o in catalog.offerings(args.provider, args.gpu)]
    if getattr(args, "live", False):
        return _print_live(rows, args)
    if args.json:
        emit_json(rows)
        return 0
    print_table(
        (
            (
                r["id"],
                f"{r['gpu_count']}x {r['gpu']}" if r["gpu"] else "none",
                r["gpu_memory_gb"],
                r["compute_capability"],
                r["vcpus"],
                r["memory_gb"],
                fmt_usd(r["hourly_usd"]),
                fmt_usd(r["spot_hourly_usd"]),
                r["billing"],
                r["as_of"],
                r["retired"],
            )
            for r in rows
        ),
        ("id", "gpus", "gpu GB", "cc", "vcpus", "RAM GB", "$/h", "spot $/h", "billing", "price as of", "retired"),
    )
    print(
        f"\n{len(rows)} offerings. Prices: newest snapshot on or before {args.as_of or 'today'}; "
        "sources with --json or `python -m analysis cost ID`."
    )
    return 0


def _print_live(rows, args) -> int:
    """--live: only offerings a refreshed snapshot prices, and which snapshot."""
    rows = [r for r in rows if r["hourly_usd"] is not None or r["spot_hourly_usd"] is not None]
    if args.json:
        emit_json(rows)
        return 0
    print_table(
        (
            (
                r["id"],
                f"{r['gpu_count']}x {r['gpu']}" if r["gpu"] else "none",
                fmt_usd(r["hourly_usd"]),
                fmt_usd(r["spot_hourly_usd"]),
                r["as_of"],
                r["snapshot"] or "-",
                r["spot_snapshot"] if r["spot_snapshot"] != r["snapshot"] else "same",
            )
            for r in rows
        ),
        ("id", "gpus", "$/h", "spot $/h", "price as of", "snapshot", "spot snapshot"),
    )
    print(
        f"\n{len(rows)} offerings priced by refreshed snapshots (`python -m analysis prices list`); "
        "sources with --json."
    )
    return 0
