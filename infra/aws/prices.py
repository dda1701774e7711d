"""AWS prices: on-demand from the Price List Query API (served from us-east-1 whatever region is priced; a
product's rate is at terms.OnDemand.<term>.priceDimensions.<dim>.pricePerUnit.USD), spot from EC2's spot price
history (90 days; a [start, end] query also returns the last change before `start`), which is also the
interface's `spot_history` (DAYS, client, series, has_credentials).
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import Any

from infra.aws.sweep import boto3_session, session_client
from infra.catalog.price_errors import NoCredentials, PriceFetchError, PricesError
from payload.timestamps import iso

PRICING_ENDPOINT_REGION = "us-east-1"
SPOT_PRODUCT = "Linux/UNIX"
SPOT_HISTORY_DAYS = DAYS = 90  # EC2 keeps 90 days of spot price history
client = session_client("ec2")  # the spot history's EC2 client: credentials resolved at each call
# Wider and wider look-backs when a history has no point at or before the
# window start (the API normally returns one; this covers when it does not).
SPOT_LOOKBACKS = (timedelta(0), timedelta(days=1), timedelta(days=7), timedelta(days=SPOT_HISTORY_DAYS))

# Exactly the product the benchmarks launch: plain Linux, shared tenancy, no
# pre-installed software, a normal (not reserved-capacity) instance.
PRICE_LIST_FILTERS = {
    "operatingSystem": "Linux",
    "tenancy": "Shared",
    "preInstalledSw": "NA",
    "capacitystatus": "Used",
}
# When a filter still leaves several products, the plain on-demand Linux one
# has these attributes (RHEL/SUSE and capacity blocks differ).
PREFERRED_ATTRIBUTES = {"operation": "RunInstances", "licenseModel": "No License required"}

CREDENTIALS_HELP = (
    "Provide AWS credentials with AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, AWS_PROFILE, "
    "`aws configure` or `aws sso login`; the IAM identity needs pricing:GetProducts "
    "(and ec2:DescribeSpotPriceHistory for spot prices)."
)


def call_aws(what: str, fn, *args, **kwargs):
    """Run one AWS call, turning botocore's errors into ours with the fix named."""
    from botocore.exceptions import BotoCoreError, ClientError, NoCredentialsError  # heavy: the cloud SDK

    try:
        return fn(*args, **kwargs)
    except NoCredentialsError as exc:
        raise NoCredentials(f"no AWS credentials found ({exc}). {CREDENTIALS_HELP}") from exc
    except (ClientError, BotoCoreError) as exc:
        raise PriceFetchError(f"AWS {what} failed: {exc}") from exc


def price_list_filters(instance_type: str, region: str) -> list[dict[str, str]]:
    fields = {"instanceType": instance_type, "regionCode": region, **PRICE_LIST_FILTERS}
    return [{"Type": "TERM_MATCH", "Field": k, "Value": v} for k, v in fields.items()]


def _hourly_usd(product: dict[str, Any]) -> float | None:
    """The hourly on-demand USD rate of one Price List product, or None."""
    for term in product.get("terms", {}).get("OnDemand", {}).values():
        for dim in term.get("priceDimensions", {}).values():
            usd = dim.get("pricePerUnit", {}).get("USD")
            if dim.get("unit") == "Hrs" and usd is not None:
                return float(usd)
    return None


def pick_price(products: list[dict[str, Any]]) -> tuple[float | None, str | None]:
    """(price, None) or (None, why): one price from the products a filter returned.

    Zero rates (reservation placeholders) are ignored; when prices differ the
    plain RunInstances / no-licence product wins; if that still leaves two
    prices the type is reported as ambiguous rather than guessed."""
    candidates = [(p, _hourly_usd(p)) for p in products]
    candidates = [(p, usd) for p, usd in candidates if usd]
    if not candidates:
        return None, "no product with an hourly on-demand USD price"
    prices = {usd for _, usd in candidates}
    if len(prices) > 1:
        plain = [
            (p, usd)
            for p, usd in candidates
            if all(p.get("product", {}).get("attributes", {}).get(k, v) == v for k, v in PREFERRED_ATTRIBUTES.items())
        ]
        prices = {usd for _, usd in plain}
    if len(prices) != 1:
        return None, f"ambiguous: {len(candidates)} products with prices {sorted({u for _, u in candidates})}"
    return prices.pop(), None


@dataclass
class OnDemandPrices:
    region: str
    prices: dict[str, float] = field(default_factory=dict)  # instance type -> USD/h
    warnings: list[str] = field(default_factory=list)


def on_demand_prices(pricing_client, instance_types: Iterable[str], region: str) -> OnDemandPrices:
    """Linux shared-tenancy on-demand USD/h per instance type in `region`.

    A type the Price List does not price (retired, not offered in the region)
    becomes a warning naming it; the others are still returned."""
    out = OnDemandPrices(region)
    paginator = pricing_client.get_paginator("get_products")
    for itype in instance_types:
        products: list[dict[str, Any]] = []
        pages = paginator.paginate(ServiceCode="AmazonEC2", Filters=price_list_filters(itype, region))
        for page in call_aws("pricing.get_products", list, pages):
            products.extend(json.loads(item) if isinstance(item, str) else item for item in page.get("PriceList", []))
        price, why = pick_price(products)
        if price is None:
            out.warnings.append(
                f"aws {itype} in {region}: no on-demand price from the Price List API ({why}); left out of the snapshot"
            )
        else:
            out.prices[itype] = price
    return out


