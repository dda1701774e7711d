"""`gpubench demo` (what `make demo` runs): a short real suite on
this machine, collected and reported beside the studies' published figures."""

from __future__ import annotations

from analysis.commands import add_command, options
from analysis.options import add_table_argument, table_location

EPILOG = """\
examples:
  gpubench demo                          # ./results -> ./table -> ./report/index.html, minutes on 2 cores
  gpubench demo --hourly-usd 0.25        # price this machine at your own rate
  GPUBENCH_LOCAL_HOURLY_USD=0.25 make demo   # the same through make
  gpubench demo --quick --only mnist-mlp # seconds: a smoke check

This machine is priced at a flat hourly rate that is an assumption (default
USD 0.10/h, see analysis/demo.py); the report shows the rate and its source.
Running it again adds runs to the same results/ and re-reports all of them.
--results is this machine's local bucket (default ./results, not $GPUBENCH_RESULTS:
the demo never writes to a cloud bucket unless you name one).
"""


def register(sub) -> None:
    p = add_command(sub, "demo", run, epilog=EPILOG)
    p.add_argument(
        "--results",
        default="results",
        metavar="DIR",
        help="the local results bucket the payload writes to (default: results)",
    )
    add_table_argument(p, writes=True)
    p.add_argument("--out", default="report", metavar="DIR", help="where the report goes (default: ./report)")
    p.add_argument(
        "--hourly-usd",
        type=float,
        default=None,
        metavar="USD",
        help="price of this machine per hour (default: $GPUBENCH_LOCAL_HOURLY_USD, else 0.10, an assumption)",
    )
    p.add_argument("--quick", action="store_true", help="tiny runs (seconds): for tests and smoke checks")
    p.add_argument("--only", action="append", metavar="BENCHMARK", help="run only this benchmark (repeatable)")


def run(args) -> int:
    from analysis.demo import run_demo  # heavy: collect, report and bench (pyarrow, pandas, DuckDB)

    return run_demo(table=table_location(args.table), **options(args, "results", "out", "hourly_usd", "quick", "only"))
