"""`python -m analysis report`: the HTML report (plots embedded) and a
terminal summary, from the table `collect` wrote to the same --out."""

from __future__ import annotations

from analysis.output import USD_SIGN, emit_json, parse_date
from analysis.price import age as price_age
from analysis.price.billed import DEFAULT_BUDGET_USD, DEFAULT_DEADLINE_HOURS
from payload import exitcodes

HELP = "write DIR/index.html (self-contained, plots embedded) and print a summary"
EPILOG = """\
examples:
  python -m analysis report                                  # reads report/results.parquet
  python -m analysis report --out /tmp/report --base gcp/n1-standard-1+1xk80
  python -m analysis report --deadline-hours 2 --budget-usd 5
  python -m analysis report --as-of 2018-02-08               # re-price every run at that date's catalog
"""


def register(sub) -> None:
    import argparse

    p = sub.add_parser(
        "report", help=HELP, description=HELP + ".", epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--out", default="report", metavar="DIR", help="directory collect wrote to (default: report)")
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
        help=f"the answer names the cheapest offering that trains within H hours (default: {DEFAULT_DEADLINE_HOURS:g})",
    )
    p.add_argument(
        "--budget-usd",
        type=float,
        metavar="USD",
        help=f"the answer names the fastest offering that costs at most USD (default: {DEFAULT_BUDGET_USD:g})",
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
    p.set_defaults(func=run)


def _check(args) -> str | None:
    for name in ("deadline_hours", "budget_usd"):
        v = getattr(args, name)
        if v is not None and not v > 0:
            return f"--{name.replace('_', '-')} must be a positive number, got {v}"
    return None


def _short(text: str, width: int = 70) -> str:
    """Terminal cells stay readable; the HTML report has the full source."""
    return text if len(text) <= width else text[: width - 3] + "..."


def run(args) -> int:
    import sys

    problem = _check(args) or price_age.check(args)
    if problem:
        print(f"error: {problem}", file=sys.stderr)
        return exitcodes.USAGE
    import pandas as pd

    from analysis.collect import read_table
    from analysis.metrics import Options
    from analysis.output import print_table
    from analysis.price.runs import price_runs
    from analysis.report import build_report, with_unit_columns
    from infra.catalog import load_catalog

    base = args.base
    if base is not None:
        load_catalog().get(base)  # an unknown id names the closest ones (exit 2)
    try:
        runs = read_table(args.out)
    except FileNotFoundError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return exitcodes.USAGE
    if args.as_of is not None and len(runs):
        runs = price_runs(runs, as_of=args.as_of)
    opts = Options(
        base=base,
        deadline_hours=DEFAULT_DEADLINE_HOURS if args.deadline_hours is None else args.deadline_hours,
        budget_usd=DEFAULT_BUDGET_USD if args.budget_usd is None else args.budget_usd,
        cost_basis=args.cost_basis,
    )
    if len(runs) and "price_basis" in runs:
        from_catalog = runs["price_basis"].astype(str).str.contains("catalog", na=False)
        price_age.report(args, runs.loc[from_catalog, "price_as_of"].tolist())
    path, tables = build_report(runs, args.out, opts, source=f"{args.out}/results.parquet")
    summary = tables["summary"]
    if args.json:
        emit_json(
            {
                "html": str(path),
                "runs": len(runs),
                "as_of": args.as_of,
                "base": opts.base,
                "summary": summary.astype(object).where(summary.notna(), None).to_dict("records"),
                "recommendations": tables["recommendations"],
                "scaling": tables["scaling"].to_dict("records"),
                "breakeven": tables["breakeven"]
                .astype(object)
                .where(tables["breakeven"].notna(), None)
                .to_dict("records"),
            }
        )
        return 0
    if summary.empty:
        print(
            f"no completed runs in {args.out}/results.parquet ({len(runs)} rows): nothing to compare yet. "
            f"Run `python -m analysis collect --out {args.out}` against your results bucket."
        )
        print(f"report: {path}")
        return 0

    from analysis.report import PriceNotes, answer

    for line in answer.lines(tables["recommendations"], opts):
        print(line)
    print()

    def f(v, fmt="{}"):
        """A cell: "-" for a missing value, never "nan"."""
        try:
            missing = v is None or v != v or pd.isna(v)
        except (TypeError, ValueError):
            missing = False
        return "-" if missing else fmt.format(v)

    notes = PriceNotes()
    # one unit for the whole time column (the one rule: the unit of its longest time)
    unit = answer.time_unit([float(h) for h in summary["train_hours"] if h == h])
    print_table(
        (
            (
                f(r["benchmark"]),
                _short(f(r.get("workload_label")), 40),
                f(r["offering_id"]),
                f(r["market"]),
                f(r["gpus_used"], "{:.0f}"),
                f(r["repeats"]),
                answer.in_unit(r["train_hours"], unit),
                f(r.get("prices_paid")),
                f(r["train_cost_usd"], USD_SIGN),
                f(r["billed_cost_usd"], USD_SIGN),
                f(r.get("throughput")),
                f(r.get("final_accuracy"), "{:.3f}"),
                f(r.get("gpu_utilization_mean"), "{:.0f}%"),
                f(r.get("rel_time"), "{:.2f}"),
                f(r.get("rel_train_cost"), "{:.2f}"),
                notes.ref(r) or "-",
            )
            for r in with_unit_columns(summary).to_dict("records")
        ),
        (
            "benchmark",
            "configuration",
            "offering",
            "market",
            "GPUs",
            "runs",
            f"time ({unit})",
            "price paid",
            "cost to train",
            "billed",
            "throughput",
            "accuracy",
            "GPU util",
            "time/base",
            "cost/base",
            "price",
        ),
    )
    print("\nprices:")
    for n, text in notes.items():
        print(f"  [{n}] {text}")
    print(f"\nreport: {path}")
    return 0
