"""`gpubench cost`: what H hours on an offering cost, with the
billing rule applied and every price's source and date shown."""

from __future__ import annotations

import sys

from analysis.commands import add_command, options
from analysis.output import emit_json, fmt_usd, parse_date, print_table, usd_amount
from analysis.price import age as price_age
from analysis.price.billed import _hours, cost_of
from analysis.price.monthly import monthly_bill, sweeper_bill
from infra.stacks import offering_of
from infra.sweep_targets import check_cloud
from payload.exitcodes import UsageError

EPILOG = """\
examples:
  gpubench cost aws/p3.8xlarge --hours 2
  gpubench cost gcp/n1-standard-8+1xv100 --hours 1.5 --market spot
  gpubench cost aws/p2.xlarge --hours 3.62 --as-of 2018-02-08
  gpubench cost onprem/parkopedia-4x1080ti --hours 24 --days-per-month 10

a recurring run, billed by the month (--every instead of --hours):
  gpubench cost aws/g4dn.xlarge --every "cron(0 3 ? * MON *)" --minutes-up 30 --disk-gb 100
  # seed 001 at its own 2018 prices: $0.76/month
  gpubench cost gcp/n1-standard-1 --market spot --as-of 2018-11-19 --every "0 */4 * * *" \
      --minutes-up 2 --disk-gb 10 --disk-always --scheduler-jobs 2 \
      --function-calls-per-run 2 --function-seconds 60
  # the same under the 10-minute minimum of before 2017-09-26: add --billing-as-of 2017-09-01

the leak sweep as a cloud function (a sweeper stack), by the month:
  gpubench cost --sweeper aws --every "rate(1 hour)" --function-seconds 10 --function-memory-gb 0.125
your own offerings, prices and billing rules: catalog directories in $GPUBENCH_CATALOG_DIRS
(':'-separated) and ./catalog, laid out like infra/catalog/data (README "Your own hardware").
"""


def register(sub) -> None:
    p = add_command(sub, "cost", run, epilog=EPILOG)
    p.add_argument(
        "offering",
        nargs="?",
        metavar="OFFERING|STACK",
        help="offering id, e.g. aws/p3.8xlarge (see `offers`), or a stack name, e.g. aws-g4dn-1x-spot (its offering and market)",
    )
    when = p.add_mutually_exclusive_group(required=True)
    when.add_argument("--hours", type=float, help="hours of use (positive)")
    when.add_argument(
        "--every",
        metavar="EXPR",
        help="bill a recurring run by the month: 'rate(4 hours)', 'cron(0 3 ? * MON *)' or '0 */4 * * *' (UTC)",
    )
    p.add_argument(
        "--sweeper",
        metavar="CLOUD",
        help="bill the sweeper stack of this cloud (aws, gcp) with --every instead of an offering",
    )
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
    r = p.add_argument_group("recurring runs (with --every)")
    r.add_argument("--minutes-up", type=float, metavar="MIN", help="minutes each run's instance is up (required)")
    r.add_argument(
        "--billing-as-of",
        type=parse_date,
        metavar="YYYY-MM-DD",
        help="bill each run under the rule in force on this date (default: --as-of, else today)",
    )
    r.add_argument("--disk-gb", type=float, default=0.0, metavar="GB", help="boot/persistent disk size (default: 0)")
    r.add_argument(
        "--disk-always",
        action="store_true",
        help="the disk exists all month (a stopped VM's disk) instead of only while each run is up",
    )
    r.add_argument("--scheduler-jobs", type=int, default=1, metavar="N", help="scheduler jobs (default: 1)")
    r.add_argument(
        "--function-calls-per-run", type=int, default=0, metavar="N", help="function calls per run (default: 0)"
    )
    r.add_argument("--function-every", metavar="EXPR", help="a function on its own schedule, e.g. the sweeper")
    r.add_argument("--function-seconds", type=float, default=1.0, metavar="S", help="seconds per call (default: 1)")
    r.add_argument("--function-memory-gb", type=float, default=0.25, metavar="GB", help="default: 0.25")
    r.add_argument("--function-vcpus", type=float, default=0.0, metavar="N", help="billed vCPUs (default: 0)")
    price_age.add_argument(p)
    p.add_argument("--json", action="store_true", help="print a JSON object")


