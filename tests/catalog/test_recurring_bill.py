"""The monthly bill of a recurring run: seed 001's three figures from its own
2018 prices, and a weekly GPU benchmark today computed by hand."""

from __future__ import annotations

import json
import math
from datetime import date
from fractions import Fraction as F

import pytest

from analysis.cli import main
from analysis.price.billed import CostError
from analysis.price.monthly import monthly_bill
from infra.catalog import CatalogError, load_catalog
from infra.catalog.prices import service_prices
from infra.schedule_expr import ScheduleError, parse_schedule

CAT = load_catalog()
SEED001 = date(2018, 11, 19)
# Seed 001's setup: a preemptible n1-standard-1 started every 4 hours, up 2
# minutes, its 10 GB disk kept all month, two scheduler jobs (start, stop) and
# two 60 s function calls per run (start, stop).
SEED_SETUP = dict(
    market="spot",
    as_of=SEED001,
    disk_gb=10,
    disk_always=True,
    scheduler_jobs=2,
    function_calls_per_run=2,
    function_seconds=60,
    catalog=CAT,
)


def lines(bill):
    return {line.item: line.usd for line in bill.lines}


def test_seed001_every_4_hours_is_76_cents_a_month():
    bill = monthly_bill("gcp/n1-standard-1", "0 */4 * * *", 2, **SEED_SETUP)
    assert bill.runs_per_month == 180  # 6 a day x the study's 30-day month
    assert bill.billing == "per second, 1 minute minimum"
    # the study's lines, each printed to the cent
    assert {k: round(v, 2) for k, v in lines(bill).items()} == {
        "compute": 0.06,
        "disk": 0.40,
        "scheduler": 0.20,
        "function": 0.10,
    }
    assert lines(bill)["function"] == pytest.approx(0.100008, abs=1e-12)  # 463e-9 x 216,000
    assert bill.total_usd == pytest.approx(0.760008, abs=1e-12) and round(bill.total_usd, 2) == 0.76
    assert bill.minimum_overhead_usd == 0  # 2 minutes is past the 1-minute minimum


def test_seed001_hourly_variant_is_1_24():
    bill = monthly_bill("gcp/n1-standard-1", "rate(1 hour)", 2, **SEED_SETUP)
    assert bill.runs_per_month == 720
    assert {k: round(v, 2) for k, v in lines(bill).items()} == {
        "compute": 0.24,
        "disk": 0.40,
        "scheduler": 0.20,
        "function": 0.40,
    }
    assert round(bill.total_usd, 2) == 1.24


def test_seed001_ten_minute_minimum_costs_31_percent_more():
    now = monthly_bill("gcp/n1-standard-1", "cron(0 */4 * * ? *)", 2, **SEED_SETUP)
    old = monthly_bill("gcp/n1-standard-1", "cron(0 */4 * * ? *)", 2, billing_as_of=date(2017, 9, 1), **SEED_SETUP)
    assert old.billing == "per minute, 10 minutes minimum"
    assert lines(old)["compute"] == pytest.approx(0.30, abs=1e-12)  # 180 runs x 10 min x $0.01/h
    assert old.minimum_overhead_usd == pytest.approx(0.24, abs=1e-12)
    assert old.total_usd - now.total_usd == pytest.approx(0.24, abs=1e-12)
    # "would increase compute monthly costs by $0.24/31%": of the $0.76 total, truncated
    assert math.floor(old.minimum_overhead_percent) == 31
    assert old.minimum_overhead_percent == pytest.approx(100 * 0.24 / 0.760008)


