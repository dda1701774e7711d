"""The catalog's offerings as rows (prices, billing rule, sources and dates), and `offers`' filters and
orders over them."""

from __future__ import annotations

import re
import warnings
from datetime import date
from typing import Any, NamedTuple

from analysis.price.billed import CostError, quote
from infra.catalog import CatalogError, NoPrice
from payload.exitcodes import check_choice

SORTS = ("price", "gpus", "gpu-memory", "name")
AGELESS_KINDS = ("onprem", "local")  # priced by amortisation or the user's rate: no quote that ages
_GPU = re.compile(r"^(?P<model>[A-Za-z0-9][A-Za-z0-9_.-]*)(?::(?P<count>\d+))?$")


def _price_or_none(catalog, offering, market, as_of):
    if market not in offering.markets:
        return None, None
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the retired column says it
            price, hourly, _, _ = quote(catalog, offering.id, market, as_of, None)
    except (NoPrice, CostError):
        return None, None
    return price, hourly


def offering_row(catalog, o, as_of) -> dict:
    """One offering as `offers` lists it, priced on `as_of` (None: today), each price with its age in days."""
    price, hourly = _price_or_none(catalog, o, "on-demand", as_of)
    spot_price, spot = _price_or_none(catalog, o, "spot", as_of)
    day = as_of or date.today()
    try:
        billing = catalog.billing_terms(o.id, as_of).describe()
    except CatalogError as exc:  # a billing rule that starts after the date (vast.ai before 2018) says so
        billing = f"none on {as_of}: {exc}"
    return {
        "id": o.id,
        "provider": o.provider,
        "kind": o.kind,
        "instance_type": o.instance_type,
        "gpu": o.gpu_model,
        "gpu_count": o.gpu_count,
        "gpu_memory_gb": o.gpu.memory_gb if o.gpu else None,
        "compute_capability": o.gpu.compute_capability if o.gpu else None,
        "vcpus": o.vcpus,
        "memory_gb": o.memory_gb,
        "regions": list(o.regions),
        "zones": list(o.zones),
        "markets": list(o.markets),
        "hourly_usd": None if hourly is None else round(hourly, 6),
        "spot_hourly_usd": None if spot is None else round(spot, 6),
        "billing": billing,
        "billing_rule": o.billing,
        "as_of": (price or o.onprem).as_of.isoformat() if price or (o.onprem and o.onprem.as_of) else None,
        "source": price.source if price else (o.specs_source if o.onprem else None),
        "spot_as_of": spot_price.as_of.isoformat() if spot_price else None,
        "price_age_days": _age_days(price, o.kind, day),
        "spot_price_age_days": _age_days(spot_price, o.kind, day),
        "snapshot": price.snapshot if price else None,
        "spot_snapshot": spot_price.snapshot if spot_price else None,
        "retired": o.retired.isoformat() if o.retired else None,
        "stacks": o.stack_names() if o.is_cloud else [],
        "image_generation": o.image_generation,
        "unpriced": o.unpriced,  # why no source gives a price, when the catalog says so
        "interconnect": o.interconnect.describe() if o.interconnect else None,
    }


def parse_gpu(text: str) -> tuple[str, int | None]:
    match = _GPU.match(text or "")
    if not match:
        raise ValueError(f"--gpu {text!r}: expected MODEL or MODEL:COUNT, e.g. T4 or V100:4")
    count = int(match["count"]) if match["count"] else None
    if count == 0:
        raise ValueError(f"--gpu {text!r}: the count must be at least 1")
    return match["model"], count


def select(
    rows: list[dict], gpu: str | None, spot: bool, max_price: float | None, region: str | None, provider: str | None
) -> list[dict]:
    """The filters, as data: each row must pass every one that was given."""
    model, count = parse_gpu(gpu) if gpu else (None, None)
    price = price_key(spot)
    checks = [
        (model is not None, lambda r: (r["gpu"] or "").lower() == model.lower()),
        (count is not None, lambda r: r["gpu_count"] == count),
        (spot, lambda r: "spot" in r["markets"]),
        (max_price is not None, lambda r: r[price] is not None and r[price] <= max_price),
        (region is not None, lambda r: region in r["regions"] or any(z.startswith(region) for z in r["zones"])),
        (provider is not None, lambda r: r["provider"] == provider),
    ]
    return [r for r in rows if all(test(r) for given, test in checks if given)]


