"""`python -m analysis cost`: what H hours on an offering cost, with the
billing rule applied and every price's source and date shown."""

from __future__ import annotations

from analysis.output import emit_json, fmt_usd, parse_date

HELP = "price a duration on one offering under its billing rule"
EPILOG = """\
examples:
  python -m analysis cost aws/p3.8xlarge --hours 2
  python -m analysis cost gcp/n1-standard-8+1xv100 --hours 1.5 --market spot
  python -m analysis cost aws/p2.xlarge --hours 3.62 --as-of 2018-02-08
  python -m analysis cost onprem/parkopedia-4x1080ti --hours 24 --days-per-month 10
"""


def register(sub) -> None:
    import argparse

    p = sub.add_parser(
        "cost", help=HELP, description=HELP + ".", epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument(
        "offering",
        metavar="OFFERING|STACK",
        help="offering id, e.g. aws/p3.8xlarge (see `offers`), or a stack name, e.g. aws-g4dn-1x-spot (its offering and market)",
    )
    p.add_argument("--hours", type=float, required=True, help="hours of use (positive)")
    p.add_argument(
        "--market", choices=("on-demand", "spot"), default=None, help="default: the stack's market, else on-demand"
    )
    p.add_argument(
        "--as-of",
        type=parse_date,
        metavar="YYYY-MM-DD",
        help="price and billing terms in force on this date (default: newest)",
    )
    p.add_argument(
        "--days-per-month",
        type=float,
        metavar="N",
        help="on-prem only: days of 24 h use per month (default: the box's own)",
    )
    p.add_argument(
        "--hourly-usd",
        type=float,
        metavar="USD",
        help="use this hourly price instead of the catalog's (e.g. the spot price you paid)",
    )
    p.add_argument("--json", action="store_true", help="print a JSON object")
    p.set_defaults(func=run)


def run(args) -> int:
    import sys

    from analysis.cost import CostError, _hours, cost_of

    try:
        hours = _hours(args.hours)
    except CostError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    from infra.stacks import offering_of

    offering, stack_market = offering_of(args.offering)
    result = cost_of(
        offering,
        hours * 3600.0,
        market=args.market or stack_market or "on-demand",
        as_of=args.as_of,
        days_per_month=args.days_per_month,
        hourly_usd=args.hourly_usd,
    )
    for note in result.warnings:
        print(f"warning: {note}", file=sys.stderr)
    if args.json:
        emit_json(result.to_dict())
        return 0
    print(f"{result.offering}  {result.market}  price as of {result.as_of}")
    print(f"  price:    {fmt_usd(result.hourly_usd)}/h  ({result.price_source})")
    for c in result.components:
        print(f"            {c['name']}: {fmt_usd(c['hourly_usd'])}/h  (as of {c['as_of']})")
    if result.onprem:
        m = result.onprem
        print(
            f"            amortisation {fmt_usd(m['amortisation_usd_per_month'], 2)}/month + electricity "
            f"{fmt_usd(m['electricity_usd_per_month'], 2)}/month at {m['days_per_month']:g} days/month"
        )
    print(f"  billing:  {result.billing}")
    print(f"  used:     {result.used_hours:.4f} h   billed: {result.billed_hours:.4f} h")
    if result.fees_usd:
        print(f"  fees:     {fmt_usd(result.fees_usd)} (monthly fee, prorated)")
    print(f"  cost:     {fmt_usd(result.cost_usd, 2)}")
    if result.setup_fee_usd:
        print(f"  plus a one-off setup fee of {fmt_usd(result.setup_fee_usd, 2)}")
    return 0
