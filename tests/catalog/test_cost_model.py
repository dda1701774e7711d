"""Billing rules, spot time-weighting, on-prem amortisation and break-even,
each checked against figures computed by hand."""

from __future__ import annotations

from datetime import date, datetime, timedelta, timezone

import pytest

from analysis.price.billed import (
    CostError,
    billed_seconds,
    breakeven_days_per_month,
    cost_of,
    onprem_hourly,
    onprem_monthly,
    time_weighted_price,
)
from infra.catalog import BillingTerms, load_catalog

CAT = load_catalog()
NOW = date(2018, 7, 1)


def terms(**kw):
    base = dict(rule="t", since=date(2000, 1, 1), kind="metered", source="test")
    return BillingTerms(**{**base, **kw})


@pytest.mark.parametrize(
    "rule, seconds, billed",
    [
        (terms(increment_seconds=1, minimum_seconds=60), 30, 60),  # AWS/GCP: minute minimum
        (terms(increment_seconds=1, minimum_seconds=60), 61.2, 62),  # then whole seconds, rounded up
        (terms(increment_seconds=3600, minimum_seconds=3600), 3.16 * 3600, 4 * 3600),  # Softlayer hours
        (terms(increment_seconds=3600, minimum_seconds=3600), 7200.0000001, 7200),  # float noise is not an hour
        (terms(increment_seconds=60, minimum_seconds=600), 120, 600),  # GCE before 2017-09-26
        (terms(increment_seconds=60, minimum_seconds=600), 601, 660),
        (terms(increment_seconds=0.001), 1.0004, 1.001),  # Paperspace milliseconds
        (terms(kind="monthly"), 1234.5, 1234.5),  # prorated, as used
        (terms(kind="amortised"), 99.9, 99.9),
    ],
)
def test_billed_seconds(rule, seconds, billed):
    assert billed_seconds(rule, seconds) == pytest.approx(billed)


def test_negative_duration_is_refused():
    with pytest.raises(CostError, match="zero or more seconds"):
        billed_seconds(terms(), -1)


def test_aws_per_second_billing_and_the_hourly_rule_before_it():
    after = cost_of("aws/p2.xlarge", 90 * 60, as_of=date(2018, 2, 8), catalog=CAT)
    assert after.billed_hours == pytest.approx(1.5) and after.cost_usd == pytest.approx(1.35)
    # before 2017-10-02 every started hour was billed: 90 minutes = 2 hours
    before = cost_of("aws/p2.xlarge", 90 * 60, as_of=date(2017, 9, 1), hourly_usd=0.9, catalog=CAT)
    assert before.billed_hours == 2 and before.cost_usd == pytest.approx(1.8)


def test_paperspace_bills_milliseconds_plus_the_prorated_monthly_fee():
    c = cost_of("paperspace/v100", 3600, as_of=date(2018, 2, 8), catalog=CAT)
    assert c.usage_usd == pytest.approx(2.3)
    assert c.fees_usd == pytest.approx(5.0 / 730)
    assert c.cost_usd == pytest.approx(2.3 + 5.0 / 730)


def test_softlayer_rounds_up_to_whole_hours():
    c = cost_of("softlayer/bm-2xm60", 3.16 * 3600, as_of=date(2018, 2, 8), catalog=CAT)
    assert c.billed_hours == 4 and c.cost_usd == pytest.approx(11.2)


def test_hourly_price_override_keeps_the_billing_rule():
    c = cost_of("aws/p3.8xlarge", 30, hourly_usd=4.0, as_of=date(2018, 7, 1), catalog=CAT)
    assert c.billed_hours == pytest.approx(60 / 3600) and c.cost_usd == pytest.approx(4.0 / 60)
    assert c.price_source == "recorded at launch"


def test_spot_cost_uses_the_snapshot_spot_price():
    c = cost_of("aws/p3.16xlarge", 2 * 3600, market="spot", as_of=NOW, catalog=CAT)
    assert c.cost_usd == pytest.approx(16.0)


def test_spot_attempts_are_each_billed_on_their_own():
    # two attempts of 30 s each: each pays the 60 s minimum
    total = sum(cost_of("aws/p2.xlarge", 30, "spot", as_of=NOW, hourly_usd=0.36, catalog=CAT).cost_usd for _ in "ab")
    assert total == pytest.approx(2 * 0.36 / 60)