# --- spot ---------------------------------------------------------------------


def _utc(t: datetime) -> datetime:
    return t.replace(tzinfo=timezone.utc) if t.tzinfo is None else t.astimezone(timezone.utc)


def _history_pages(ec2_client, **kwargs) -> list[dict[str, Any]]:
    paginator = ec2_client.get_paginator("describe_spot_price_history")
    records: list[dict[str, Any]] = []
    for page in call_aws("ec2.describe_spot_price_history", list, paginator.paginate(**kwargs)):
        records.extend(page.get("SpotPriceHistory", []))
    return records


def spot_price_history(
    ec2_client, instance_type: str, zone: str, start: datetime, end: datetime, product: str = SPOT_PRODUCT
) -> list[tuple[datetime, float]]:
    """The spot price steps for one type in one zone covering [start, end],
    oldest first, including the price in force at `start`."""
    start, end = _utc(start), _utc(end)
    where = {"AvailabilityZoneId" if "-az" in zone else "AvailabilityZone": zone}  # use1-az1 or us-east-1a
    series: list[tuple[datetime, float]] = []
    for lookback in SPOT_LOOKBACKS:
        records = _history_pages(
            ec2_client,
            InstanceTypes=[instance_type],
            ProductDescriptions=[product],
            StartTime=start - lookback,
            EndTime=end,
            **where,
        )
        series = sorted({(_utc(r["Timestamp"]), float(r["SpotPrice"])) for r in records})
        if series and series[0][0] <= start:
            break
    return series


def series(ec2_client, instance_type: str, zone: str, start: datetime, end: datetime) -> tuple[list, str]:
    """(spot price steps covering [start, end], where they came from): prices a spot run's own window."""
    steps = spot_price_history(ec2_client, instance_type, zone, start, end)
    return steps, f"EC2 describe_spot_price_history ({instance_type}, {zone}, {SPOT_PRODUCT})"


def has_credentials() -> bool:
    return boto3_session().get_credentials() is not None


def current_spot_prices(
    ec2_client, instance_types: Iterable[str], now: datetime, product: str = SPOT_PRODUCT
) -> dict[str, tuple[float, dict[str, float]]]:
    """Spot price in force at `now` per type: (median over zones, {zone: price})."""
    types = list(instance_types)
    if not types:
        return {}
    records = _history_pages(
        ec2_client, InstanceTypes=types, ProductDescriptions=[product], StartTime=_utc(now), EndTime=_utc(now)
    )
    latest: dict[str, dict[str, tuple[datetime, float]]] = {}
    for r in records:
        zones = latest.setdefault(r["InstanceType"], {})
        t = _utc(r["Timestamp"])
        if r["AvailabilityZone"] not in zones or t > zones[r["AvailabilityZone"]][0]:
            zones[r["AvailabilityZone"]] = (t, float(r["SpotPrice"]))
    return {
        itype: (statistics.median(p for _, p in zones.values()), {z: p for z, (_, p) in sorted(zones.items())})
        for itype, zones in latest.items()
    }


# --- a refresh (analysis.price.refresh) -------------------------------------------


def price_tables(offerings: list, region: str, now: datetime, clients):
    """One refresh's price tables for these offerings in `region`: (tables, source, warnings)."""
    types = [o.instance_type for o in offerings]
    od = on_demand_prices(clients.pricing(PRICING_ENDPOINT_REGION), types, region)
    warns = list(od.warnings)
    spot: dict[str, tuple[float, dict[str, float]]] = {}
    try:
        spot = current_spot_prices(clients.ec2(region), list(od.prices), now)
    except PricesError as exc:  # on-demand is the point of the refresh; spot is a bonus
        warns.append(f"aws spot prices in {region} not fetched ({exc}); the snapshot has on-demand prices only")
    rows: dict[str, dict[str, Any]] = {}
    no_spot = []
    for o in offerings:
        if o.instance_type not in od.prices:
            continue
        row: dict[str, Any] = {"hourly": od.prices[o.instance_type]}
        if o.instance_type in spot:
            median, zones = spot[o.instance_type]
            row["spot_hourly"] = round(median, 6)
            row["note"] = "spot_hourly: median over zones of the spot price at fetch time: " + ", ".join(
                f"{z} {p:g}" for z, p in zones.items()
            )
        elif "spot" in o.markets and spot:
            no_spot.append(o.instance_type)
        rows[o.id] = row
    if no_spot:
        warns.append(f"aws in {region}: no spot price at fetch time for {', '.join(no_spot)}; on-demand only for these")
    source = (
        f"AWS Price List API (pricing.get_products AmazonEC2, {region}, Linux, shared tenancy)"
        f"{' + EC2 spot price history' if spot else ''}, fetched {iso(now, seconds=True)}"
    )
    return {"price": rows}, source, warns
