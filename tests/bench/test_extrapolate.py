"""analysis.bench.extrapolate: the whole job's hours and billed cost from one probe,
checked against hand-computed cases under each kind of billing rule."""

from __future__ import annotations

import dataclasses
import math
from datetime import date

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from analysis.bench.extrapolate import (
    PeriodicCost,
    estimate_job,
    periodic_cost,
    probe_periodic,
)
from analysis.price.billed import CostError, billed
from infra.catalog import BillingTerms, load_catalog
from payload.steady import Steady


def _terms(kind: str = "metered", **kw) -> BillingTerms:
    return BillingTerms(rule="test", since=date(2020, 1, 1), kind=kind, source="test", **kw)


PER_SECOND = _terms(increment_seconds=1, minimum_seconds=0)
PER_SECOND_MIN_MINUTE = _terms(increment_seconds=1, minimum_seconds=60)
PER_MINUTE_MIN_TEN = _terms(increment_seconds=60, minimum_seconds=600)
PER_HOUR = _terms(increment_seconds=3600, minimum_seconds=3600)
MONTHLY = _terms("monthly", hours_per_month=730)
AMORTISED = _terms("amortised")
MILLISECOND_WITH_FEE = _terms(increment_seconds=0.001, monthly_fee_usd=5.0, hours_per_month=730)


def _steady(rate: float, low: float, high: float, steady: bool = True) -> Steady:
    return Steady(
        samples_per_second=rate,
        low=low,
        high=high,
        rel_halfwidth=(high - low) / 2 / rate if rate else float("inf"),
        warmup_seconds=12.0,
        windows=8,
        steady=steady,
    )


# 300 s overhead, 360,000 samples at 100/s (interval 80..125): 3900 s, fast 3180 s, slow 4800 s.
JOB = dict(overhead_seconds=300.0, work_samples=360_000.0, steady=_steady(100.0, 80.0, 125.0))


def test_per_second_billing_by_hand():
    est = estimate_job(**JOB, terms=PER_SECOND, hourly_usd=2.0)
    assert est.hours == pytest.approx(3900 / 3600)
    assert est.hours_low == pytest.approx(3180 / 3600)
    assert est.hours_high == pytest.approx(4800 / 3600)
    assert est.usd == pytest.approx(2.0 * 3900 / 3600)
    assert est.usd_low == pytest.approx(2.0 * 3180 / 3600)  # the high throughput gives the low cost
    assert est.usd_high == pytest.approx(2.0 * 4800 / 3600)
    assert est.billed_hours == pytest.approx(3900 / 3600)
    assert not any(n.startswith("billed") for n in est.notes)


def test_per_hour_billing_rounds_each_bound_up():
    est = estimate_job(**JOB, terms=PER_HOUR, hourly_usd=2.0)
    # 3900 s -> 2 h, 3180 s -> 1 h, 4800 s -> 2 h
    assert (est.billed_hours, est.usd, est.usd_low, est.usd_high) == pytest.approx((2.0, 4.0, 2.0, 4.0))
    assert est.hours == pytest.approx(3900 / 3600)  # wall time is not rounded
    assert any("billed per hour, 1 hour minimum: 2 h billed for 1.083 h used" in n for n in est.notes)


def test_per_second_minimum_applies_to_a_short_job():
    # 10 s overhead + 1000 samples at 100/s (50..200): 20 s, fast 15 s, slow 30 s; all billed 60 s
    est = estimate_job(
        overhead_seconds=10.0,
        work_samples=1000.0,
        steady=_steady(100.0, 50.0, 200.0),
        terms=PER_SECOND_MIN_MINUTE,
        hourly_usd=3.6,
    )
    assert est.hours == pytest.approx(20 / 3600)
    assert est.billed_hours == pytest.approx(60 / 3600)
    assert (est.usd, est.usd_low, est.usd_high) == pytest.approx((0.06, 0.06, 0.06))


def test_per_minute_increments_and_ten_minute_minimum():
    # 50 s overhead + 60,000 samples at 100/s (75..150): 650 s -> 660 s; fast 450 s -> 600 s (minimum);
    # slow 850 s -> 900 s
    est = estimate_job(
        overhead_seconds=50.0,
        work_samples=60_000.0,
        steady=_steady(100.0, 75.0, 150.0),
        terms=PER_MINUTE_MIN_TEN,
        hourly_usd=6.0,
    )
    assert est.billed_hours == pytest.approx(660 / 3600)
    assert est.usd == pytest.approx(6.0 * 660 / 3600)
    assert est.usd_low == pytest.approx(6.0 * 600 / 3600)
    assert est.usd_high == pytest.approx(6.0 * 900 / 3600)


