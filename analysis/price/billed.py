"""The cost model: price x billed duration under the billing terms in force on the pricing date (billing.toml),
the price's source kept beside it. Imports only the catalog: it runs without pandas, Pulumi or TensorFlow."""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from datetime import date, datetime, timezone

from infra.catalog import BillingTerms, Catalog, CatalogError, OnPremSpec, PriceQuote, load_catalog

HOURS_PER_DAY = 24.0
# The report's "best under a deadline / a budget" when none is given (`report --deadline-hours/--budget-usd`):
# a result by the same time tomorrow, and a modest research budget for one training run.
DEFAULT_DEADLINE_HOURS = 24.0
DEFAULT_BUDGET_USD = 100.0


class CostError(CatalogError):
    """A cost question with bad inputs (negative hours, no spot price, ...)."""


def billed_seconds(terms: BillingTerms, seconds: float) -> float:
    """Seconds charged under `terms`: metered rules round up to the increment and apply the minimum; monthly
    proration and on-prem amortisation charge the time as used."""
    if seconds < 0 or math.isnan(seconds):
        raise CostError(f"duration must be zero or more seconds, got {seconds}")
    if terms.kind != "metered" or seconds == 0:
        return float(seconds)
    inc = terms.increment_seconds
    # whole increments; the epsilon keeps 7200.0000001 s (float noise) from becoming a third hour
    units = math.ceil(seconds / inc - 1e-9)
    return max(terms.minimum_seconds, units * inc)


def onprem_monthly(spec: OnPremSpec, days_per_month: float | None = None) -> dict[str, float]:
    """Seed 004's breakdown: amortisation + electricity per month."""
    days = spec.days_per_month if days_per_month is None else days_per_month
    if not 0 < days <= 31:
        raise CostError(f"days per month must be in (0, 31], got {days}")
    amortisation = spec.purchase_usd / spec.lifetime_months
    electricity = days * HOURS_PER_DAY * spec.power_kw * spec.electricity_usd_per_kwh
    return {
        "days_per_month": days,
        "amortisation_usd_per_month": amortisation,
        "electricity_usd_per_month": electricity,
        "total_usd_per_month": amortisation + electricity,
        "hours_per_month": days * HOURS_PER_DAY,
    }


def onprem_hourly(spec: OnPremSpec, days_per_month: float | None = None) -> float:
    """Hourly rate of a box used `days_per_month` days, 24 h a day."""
    month = onprem_monthly(spec, days_per_month)
    return month["total_usd_per_month"] / month["hours_per_month"]


def breakeven_days_per_month(
    spec: OnPremSpec, onprem_throughput: float, cloud_hourly_usd: float, cloud_throughput: float, times: float = 1.0
) -> float | None:
    """Days of use per month above which the box is `times` as cheap per sample (seed 004 reads off 1 and 2).
    On-prem per sample at d days: (A / (24 d) + P e) / T_box (A monthly amortisation, P e electricity per hour);
    cloud: C / T_cloud; so d = A / (24 (T_box C / (times T_cloud) - P e)). None when electricity alone costs more."""
    if not times > 0:
        raise CostError(f"times must be positive, got {times}")
    for name, value in (
        ("onprem_throughput", onprem_throughput),
        ("cloud_throughput", cloud_throughput),
        ("cloud_hourly_usd", cloud_hourly_usd),
    ):
        if value <= 0:
            raise CostError(f"{name} must be positive, got {value}")
    amortisation = spec.purchase_usd / spec.lifetime_months
    margin = (
        onprem_throughput * cloud_hourly_usd / (times * cloud_throughput) - spec.power_kw * spec.electricity_usd_per_kwh
    )
    if margin <= 0:
        return None
    return amortisation / (HOURS_PER_DAY * margin)


def time_weighted_price(series: Sequence[tuple[datetime, float]], start: datetime, end: datetime) -> float:
    """Average price over [start, end] of a step series (a spot price history: each price holds until the next
    change); the series must have a point at or before `start`."""
    if end <= start:
        raise CostError(f"price window must end after it starts ({start} .. {end})")
    points = sorted(series)
    if not points or points[0][0] > start:
        raise CostError(
            f"price history starts at {points[0][0] if points else 'nothing'}, after the window start {start}"
        )
    total = 0.0
    for i, (t, price) in enumerate(points):
        if price < 0:
            raise CostError(f"negative price {price} at {t}")
        seg_start = max(t, start)
        seg_end = min(points[i + 1][0] if i + 1 < len(points) else end, end)
        if seg_end > seg_start:
            total += price * (seg_end - seg_start).total_seconds()
    return total / (end - start).total_seconds()


@dataclass
class CostBreakdown:
    offering: str
    market: str
    as_of: str
    hourly_usd: float
    used_hours: float
    billed_hours: float
    usage_usd: float
    fees_usd: float
    cost_usd: float
    setup_fee_usd: float
    billing: str
    billing_source: str
    price_source: str
    snapshot: str
    components: list[dict] = field(default_factory=list)
    onprem: dict | None = None
    warnings: list[str] = field(default_factory=list)

    def to_dict(self) -> dict:
        return asdict(self)


def _hours(hours: float) -> float:
    if hours is None or not isinstance(hours, (int, float)) or not math.isfinite(hours) or hours <= 0:
        raise CostError(f"--hours must be a positive, finite number of hours, got {hours!r}")
    return float(hours)