def test_time_weighted_spot_price_by_hand():
    t0 = datetime(2026, 11, 1, 10, 0, tzinfo=timezone.utc)
    series = [
        (t0 - timedelta(hours=5), 1.00),  # in force when the window opens
        (t0 + timedelta(minutes=30), 2.00),
        (t0 + timedelta(minutes=45), 0.50),
        (t0 + timedelta(hours=3), 9.99),  # after the window: ignored
    ]
    # 30 min at 1.00, 15 min at 2.00, 75 min at 0.50 over 120 min
    expected = (30 * 1.00 + 15 * 2.00 + 75 * 0.50) / 120
    assert time_weighted_price(series, t0, t0 + timedelta(hours=2)) == pytest.approx(expected)


def test_time_weighted_price_needs_the_price_at_window_start():
    t0 = datetime(2026, 11, 1, tzinfo=timezone.utc)
    with pytest.raises(CostError, match="after the window start"):
        time_weighted_price([(t0 + timedelta(minutes=1), 1.0)], t0, t0 + timedelta(hours=1))


PARKOPEDIA = CAT.get("onprem/parkopedia-4x1080ti").onprem


def test_onprem_breakdown_reproduces_seed_004_table():
    # "Price / month $216.67 ... Cost / month $48.00 ... Global cost / month $264.67"
    month = onprem_monthly(PARKOPEDIA)
    assert round(month["amortisation_usd_per_month"], 2) == 216.67
    assert round(month["electricity_usd_per_month"], 2) == 48.00
    assert round(month["total_usd_per_month"], 2) == 264.67
    # per hour of use at 10 days x 24 h (the prose's "about $1.30/hour" does
    # not follow from its own table: 264.67 / 240 h = $1.10)
    assert onprem_hourly(PARKOPEDIA) == pytest.approx(264.6667 / 240, rel=1e-4)


def test_onprem_hourly_falls_with_utilisation():
    rates = [onprem_hourly(PARKOPEDIA, d) for d in (5, 10, 20, 30)]
    assert rates == sorted(rates, reverse=True)
    assert onprem_hourly(PARKOPEDIA, 30) == pytest.approx(6500 / 30 / 720 + 0.2)


def test_onprem_cost_through_cost_of():
    c = cost_of("onprem/parkopedia-4x1080ti", 24 * 3600, days_per_month=20, catalog=CAT)
    assert c.cost_usd == pytest.approx(24 * (6500 / 30 / 480 + 0.2))
    assert c.onprem["days_per_month"] == 20


def test_breakeven_by_hand():
    # box: $216.67/month amortisation, $0.20/h electricity; 4x1080Ti ResNet50 b64 = 947 img/s (seed 004)
    # cloud: $5.12/h at 600 img/s. d = A / (24 (T_box C / T_cloud - P e))
    d = breakeven_days_per_month(PARKOPEDIA, 947, 5.12, 600)
    expected = (6500 / 30) / (24 * (947 * 5.12 / 600 - 0.2))
    assert d == pytest.approx(expected)
    # at that utilisation the per-image costs are equal
    assert onprem_hourly(PARKOPEDIA, d) / 947 == pytest.approx(5.12 / 600)


def test_breakeven_never_when_electricity_alone_costs_more():
    assert breakeven_days_per_month(PARKOPEDIA, 10, 0.01, 1000) is None


@pytest.mark.parametrize(
    "kw",
    [
        dict(onprem_throughput=0, cloud_hourly_usd=1, cloud_throughput=1),
        dict(onprem_throughput=1, cloud_hourly_usd=-1, cloud_throughput=1),
    ],
)
def test_breakeven_rejects_non_positive_inputs(kw):
    with pytest.raises(CostError, match="must be positive"):
        breakeven_days_per_month(PARKOPEDIA, **kw)


def test_days_per_month_is_for_onprem_only():
    with pytest.raises(CostError, match="on-prem offerings only"):
        cost_of("aws/p2.xlarge", 60, days_per_month=10, as_of=NOW, catalog=CAT)