def test_spot_is_priced_at_the_price_paid():
    on_demand = estimate_job(**JOB, terms=PER_SECOND, hourly_usd=2.0)
    spot = estimate_job(**JOB, terms=PER_SECOND, hourly_usd=0.62)
    assert spot.usd == pytest.approx(0.62 * 3900 / 3600)
    assert spot.hours == on_demand.hours


def test_zero_overhead_is_work_over_rate():
    est = estimate_job(
        overhead_seconds=0.0,
        work_samples=720_000.0,
        steady=_steady(200.0, 200.0, 200.0),
        terms=PER_SECOND,
        hourly_usd=1.5,
    )
    assert est.hours == est.hours_low == est.hours_high == pytest.approx(1.0)
    assert est.usd == est.usd_low == est.usd_high == pytest.approx(1.5)
    assert not any("overhead" in n for n in est.notes)


def test_overhead_larger_than_the_job():
    # 1800 s overhead, 36,000 samples at 100/s = 360 s of training
    est = estimate_job(
        overhead_seconds=1800.0,
        work_samples=36_000.0,
        steady=_steady(100.0, 100.0, 100.0),
        terms=PER_HOUR,
        hourly_usd=1.0,
    )
    assert est.hours == pytest.approx(2160 / 3600)
    assert est.usd == pytest.approx(1.0)  # one started hour
    assert any("overhead" in n and "longer than the training" in n for n in est.notes)


def test_periodic_pauses_seen_three_times_by_hand():
    # pauses of 5, 4 and 6 s at 12,000, 24,000 and 36,000 samples: pauses 2..3 over the 24,000 samples
    # between the first and the last, so 360,000 samples pay 15 periods of (4 + 6) / 2 s: 150 s (120..180)
    gaps = [[100.0, 12_000, 5.0], [220.0, 24_000, 4.0], [340.0, 36_000, 6.0]]
    cost = periodic_cost(gaps, 360_000.0, seen_samples=40_000.0, seen_seconds=400.0)
    assert (cost.seconds, cost.low, cost.high, cost.seen) == pytest.approx((150.0, 120.0, 180.0, 3))
    assert "5.0 s every 12,000 samples (3 seen)" in cost.note
    est = estimate_job(**JOB, terms=PER_SECOND, hourly_usd=2.0, periodic=cost)
    assert est.hours == pytest.approx((3900 + 150) / 3600)
    assert est.hours_low == pytest.approx((3180 + 120) / 3600)
    assert est.hours_high == pytest.approx((4800 + 180) / 3600)
    assert est.basis["periodic_seconds"] == "measured" and est.periodic_seconds == 150.0
    assert cost.note in est.notes


def test_one_pause_is_charged_with_a_wider_interval_and_says_so():
    # 5 s after 12,000 samples, none in the 18,000 seen since: one every 18,000 (100 s for 360,000),
    # from that pause alone (5 s) to one every 12,000 (150 s)
    cost = periodic_cost([[100.0, 12_000, 5.0]], 360_000.0, seen_samples=30_000.0, seen_seconds=300.0)
    assert (cost.seconds, cost.low, cost.high, cost.seen) == pytest.approx((100.0, 5.0, 150.0, 1))
    assert "fewer than two periods" in cost.note
    est = estimate_job(**JOB, terms=PER_SECOND, hourly_usd=2.0, periodic=cost)
    assert (est.hours_low * 3600, est.hours * 3600, est.hours_high * 3600) == pytest.approx((3185, 4000, 4950))
    # the wall ran twice as fast as the readings' clock: every pause second counts twice
    doubled = periodic_cost([[100.0, 12_000, 5.0]], 360_000.0, seen_samples=30_000.0, seen_seconds=300.0, scale=2)
    assert doubled.seconds == pytest.approx(200.0)


def test_no_pause_seen_may_exclude_them_and_an_old_record_is_not_measured():
    cost = periodic_cost([], 360_000.0, seen_samples=9_000.0, seen_seconds=90.0)
    assert (cost.seconds, cost.seen) == (0.0, 0)
    est = estimate_job(**JOB, terms=PER_SECOND, hourly_usd=2.0, periodic=cost)
    assert "periodic_seconds" not in est.basis and est.hours == pytest.approx(3900 / 3600)
    assert any(
        "may exclude evaluation/checkpoint pauses: the probe saw none in 90 s (9,000 samples)" == n for n in est.notes
    )
    assert probe_periodic({"points": [[0, 0], [1, 10]]}, 100.0) is None  # recorded before pauses were measured
    assert any("not measured" in n for n in estimate_job(**JOB, terms=PER_SECOND, hourly_usd=2.0).notes)