def quote(
    catalog: Catalog, offering_id: str, market: str, as_of: date | None, days_per_month: float | None
) -> tuple[PriceQuote | None, float, list[str], dict | None]:
    """(price quote or None, hourly USD, warnings, on-prem breakdown)."""
    offering = catalog.get(offering_id)
    if offering.onprem is not None:
        if market != "on-demand":
            raise CostError(f"{offering_id} is an on-prem box: it has no spot market")
        breakdown = onprem_monthly(offering.onprem, days_per_month)
        return None, breakdown["total_usd_per_month"] / breakdown["hours_per_month"], [], breakdown
    if days_per_month is not None:
        raise CostError(f"--days-per-month applies to on-prem offerings only; {offering_id} is {offering.kind}")
    price, notes = catalog_price(catalog, offering_id, market, as_of)
    return price, price.hourly_usd, notes, None


def catalog_price(catalog: Catalog, offering_id: str, market: str, as_of: date | None) -> tuple[PriceQuote, list[str]]:
    """The catalog's quote and the warnings it gave (an old price, a retired offering), as words."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        price = catalog.price(offering_id, as_of=as_of, market=market)
    return price, [str(w.message) for w in caught]


def _quote_date(price: PriceQuote | None, offering, as_of: date | None) -> str:
    if price is not None:
        return price.as_of.isoformat()
    if offering.onprem is not None and offering.onprem.as_of is not None:
        return offering.onprem.as_of.isoformat()
    return (as_of or datetime.now(timezone.utc).date()).isoformat()


def cost_of(
    offering_id: str,
    seconds: float,
    market: str = "on-demand",
    as_of: date | None = None,
    days_per_month: float | None = None,
    hourly_usd: float | None = None,
    catalog: Catalog | None = None,
) -> CostBreakdown:
    """Cost of `seconds` on an offering; `hourly_usd` (the price a run paid) replaces the catalog's, the billing
    terms stay the offering's in force on `as_of` (default: today)."""
    catalog = catalog or load_catalog()
    offering = _offering_with_market(catalog, offering_id, market)
    if hourly_usd is not None:
        price, hourly, notes, onprem = None, _paid_hourly(hourly_usd), [], None
    else:
        price, hourly, notes, onprem = quote(catalog, offering_id, market, as_of, days_per_month)
    terms = _terms(catalog, offering_id, as_of)
    billed_h, usage, fees = billed(terms, seconds, hourly)
    return CostBreakdown(
        offering=offering_id,
        market=market,
        as_of=_quote_date(price, offering, as_of),
        hourly_usd=hourly,
        used_hours=seconds / 3600.0,
        billed_hours=billed_h,
        usage_usd=usage,
        fees_usd=fees,
        cost_usd=usage + fees,
        setup_fee_usd=price.setup_fee_usd if price else 0.0,
        billing=terms.describe(),
        billing_source=terms.source,
        price_source=(
            "recorded at launch" if hourly_usd is not None else (price.source if price else offering.specs_source)
        ),
        snapshot=price.snapshot if price else "",
        components=[
            {
                "name": c.name,
                "hourly_usd": c.hourly_usd,
                "quantity": c.quantity,
                "as_of": c.as_of.isoformat(),
                "source": c.source,
            }
            for c in (price.components if price else ())
        ],
        onprem=onprem,
        warnings=notes,
    )


def billed_cost(
    offering_id: str,
    seconds: float,
    market: str,
    as_of: date | None,
    hourly_usd: float,
    catalog: Catalog,
    terms: BillingTerms | None = None,
) -> tuple[float, float, BillingTerms]:
    """(cost USD, billed hours, terms) at the price paid: cost_of without its breakdown, whose strings cost more
    than the arithmetic over thousands of runs. `terms`: an earlier call's for the same offering and date."""
    _offering_with_market(catalog, offering_id, market)
    hourly = _paid_hourly(hourly_usd)
    terms = terms or _terms(catalog, offering_id, as_of)
    billed_h, usage, fees = billed(terms, seconds, hourly)
    return usage + fees, billed_h, terms


def _offering_with_market(catalog: Catalog, offering_id: str, market: str):
    offering = catalog.get(offering_id)
    if market not in offering.markets and offering.onprem is None:
        raise CostError(f"{offering_id} has no {market} market (markets: {', '.join(offering.markets)})")
    return offering


def _paid_hourly(hourly_usd: float) -> float:
    if hourly_usd < 0:
        raise CostError(f"hourly price must not be negative, got {hourly_usd}")
    return float(hourly_usd)


def _terms(catalog: Catalog, offering_id: str, as_of: date | None) -> BillingTerms:
    """The offering's billing terms in force on `as_of` (default: today)."""
    return catalog.billing_terms(offering_id, as_of or datetime.now(timezone.utc).date())


def billed(terms: BillingTerms, seconds: float, hourly: float) -> tuple[float, float, float]:
    """(billed hours, usage USD, fees USD) of `seconds` at `hourly` under `terms`, a prorated account
    fee included: the one billing formula of cost, report and bench; inf for an unbounded duration."""
    if math.isinf(seconds):
        return math.inf, math.inf, 0.0
    billed = billed_seconds(terms, seconds) / 3600.0
    usage = hourly * billed
    fees = terms.monthly_fee_usd * billed / terms.hours_per_month if terms.monthly_fee_usd else 0.0
    return billed, usage, fees
