"""`gpubench report`: the HTML report (plots embedded) and a terminal summary,
from the results table `collect` wrote (--table) into --out."""

from __future__ import annotations

import sys

from analysis.commands import add_command, options
from analysis.options import add_table_argument, table_location
from analysis.output import emit_json, parse_date
from analysis.price import age as price_age

EPILOG = """\
examples:
  gpubench report                                  # ./table -> ./report/index.html
  gpubench report --table /tmp/table --out /tmp/report --base gcp/n1-standard-1+1xk80
  gpubench report --deadline-hours 2 --budget-usd 5
  gpubench report --as-of 2018-02-08               # re-price every run at that date's catalog
"""


def register(sub) -> None:
    p = add_command(sub, "report", run, epilog=EPILOG)
    add_table_argument(p)
    p.add_argument(
        "--out", default="report", metavar="DIR", help="where index.html and summary.csv go (default: ./report)"
    )
    p.add_argument(
        "--base",
        default=None,
        metavar="OFFERING",
        help="offering the relative figures divide by (default: a single K80 when one is in the data, "
        "else the offering that ran the most configurations)",
    )
    p.add_argument(
        "--deadline-hours",
        type=float,
        metavar="H",
        help="the answer also names the cheapest offering that trains within H hours (none when not given)",
    )
    p.add_argument(
        "--budget-usd",
        type=float,
        metavar="USD",
        help="the answer also names the fastest offering that costs at most USD (none when not given)",
    )
    p.add_argument(
        "--as-of",
        type=parse_date,
        metavar="YYYY-MM-DD",
        help="re-price every run from the catalog snapshot in force on this date "
        "(default: the price recorded at launch)",
    )
    p.add_argument(
        "--cost-basis",
        choices=("billed", "train"),
        default="billed",
        help="what the frontier and recommendations rank by: billed (launch to termination, "
        "default) or train (training time only)",
    )
    price_age.add_argument(p)
    p.add_argument("--json", action="store_true", help="print the summary and recommendations as JSON")


def run(args) -> int:
    from analysis.report.build import write_report  # heavy: pandas (the analysis extra)

    price_age.limit(args.max_price_age)  # a bad --max-price-age is refused before the table is read
    outcome = write_report(
        args.out,
        table=table_location(args.table),
        **options(args, "base", "deadline_hours", "budget_usd", "as_of", "cost_basis", "max_price_age"),
    )
    if outcome.price_warning:
        print(f"warning: {outcome.price_warning}", file=sys.stderr)
    if args.json:
        emit_json(outcome.summary_doc())
    else:
        print(outcome.text(), end="")
    return 0