@pytest.mark.parametrize(("terms", "word"), [(MONTHLY, "monthly rental"), (AMORTISED, "amortised")])
def test_monthly_and_amortised_terms_charge_as_used(terms, word):
    est = estimate_job(**JOB, terms=terms, hourly_usd=0.2)
    assert est.billed_hours == pytest.approx(3900 / 3600)
    assert est.usd == pytest.approx(0.2 * 3900 / 3600)
    assert est.usd_high == pytest.approx(0.2 * 4800 / 3600)
    assert any(word in n for n in est.notes)


def test_monthly_account_fee_is_prorated():
    est = estimate_job(
        overhead_seconds=0.0,
        work_samples=3600.0,
        steady=_steady(1.0, 1.0, 1.0),
        terms=MILLISECOND_WITH_FEE,
        hourly_usd=0.51,
    )
    assert est.usd == pytest.approx(0.51 + 5.0 / 730)
    assert any("$5/month account fee" in n for n in est.notes)


def test_catalog_terms_then_and_now():
    catalog = load_catalog()
    hourly_era = catalog.billing_terms("aws/g4dn.xlarge", date(2016, 6, 1))
    per_second_era = catalog.billing_terms("aws/g4dn.xlarge", date(2025, 6, 1))
    assert estimate_job(**JOB, terms=hourly_era, hourly_usd=0.526).usd == pytest.approx(2 * 0.526)
    assert estimate_job(**JOB, terms=per_second_era, hourly_usd=0.526).usd == pytest.approx(3900 / 3600 * 0.526)


def test_basis_marks_measured_and_extrapolated():
    est = estimate_job(**JOB, terms=PER_SECOND, hourly_usd=2.0)
    assert est.basis == {
        "overhead_seconds": "measured",
        "samples_per_second": "measured",
        "est_hours": "extrapolated",
        "est_usd": "extrapolated",
    }


def test_not_steady_is_said():
    job = dict(JOB, steady=_steady(100.0, 80.0, 125.0, steady=False))
    est = estimate_job(**job, terms=PER_SECOND, hourly_usd=2.0)
    assert any("not steady" in n and "22.5%" in n for n in est.notes)
    trend = dict(JOB, steady=dataclasses.replace(job["steady"], unsteady="the rate drifts +2.0% across the window"))
    notes = estimate_job(**trend, terms=PER_SECOND, hourly_usd=2.0).notes
    assert any("not steady by the end of the probe (the rate drifts +2.0% across the window)" in n for n in notes)


def test_interval_reaching_zero_is_unbounded():
    job = dict(JOB, steady=_steady(100.0, 0.0, 200.0, steady=False))
    est = estimate_job(**job, terms=PER_HOUR, hourly_usd=2.0)
    assert est.hours_high == float("inf") and est.usd_high == float("inf")
    assert est.usd_low == pytest.approx(2.0)  # 300 + 1800 s -> one hour
    assert any("no upper bound" in n for n in est.notes)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"overhead_seconds": -1.0}, "overhead_seconds"),
        ({"work_samples": 0.0}, "work_samples"),
        ({"work_samples": float("nan")}, "work_samples"),
        ({"hourly_usd": -0.5}, "hourly_usd"),
        ({"periodic": PeriodicCost(float("inf"), 0.0, float("inf"), 2)}, "periodic_seconds"),
        ({"steady": _steady(0.0, 0.0, 0.0)}, "nothing to extrapolate"),
        ({"steady": _steady(100.0, 120.0, 130.0)}, "does not hold its rate"),
    ],
)
def test_bad_inputs_are_clear_errors(change, message):
    args = dict(JOB, terms=PER_SECOND, hourly_usd=2.0) | change
    with pytest.raises(CostError, match=message):
        estimate_job(**args)


# --- probe bound -------------------------------------------------------------------------


def test_probe_bound_per_second():
    # 10 min probe + 10 min boot allowance at $3/h, per second: 1200 s
    assert sum(billed(PER_SECOND, 600 + 600, 3.0)[1:]) == pytest.approx(1.0)


def test_probe_bound_per_hour_bills_a_whole_hour():
    assert sum(billed(PER_HOUR, 600 + 600, 3.0)[1:]) == pytest.approx(3.0)
    # 50 min + 20 min crosses into a second hour
    assert sum(billed(PER_HOUR, 3000 + 1200, 3.0)[1:]) == pytest.approx(6.0)