def test_weekly_gpu_benchmark_today_by_hand():
    """g4dn.xlarge on demand every Monday 03:00 UTC, 30 minutes up, a 100 GB
    gp3 disk deleted with the instance, one EventBridge schedule."""
    hourly = CAT.price("aws/g4dn.xlarge").hourly_usd
    assert hourly == 0.526  # the catalog's newest price; the figures below are computed from it
    sp = service_prices("aws")
    assert (sp.get("disk_gb_month_usd"), sp.get("scheduler_per_million_usd")) == (0.08, 1.0)
    bill = monthly_bill("aws/g4dn.xlarge", "cron(0 3 ? * MON *)", 30, disk_gb=100, catalog=CAT)
    # a 730 h month holds 730 / 24 / 7 = 365/84 Mondays on average
    assert F(bill.runs_per_month_exact) == F(365, 84)
    compute = F(365, 84) * F(1, 2) * F(526, 1000)  # = 1.1427976... : runs x 0.5 h x $0.526
    disk = 100 * (F(365, 84) * F(1, 2)) / 730 * F(8, 100)  # = 1/42: GB x hours up / 730 x $0.08
    scheduler = F(365, 84) / 10**6  # $1 per million invocations
    assert lines(bill) == {
        "compute": pytest.approx(float(compute), abs=1e-12),
        "disk": pytest.approx(1 / 42, abs=1e-12),
        "scheduler": pytest.approx(float(scheduler), abs=1e-15),
    }
    assert bill.total_usd == pytest.approx(float(compute + disk + scheduler), abs=1e-12)
    assert round(bill.total_usd, 2) == 1.17
    # 14 million free invocations cover the scheduler line
    assert bill.total_after_free_tier_usd == pytest.approx(float(compute + disk), abs=1e-12)


def test_same_weekly_run_in_unix_cron_and_aws_cron_bills_the_same():
    a = monthly_bill("aws/g4dn.xlarge", "0 3 * * 1", 30, catalog=CAT)
    b = monthly_bill("aws/g4dn.xlarge", "cron(0 3 ? * 2 *)", 30, catalog=CAT)
    assert a.total_usd == b.total_usd


def test_a_sweeper_function_on_its_own_schedule_and_its_free_tier():
    bill = monthly_bill(
        "aws/g4dn.xlarge",
        "rate(7 days)",
        30,
        function_every="rate(1 hour)",
        function_seconds=10,
        function_memory_gb=0.125,
        catalog=CAT,
    )
    fn = next(line for line in bill.lines if line.item == "function")
    # 730 calls x 10 s x 0.125 GB = 912.5 GB-s at $0.0000166667, + 730 x $0.20/M
    assert fn.usd == pytest.approx(912.5 * 0.0000166667 + 730 * 0.2e-6, abs=1e-12)
    assert fn.free_usd == pytest.approx(fn.usd, abs=1e-12)  # all inside 400,000 GB-s and 1 M requests


def test_the_studys_function_price_is_for_256_mb_only():
    with pytest.raises(CostError, match="--function-memory-gb 0.25"):
        monthly_bill("gcp/n1-standard-1", "rate(4 hours)", 2, **{**SEED_SETUP, "catalog": CAT}, function_memory_gb=1)


@pytest.mark.parametrize(
    "expr, per_day, aws, unix",
    [
        ("rate(4 hours)", 6, "rate(4 hours)", "0 */4 * * *"),
        ("rate(1 day)", 1, "rate(1 day)", "0 0 * * *"),
        ("rate(15 minutes)", 96, "rate(15 minutes)", "*/15 * * * *"),
        ("0 */4 * * *", 6, "cron(0 0,4,8,12,16,20 * * ? *)", "0 0,4,8,12,16,20 * * *"),
        ("cron(30 3 ? * MON-FRI *)", F(5, 7), "cron(30 3 ? * 2,3,4,5,6 *)", "30 3 * * 1,2,3,4,5"),
        ("0 0 * * 0,7", F(1, 7), "cron(0 0 ? * 1 *)", "0 0 * * 0"),
        # the 1st of each month: 4800 firings in the 146097 days of a Gregorian cycle
        ("0 0 1 * *", F(4800, 146097), "cron(0 0 1 * ? *)", "0 0 1 * *"),
    ],
)
def test_schedule_expressions(expr, per_day, aws, unix):
    s = parse_schedule(expr)
    assert s.runs_per_day() == per_day
    assert s.aws() == aws and s.unix() == unix
    assert parse_schedule(s.aws()).runs_per_day() == parse_schedule(s.unix()).runs_per_day() == per_day


