"""Monthly bills, line by line: of a recurring benchmark (runs per month from the schedule, each billed under the
rule in force, with disk, scheduler and function) and of the leak sweeper as a cloud function. Exact arithmetic
(Fractions of the catalog's decimals) so a study's printed figures come out to the cent."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from datetime import date, datetime, timezone
from fractions import Fraction

from analysis.price.billed import CostError, billed_seconds
from infra.catalog import BillingTerms, Catalog, CatalogError, UnknownOffering, load_catalog
from infra.catalog.prices import ServicePrices, service_prices
from infra.schedule_expr import parse_schedule


def _usd(x: Fraction | float) -> str:
    """A unit price in plain decimals ($0.0000166667, not 1.66667e-05)."""
    return "$" + (f"{float(x):.10f}".rstrip("0").rstrip(".") or "0")


def _exact(x: float) -> Fraction:
    """A catalog decimal as the exact decimal it was written as (0.01 -> 1/100)."""
    return Fraction(repr(float(x)))


@dataclass
class BillLine:
    item: str
    quantity: str
    unit_price: str
    usd: float
    free_usd: float = 0.0
    source: str = ""
    exact: tuple[Fraction, Fraction] = field(default=(Fraction(0), Fraction(0)), repr=False, compare=False)


def _line(item: str, quantity: str, unit_price: str, usd: Fraction, free: Fraction, source: str) -> BillLine:
    """A bill line keeping its exact amounts for the totals."""
    return BillLine(item, quantity, unit_price, float(usd), float(free), source, (usd, free))


@dataclass
class _Bill:
    """Lines and their totals; to_dict without the exact amounts (JSON has no Fraction)."""

    def to_dict(self) -> dict:
        out = asdict(self)
        for line in out["lines"]:
            line.pop("exact")
        return out

    def totalled(self, lines: list[BillLine]):
        total = sum((line.exact[0] for line in lines), Fraction(0))
        free = sum((line.exact[1] for line in lines), Fraction(0))
        self.lines, self.total_usd, self.total_after_free_tier_usd = lines, float(total), float(total - free)
        return self


@dataclass
class MonthlyBill(_Bill):
    offering: str
    market: str
    schedule: str
    runs_per_month: float
    runs_per_month_exact: str
    hours_per_month: float
    minutes_up: float
    billing: str
    billing_as_of: str
    billing_source: str
    prices: str
    prices_as_of: str
    prices_note: str
    lines: list[BillLine] = field(default_factory=list)
    total_usd: float = 0.0
    total_after_free_tier_usd: float = 0.0
    minimum_overhead_usd: float = 0.0
    minimum_overhead_percent: float = 0.0


FUNCTION_PRICE_KEYS = ("function_gb_second_usd", "function_vcpu_second_usd", "function_per_million_usd")


def _function_line(
    sp: ServicePrices, calls: Fraction, seconds: float, memory_gb: float, vcpus: float
) -> BillLine | None:
    if calls == 0:
        return None
    if seconds <= 0:
        raise CostError(f"--function-seconds must be positive, got {seconds}")
    inc = _exact(sp.get("function_increment_seconds", 0.001))
    billed = math.ceil(_exact(seconds) / inc) * inc  # each call rounded up to the increment
    mem, cpu = _exact(memory_gb), _exact(vcpus)
    per_million = _exact(sp.get("function_per_million_usd"))
    requests = calls * per_million / 1_000_000
    if "function_unit_usd" in sp.values:
        unit_mem = sp.get("function_unit_memory_gb")
        if mem != _exact(unit_mem):
            raise CostError(
                f"{sp.label} priced functions at {unit_mem:g} GB only; pass --function-memory-gb {unit_mem:g}"
            )
        units = calls * billed / inc
        usd = units * _exact(sp.get("function_unit_usd")) + requests
        return _line(
            "function",
            f"{float(calls):g} calls x {float(billed):g} s = {float(units):,.0f} x {float(inc):g} s",
            f"{_usd(sp.get('function_unit_usd'))} per {float(inc):g} s at {unit_mem:g} GB",
            usd,
            Fraction(0),
            sp.source_of("function_unit_usd"),
        )
    gb_s, cpu_s = calls * billed * mem, calls * billed * cpu
    p_gb, p_cpu = _exact(sp.get("function_gb_second_usd")), _exact(sp.get("function_vcpu_second_usd"))
    usd = gb_s * p_gb + cpu_s * p_cpu + requests
    free = (
        min(gb_s, _exact(sp.get("free_function_gb_seconds"))) * p_gb
        + min(cpu_s, _exact(sp.get("free_function_vcpu_seconds"))) * p_cpu
        + min(calls, _exact(sp.get("free_function_requests"))) * per_million / 1_000_000
    )
    parts = [f"{float(gb_s):,.1f} GB-s"] + ([f"{float(cpu_s):,.1f} vCPU-s"] if p_cpu else [])
    prices = [f"{_usd(p_gb)}/GB-s"] + ([f"{_usd(p_cpu)}/vCPU-s"] if p_cpu else [])
    return _line(
        "function",
        f"{float(calls):g} calls x {float(billed):g} s: " + ", ".join(parts),
        ", ".join(prices) + f", {_usd(per_million)}/M calls",
        usd,
        free,
        "; ".join(dict.fromkeys(sp.source_of(k) for k in FUNCTION_PRICE_KEYS if k in sp.values)),
    )


def _scheduler_line(sp: ServicePrices, jobs: int, invocations: Fraction) -> BillLine:
    job_price = _exact(sp.get("scheduler_job_month_usd"))
    per_m = _exact(sp.get("scheduler_per_million_usd"))
    usd = jobs * job_price + invocations * per_m / 1_000_000
    free = (
        min(jobs, int(sp.get("free_scheduler_jobs"))) * job_price
        + min(invocations, _exact(sp.get("free_scheduler_invocations"))) * per_m / 1_000_000
    )
    price_text = " + ".join(
        f"{_usd(p)}{unit}" for p, unit in ((job_price, "/job-month"), (per_m, "/M invocations")) if p
    )
    return _line(
        "scheduler",
        f"{jobs} job(s), {float(invocations):g} invocations",
        price_text or "free",
        usd,
        free,
        "; ".join(sp.source_of(k) for k in ("scheduler_job_month_usd", "scheduler_per_million_usd") if k in sp.values),
    )


def _check_inputs(minutes_up: float, disk_gb: float, scheduler_jobs: int, hourly_usd: float | None) -> None:
    """Refuse inputs no bill can be made of, naming the option to fix."""
    if not minutes_up > 0:
        raise CostError(f"--minutes-up must be a positive number of minutes, got {minutes_up}")
    for name, value in (("--disk-gb", disk_gb), ("--scheduler-jobs", scheduler_jobs)):
        if value < 0:
            raise CostError(f"{name} must be zero or more, got {value}")
    if hourly_usd is not None and hourly_usd < 0:
        raise CostError(f"--hourly-usd must not be negative, got {hourly_usd}")


def _hourly_price(
    catalog: Catalog, offering_id: str, market: str, as_of: date | None, hourly_usd: float | None
) -> tuple[Fraction, str, str]:
    """(hourly USD, source, billing rule): the given price, else the catalog's, under the offering's rule;
    a bare GCP machine type with no GPU (`gcp/n1-standard-1`, seed 001's VM) under its provider's."""
    given = None if hourly_usd is None else (_exact(hourly_usd), "given with --hourly-usd")
    try:
        offering = catalog.get(offering_id)
    except UnknownOffering:
        provider, _, machine = offering_id.partition("/")
        if given:
            return (*given, provider)
        row = catalog.prices.lookup(f"machine:{machine}", market, as_of) if machine else None
        if row is None or provider not in catalog.billing_rules:
            raise
        return _exact(row.hourly_usd), row.source, provider
    if given:
        return (*given, offering.billing)
    quote = catalog.price(offering_id, as_of=as_of, market=market)
    return _exact(quote.hourly_usd), quote.source, offering.billing


def _billing_terms(catalog: Catalog, offering_id: str, rule: str, rule_date: date) -> BillingTerms:
    """The terms of billing rule `rule` in force on `rule_date`."""
    if rule not in catalog.billing_rules:
        raise CatalogError(f"no billing rule {rule!r} for {offering_id}")
    eligible = [t for t in catalog.billing_rules[rule] if t.since <= rule_date]
    if not eligible:
        raise CatalogError(f"billing rule {rule!r} has no terms on {rule_date}")
    return eligible[-1]


def _disk_line(sp: ServicePrices, disk_gb: float, always: bool, hpm: Fraction, up_hours: Fraction) -> BillLine:
    """The disk: all month when it is kept (`always`), else only while a run is up."""
    disk_hours = hpm if always else up_hours
    gb_month = _exact(disk_gb) * disk_hours / hpm
    return _line(
        "disk",
        (
            f"{disk_gb:g} GB all month"
            if always
            else f"{disk_gb:g} GB x {float(disk_hours):g} h = {float(gb_month):.4g} GB-month"
        ),
        f"{_usd(sp.get('disk_gb_month_usd'))}/GB-month",
        gb_month * _exact(sp.get("disk_gb_month_usd")),
        Fraction(0),
        sp.source_of("disk_gb_month_usd"),
    )


def monthly_bill(
    offering_id: str,
    every: str,
    minutes_up: float,
    market: str = "on-demand",
    as_of: date | None = None,
    billing_as_of: date | None = None,
    hourly_usd: float | None = None,
    disk_gb: float = 0.0,
    disk_always: bool = False,
    scheduler_jobs: int = 1,
    function_calls_per_run: int = 0,
    function_every: str | None = None,
    function_seconds: float = 1.0,
    function_memory_gb: float = 0.25,
    function_vcpus: float = 0.0,
    catalog: Catalog | None = None,
) -> MonthlyBill:
    """The itemised monthly bill of one recurring run: prices in force on `as_of` (default: newest) under the
    billing rule of `billing_as_of` (default: `as_of`, else today), so a study's prices bill under another rule."""
    catalog = catalog or load_catalog()
    _check_inputs(minutes_up, disk_gb, scheduler_jobs, hourly_usd)
    schedule = parse_schedule(every)
    sp = service_prices(offering_id.partition("/")[0], as_of)
    hpm = _exact(sp.get("hours_per_month", 730))
    runs = schedule.runs_per_month(hpm)
    hourly, price_source, rule = _hourly_price(catalog, offering_id, market, as_of, hourly_usd)
    rule_date = billing_as_of or as_of or datetime.now(timezone.utc).date()
    terms = _billing_terms(catalog, offering_id, rule, rule_date)
    used = _exact(minutes_up * 60)
    billed = _exact(billed_seconds(terms, float(used)))
    overhead = runs * (billed - used) / 3600 * hourly
    lines = [
        _line(
            "compute",
            f"{float(runs):g} runs x {float(billed) / 60:g} min billed = {float(runs * billed / 3600):g} h",
            f"{_usd(hourly)}/h",
            runs * billed / 3600 * hourly,
            Fraction(0),
            price_source,
        )
    ]
    if disk_gb:
        lines.append(_disk_line(sp, disk_gb, disk_always, hpm, runs * used / 3600))
    if scheduler_jobs:
        lines.append(_scheduler_line(sp, scheduler_jobs, runs * scheduler_jobs))
    calls = runs * function_calls_per_run
    if function_every:
        calls += parse_schedule(function_every).runs_per_month(hpm)
    fn = _function_line(sp, calls, function_seconds, function_memory_gb, function_vcpus)
    if fn:
        lines.append(fn)
    rest = sum((line.exact[0] for line in lines), Fraction(0)) - overhead
    return MonthlyBill(
        offering=offering_id,
        market=market,
        schedule=schedule.text,
        runs_per_month=float(runs),
        runs_per_month_exact=str(runs),
        hours_per_month=float(hpm),
        minutes_up=float(minutes_up),
        billing=terms.describe(),
        billing_as_of=rule_date.isoformat(),
        billing_source=terms.source,
        prices=sp.label,
        prices_as_of=sp.as_of.isoformat(),
        prices_note=sp.note,
        minimum_overhead_usd=float(overhead),
        minimum_overhead_percent=float(100 * overhead / rest) if rest else 0.0,
    ).totalled(lines)


@dataclass
class SweeperBill(_Bill):
    """The monthly bill of the leak sweep run as a cloud function (a sweeper stack)."""

    provider: str
    schedule: str
    runs_per_month: float
    seconds_per_run: float
    memory_gb: float
    vcpus: float
    prices: str
    prices_as_of: str
    lines: list[BillLine] = field(default_factory=list)
    total_usd: float = 0.0
    total_after_free_tier_usd: float = 0.0


def sweeper_bill(
    provider: str,
    every: str = "rate(1 hour)",
    seconds: float = 10.0,
    memory_gb: float = 0.125,
    vcpus: float = 0.0,
    as_of: date | None = None,
) -> SweeperBill:
    """One scheduler job firing the function `every`, each call `seconds` at `memory_gb` (and `vcpus`: Cloud Run)."""
    sp = service_prices(provider, as_of)
    schedule = parse_schedule(every)
    calls = schedule.runs_per_month(_exact(sp.get("hours_per_month", 730)))
    lines = [_scheduler_line(sp, 1, calls)]
    fn = _function_line(sp, calls, seconds, memory_gb, vcpus)
    if fn:
        lines.append(fn)
    return SweeperBill(
        provider=provider,
        schedule=schedule.text,
        runs_per_month=float(calls),
        seconds_per_run=seconds,
        memory_gb=memory_gb,
        vcpus=vcpus,
        prices=sp.label,
        prices_as_of=sp.as_of.isoformat(),
    ).totalled(lines)