def run(args) -> int:
    price_age.limit(args.max_price_age)  # a bad --max-price-age is refused before any price is read
    if args.sweeper is not None:
        bill, show = _sweeper_bill(args), _print_sweeper
    elif not args.offering:
        raise UsageError("give an OFFERING or STACK (or --sweeper CLOUD)")
    elif args.every is not None:
        bill, show = _monthly_bill(args), _print_monthly
    else:
        bill, show = _cost(args), _print_cost
    if args.json:
        emit_json(bill.to_dict())
    else:
        show(bill)
    return 0


def _sweeper_bill(args):
    args.sweeper = check_cloud("--sweeper", args.sweeper)  # a typo is named before any price is read
    if args.offering or args.every is None:
        raise UsageError("--sweeper CLOUD takes --every EXPR and no offering")
    return sweeper_bill(
        args.sweeper,
        args.every,
        seconds=args.function_seconds,
        memory_gb=args.function_memory_gb,
        vcpus=args.function_vcpus,
        as_of=args.as_of,
    )


def _monthly_bill(args):
    if args.minutes_up is None:
        raise UsageError("--every needs --minutes-up MIN (how long each run's instance is up)")
    offering, stack_market = offering_of(args.offering)
    bill = monthly_bill(
        offering,
        args.every,
        args.minutes_up,
        market=args.market or stack_market or "on-demand",
        **options(args, "as_of", "billing_as_of", "hourly_usd", "disk_gb", "disk_always", "scheduler_jobs"),
        **options(args, "function_calls_per_run", "function_every", "function_seconds", "function_memory_gb"),
        function_vcpus=args.function_vcpus,
    )
    if args.hourly_usd is None:
        price_age.report([bill.prices_as_of], args.max_price_age, args.as_of)
    return bill


def _cost(args):
    recurring_only = ("minutes_up", "billing_as_of", "function_every")
    if any(getattr(args, name) is not None for name in recurring_only):
        raise UsageError("--minutes-up, --billing-as-of and --function-every go with --every, not --hours")
    hours = _hours(args.hours)
    offering, stack_market = offering_of(args.offering)
    result = cost_of(
        offering,
        hours * 3600.0,
        market=args.market or stack_market or "on-demand",
        **options(args, "as_of", "days_per_month", "hourly_usd"),
    )
    for note in result.warnings:
        print(f"warning: {note}", file=sys.stderr)
    if args.hourly_usd is None and not result.onprem:
        price_age.report([result.as_of], args.max_price_age, args.as_of)
    return result


def _print_sweeper(bill) -> None:
    print(f"{bill.provider} sweeper  every {bill.schedule!r}, {bill.seconds_per_run:g} s per run")
    print(f"  runs:     {bill.runs_per_month:g} per month")
    print(f"  prices:   {bill.prices}, as of {bill.prices_as_of}")
    for line in bill.lines:
        print(f"  {line.item:<10} {line.quantity}  {line.unit_price}  ${usd_amount(line.usd)}")
    print(f"  total:    ${usd_amount(bill.total_usd)}/month at list prices")
    print(f"            ${usd_amount(bill.total_after_free_tier_usd)}/month if the account's free tiers are unused")
    for line in bill.lines:
        print(f"  source ({line.item}): {line.source}")


def _print_monthly(bill) -> None:
    print(f"{bill.offering}  {bill.market}  every {bill.schedule!r}, {bill.minutes_up:g} min up each run")
    print(f"  runs:     {bill.runs_per_month:g} per month (month of {bill.hours_per_month:g} h)")
    print(f"  billing:  {bill.billing} (rule in force on {bill.billing_as_of})")
    print(f"  prices:   {bill.prices}, as of {bill.prices_as_of}")
    if bill.prices_note:
        print(f"            note: {bill.prices_note}")
    print()
    print_table(
        ((line.item, line.quantity, line.unit_price, "$" + usd_amount(line.usd)) for line in bill.lines),
        ("item", "quantity", "unit price", "per month"),
    )
    print()
    print(f"  total:    ${usd_amount(bill.total_usd)}/month at list prices")
    if bill.total_after_free_tier_usd != bill.total_usd:
        print(f"            ${usd_amount(bill.total_after_free_tier_usd)}/month if the account's free tiers are unused")
    if bill.minimum_overhead_usd:
        print(
            f"  minimum:  the billing minimum adds ${usd_amount(bill.minimum_overhead_usd)}/month "
            f"({bill.minimum_overhead_percent:.1f}% more than without it)"
        )
    for line in bill.lines:
        print(f"  source ({line.item}): {line.source}")


def _print_cost(result) -> None:
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