@pytest.mark.parametrize(
    "expr, message",
    [
        ("every 4 hours", "not a schedule expression"),
        ("rate(4 weeks)", "rate(N minutes|hours|days)"),
        ("rate(0 hours)", "at least 1"),
        ("cron(0 */4 * * * *)", "needs '?'"),
        ("cron(0 0 ? * 6#3 *)", "L, W and # are not supported"),
        ("0 25 * * *", "outside 0-23"),
        ("cron(0 4 * * ?)", "six fields"),
    ],
)
def test_bad_schedule_expressions_name_the_fix(expr, message):
    with pytest.raises(ScheduleError, match=message.replace("(", r"\(").replace(")", r"\)").replace("?", r"\?")):
        parse_schedule(expr)


def test_rate_that_does_not_divide_a_day_has_no_unix_form():
    with pytest.raises(ScheduleError, match="give a cron expression"):
        parse_schedule("rate(7 hours)").unix()


SEED_ARGS = [
    "cost",
    "gcp/n1-standard-1",
    "--market",
    "spot",
    "--as-of",
    "2018-11-19",
    "--every",
    "0 */4 * * *",
    "--minutes-up",
    "2",
    "--disk-gb",
    "10",
    "--disk-always",
    "--scheduler-jobs",
    "2",
    "--function-calls-per-run",
    "2",
    "--function-seconds",
    "60",
]


def test_cli_prints_the_itemised_bill_with_sources(capsys):
    assert main(SEED_ARGS) == 0
    out = capsys.readouterr().out
    assert "$0.76/month" in out and "180 per month" in out
    assert "source (disk): seed 001" in out


def test_cli_json(capsys):
    assert main([*SEED_ARGS, "--billing-as-of", "2017-09-01", "--json"]) == 0
    bill = json.loads(capsys.readouterr().out)
    assert [line["item"] for line in bill["lines"]] == ["compute", "disk", "scheduler", "function"]
    assert round(bill["minimum_overhead_usd"], 2) == 0.24 and bill["billing_as_of"] == "2017-09-01"


def test_cli_refuses_every_without_minutes_up(capsys):
    assert main(["cost", "aws/g4dn.xlarge", "--every", "rate(1 day)"]) == 2
    assert "--minutes-up" in capsys.readouterr().err


def test_cli_refuses_a_bad_expression_without_a_traceback(capsys):
    assert main(["cost", "aws/g4dn.xlarge", "--every", "rate(4 weeks)", "--minutes-up", "5"]) == 2
    assert "rate(N minutes|hours|days)" in capsys.readouterr().err


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"minutes_up": 0}, "--minutes-up must be a positive number of minutes, got 0"),
        ({"disk_gb": -1}, "--disk-gb must be zero or more, got -1"),
        ({"scheduler_jobs": -2}, "--scheduler-jobs must be zero or more, got -2"),
        ({"hourly_usd": -0.5}, "--hourly-usd must not be negative, got -0.5"),
    ],
)
def test_bad_inputs_name_the_option(kwargs, message):
    args = {"minutes_up": 30, **kwargs}
    with pytest.raises(CostError, match=message.replace("(", r"\(").replace(")", r"\)")):
        monthly_bill("aws/g4dn.xlarge", "rate(1 day)", catalog=CAT, **args)


def test_a_given_price_is_billed_under_the_offerings_rule():
    """--hourly-usd replaces the catalog's price, not the billing rule: daily
    runs of 30 s each are billed the AWS per-second minimum of 60 s."""
    bill = monthly_bill("aws/g4dn.xlarge", "rate(1 day)", 0.5, hourly_usd=3.6, scheduler_jobs=0, catalog=CAT)
    runs = F(bill.runs_per_month_exact)
    assert bill.lines[0].source == "given with --hourly-usd"
    assert bill.lines[0].exact[0] == runs * 60 / 3600 * F("3.6")


def test_a_billing_date_before_any_terms_is_refused():
    with pytest.raises(CatalogError, match="has no terms on 1990-01-01"):
        monthly_bill("aws/g4dn.xlarge", "rate(1 day)", 30, billing_as_of=date(1990, 1, 1), catalog=CAT)
