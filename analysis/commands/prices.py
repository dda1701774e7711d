"""`gpubench prices`: refresh the catalog's prices from the
providers' price APIs (`refresh`) and list the snapshots it prices from
(`list`)."""

from __future__ import annotations

import argparse
import sys

from analysis.commands import add_command
from analysis.output import emit_json, fmt_usd, print_table
from analysis.price.refresh import PROVIDERS, list_snapshots, refresh_prices
from infra.catalog import load_catalog

EPILOG = """\
examples:
  gpubench prices refresh                       # AWS us-east-1 and GCP us-central1
  gpubench prices refresh --provider aws --dry-run
  gpubench prices refresh --provider gcp --region europe-west4 --out my-prices/
  GPUBENCH_PRICES_DIR=my-prices/ gpubench offers --live
  gpubench prices list

A refresh writes infra/catalog/data/prices/<YYYY-MM-DD>_<provider>-live.toml
(or into --out DIR; point $GPUBENCH_PRICES_DIR at DIR to price with it), after
loading it with the catalog, and prints each offering's old -> new price.
The catalog prices every offering in one region per provider (aws us-east-1,
gcp us-central1); other regions need --out DIR.

credentials:
  AWS: AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, AWS_PROFILE, `aws configure` or
       `aws sso login`; needs pricing:GetProducts, ec2:DescribeSpotPriceHistory.
  GCP: `gcloud auth application-default login`, GOOGLE_APPLICATION_CREDENTIALS,
       or a Cloud Billing API key in GOOGLE_API_KEY.

exit codes (with both providers, the highest):
  0  snapshot written (or --dry-run validated); warnings name any type left out
  2  bad arguments (unknown region, another region without --out)
  3  no credentials: nothing fetched, the shipped snapshots are kept
  4  the price API failed or priced nothing: nothing written
  5  the refreshed snapshot did not load in the catalog: nothing written
"""


def register(sub) -> None:
    p = add_command(sub, "prices", epilog=EPILOG)
    verbs = p.add_subparsers(dest="verb", metavar="VERB", required=True)
    r = verbs.add_parser(
        "refresh",
        help="fetch today's prices and write a dated snapshot",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    r.add_argument("--provider", choices=PROVIDERS, help="only this provider (default: aws and gcp)")
    r.add_argument(
        "--region",
        action="append",
        metavar="R",
        help="region to price (repeatable; default: aws us-east-1, gcp us-central1)",
    )
    r.add_argument("--out", metavar="DIR", help="write the snapshot here instead of infra/catalog/data/prices/")
    r.add_argument("--dry-run", action="store_true", help="fetch, validate and diff, but write nothing")
    r.add_argument("--json", action="store_true", help="print a JSON object")
    r.set_defaults(func=run_refresh)
    ls = verbs.add_parser("list", help="list the price snapshots the catalog loads")
    ls.add_argument("--json", action="store_true", help="print a JSON list")
    ls.set_defaults(func=run_list)


def _print_result(res) -> None:
    for w in res.warnings:
        print(f"warning: {w}", file=sys.stderr)
    if res.error:
        kept = " The shipped snapshots are kept." if res.exit_code == 3 else ""
        print(f"error: {res.provider} {res.region}: {res.error}{kept}", file=sys.stderr)
        return
    verb = "wrote" if res.written else "would write (dry run)"
    print(f"{res.provider} {res.region}: {verb} {res.path}")
    shown = [c for c in res.changes if c.status != "unchanged"]
    if shown:
        print_table(
            (
                (
                    c.offering,
                    c.market,
                    fmt_usd(c.old_usd),
                    fmt_usd(c.new_usd),
                    "new" if c.pct is None else f"{c.pct:+.1f}%",
                    c.old_snapshot or "-",
                )
                for c in shown
            ),
            ("offering", "market", "old $/h", "new $/h", "change", "previous snapshot"),
        )
    counts = {s: sum(c.status == s for c in res.changes) for s in ("changed", "new", "unchanged")}
    print(f"{counts['changed']} changed, {counts['new']} new, {counts['unchanged']} unchanged\n")


def run_refresh(args, clients=None, now=None) -> int:
    results = refresh_prices(args.provider, args.region, out=args.out, dry_run=args.dry_run, clients=clients, now=now)
    code = max(r.exit_code for r in results)
    if args.json:
        emit_json({"dry_run": args.dry_run, "results": [r.to_dict() for r in results], "exit_code": code})
    else:
        for res in results:
            _print_result(res)
    return code


def run_list(args) -> int:
    rows = list_snapshots(load_catalog())
    if args.json:
        emit_json(rows)
        return 0
    print_table(
        (
            (r["snapshot"], r["as_of"], r["region"], r["rows"], "yes" if r["live"] else "", r["source"][:70])
            for r in rows
        ),
        ("snapshot", "as of", "region", "rows", "live", "source"),
    )
    return 0