def test_probe_bound_minimum():
    assert sum(billed(PER_SECOND_MIN_MINUTE, 20, 3.6)[1:]) == pytest.approx(0.06)


def test_an_unbounded_duration_costs_inf():
    assert billed(PER_SECOND, math.inf, 3.0)[:2] == (math.inf, math.inf)


@settings(max_examples=200, deadline=None)
@given(
    overhead=st.floats(0, 1e5),
    work=st.floats(1, 1e9),
    rate=st.floats(0.1, 1e5),
    spread=st.tuples(st.floats(0.0, 0.99), st.floats(0.0, 5.0)),
    terms=st.sampled_from([PER_SECOND, PER_SECOND_MIN_MINUTE, PER_MINUTE_MIN_TEN, PER_HOUR, MONTHLY, AMORTISED]),
    hourly=st.floats(0, 100),
)
def test_bounds_are_ordered_and_billing_never_undercharges(overhead, work, rate, spread, terms, hourly):
    low, high = rate * (1 - spread[0]), rate * (1 + spread[1])
    est = estimate_job(
        overhead_seconds=overhead, work_samples=work, steady=_steady(rate, low, high), terms=terms, hourly_usd=hourly
    )
    assert est.hours_low <= est.hours <= est.hours_high
    assert est.usd_low <= est.usd <= est.usd_high
    # billed_seconds forgives float noise of 1e-9 of an increment (7200.0000001 s is two hours, not three)
    noise_hours = 1e-9 * terms.increment_seconds / 3600
    assert est.billed_hours >= est.hours * (1 - 1e-12) - noise_hours
    assert est.usd == pytest.approx(hourly * est.billed_hours)


def test_steady_read_back_from_json_is_accepted():
    # result.json stores Steady.to_dict(): a non-finite half-width comes back as None
    wide = _steady(100.0, 80.0, 125.0, steady=False)
    restored = Steady(**(wide.to_dict() | {"rel_halfwidth": None}))
    est = estimate_job(**(JOB | {"steady": restored}), terms=PER_SECOND, hourly_usd=2.0)
    assert any("interval unbounded" in n for n in est.notes)


# --- the warm-up and the finish, as the probe measured them -----------------------------------


def _with_warmup(seconds: float, samples: float | None) -> Steady:
    return dataclasses.replace(_steady(100.0, 80.0, 125.0), warmup_seconds=seconds, warmup_samples=samples)


def test_the_warmup_is_charged_as_measured_and_the_rest_at_the_steady_rate():
    # 300 s overhead; 60 s of warm-up that did 2,000 samples; 358,000 left at 100/s (80..125)
    est = estimate_job(**(JOB | {"steady": _with_warmup(60.0, 2000.0)}), terms=PER_SECOND, hourly_usd=2.0)
    assert est.hours == pytest.approx((300 + 60 + 3580) / 3600)
    assert est.hours_low == pytest.approx((300 + 60 + 358_000 / 125) / 3600)
    assert est.hours_high == pytest.approx((300 + 60 + 358_000 / 80) / 3600)
    assert est.usd == pytest.approx(2.0 * 3940 / 3600)


def test_a_warmup_without_its_samples_is_not_charged():
    est = estimate_job(**(JOB | {"steady": _with_warmup(60.0, None)}), terms=PER_SECOND, hourly_usd=2.0)
    assert est.hours == pytest.approx(3900 / 3600)


def test_a_job_shorter_than_the_warmup_takes_its_share_of_the_warmup():
    # 1,000 samples of a warm-up that did 4,000 in 40 s: 10 s, nothing at the steady rate
    job = JOB | {"work_samples": 1000.0, "steady": _with_warmup(40.0, 4000.0)}
    est = estimate_job(**job, terms=PER_SECOND, hourly_usd=2.0)
    assert est.hours == est.hours_low == est.hours_high == pytest.approx((300 + 10) / 3600)


def test_finish_seconds_are_billed_like_the_overhead():
    est = estimate_job(**JOB, finish_seconds=30.0, terms=PER_HOUR, hourly_usd=2.0)
    assert est.hours == pytest.approx(3930 / 3600)
    assert est.billed_hours == 2.0 and est.usd == pytest.approx(4.0)  # 1 h 5.5 min billed as 2 h
    assert est.basis["finish_seconds"] == "measured"
    with pytest.raises(CostError, match="finish_seconds"):
        estimate_job(**JOB, finish_seconds=-1.0, terms=PER_SECOND, hourly_usd=2.0)