def order(rows: list[dict], sort: str, spot: bool) -> list[dict]:
    price = price_key(spot)
    keys = {
        "price": lambda r: (r[price] is None, r[price] or 0.0, r["id"]),
        "gpus": lambda r: (-(r["gpu_count"] or 0), r[price] is None, r[price] or 0.0, r["id"]),
        "gpu-memory": lambda r: (-(r["gpu_memory_gb"] or 0) * (r["gpu_count"] or 0), r["id"]),
        "name": lambda r: r["id"],
    }
    return sorted(rows, key=keys[sort])


def price_key(spot: bool) -> str:
    return "spot_hourly_usd" if spot else "hourly_usd"


def check_filters(catalog: Any, gpu: str | None, region: str | None, provider: str | None) -> str | None:
    """The provider as the catalog spells it; a GPU model, region or provider the catalog does not know is a
    typo, not an empty answer: a UsageError naming it, the closest known names and where to list them."""
    offerings = catalog.offerings()
    if gpu:
        model, _ = parse_gpu(gpu)
        check_choice(
            "--gpu", model, catalog.gpu_models(), "Known GPU models are listed by `gpubench offers --retired`."
        )
    if provider:
        provider = check_choice(
            "--provider", provider, catalog.providers(), f"Known providers: {', '.join(catalog.providers())}."
        )
    if region:
        regions = sorted({r for o in offerings for r in o.regions})
        zones = {z for o in offerings for z in o.zones}
        if region not in regions and not any(z.startswith(region) for z in zones):
            check_choice("--region", region, regions, "Regions and zones are in `gpubench offers --json`.")
    return provider


class Offers(NamedTuple):  # what `offers` shows, and what it hid: a ranking never mixes price eras silently
    rows: list[dict]
    retired_hidden: int
    stale_hidden: int


def _age_days(price: Any, kind: str, day: date) -> int | None:
    if price is None or kind in AGELESS_KINDS:
        return None
    return (day - price.as_of).days


def age_key(spot: bool) -> str:
    return "spot_price_age_days" if spot else "price_age_days"


def search_offers(
    catalog: Any,
    *,
    gpu: str | None = None,
    spot: bool = False,
    max_price: float | None = None,
    region: str | None = None,
    provider: str | None = None,
    sort: str = "price",
    as_of: date | None = None,
    retired: bool = False,
    max_age_days: float = 0,
    stale: bool = False,
) -> Offers:
    """The offerings that pass every filter given, in `sort` order, with what was hidden: those retired on
    `as_of` (default today) unless `retired`, and those whose own price is more than `max_age_days` old
    (0: no limit) unless `stale`, so a 2018 price never ranks beside 2026 ones unasked."""
    if max_price is not None and not max_price >= 0:
        raise ValueError(f"--max-price {max_price}: must be a price >= 0 in USD per hour")
    provider = check_filters(catalog, gpu, region, provider)
    day = as_of or date.today()
    offerings = catalog.offerings()
    gone = {o.id for o in offerings if o.is_retired_on(day)}
    rows = select([offering_row(catalog, o, as_of) for o in offerings], gpu, spot, max_price, region, provider)
    current = rows if retired else [r for r in rows if r["id"] not in gone]
    # A retired offering listed on request keeps its last price, however old: that is what --retired asks for.
    too_old = [r for r in current if max_age_days and r["id"] not in gone and (r[age_key(spot)] or 0) > max_age_days]
    shown = current if stale else [r for r in current if r not in too_old]
    return Offers(order(shown, sort, spot), len(rows) - len(current), len(too_old) if not stale else 0)
