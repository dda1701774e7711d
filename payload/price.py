"""What a run records about its price and offering: the price row stored with every result (prices
drift: store the one used) and the offering beside it.

The launcher knows the catalog and hands the payload its price as options (GPUBENCH_HOURLY_USD,
_PRICE_SOURCE, _PRICE_AS_OF, spot runs _ON_DEMAND_HOURLY_USD); the payload never reads the catalog,
so it runs where only the payload is installed. A missing price is null, with a warning saying how
to give one.
"""

from __future__ import annotations

_NULL_PRICE = {"hourly_usd": None, "spot_hourly_usd": None, "source": None, "as_of": None, "origin": None}


def price_row(
    offering: str | None,
    market: str,
    hourly_usd: float | None,
    source: str | None,
    as_of: str | None,
    on_demand_hourly_usd: float | None = None,
) -> tuple[dict, list[str]]:
    """(price for result.json, warnings): the launch price fills its market's field (`hourly_usd` is always
    on-demand, `spot_hourly_usd` spot); a spot launch may pass the on-demand price beside it."""
    price = dict(_NULL_PRICE)
    if hourly_usd is None:
        what = f"offering {offering!r}" if offering else "this run"
        return price, [
            f"price unknown: the launcher gave no price for {what}; "
            "set --hourly-usd/GPUBENCH_HOURLY_USD (the catalog's launchers do)"
        ]
    field = "spot_hourly_usd" if market == "spot" else "hourly_usd"
    price.update({field: float(hourly_usd), "source": source, "as_of": as_of, "origin": "env"})
    if market == "spot" and on_demand_hourly_usd is not None:
        price["hourly_usd"] = float(on_demand_hourly_usd)
    return price, []


def result_offering(cfg, identity) -> dict:
    """`result["offering"]`: what the instance says about itself (metadata), else what the launcher gave
    (the provider is the offering id's prefix)."""
    provider = cfg.offering.split("/", 1)[0] if cfg.offering and "/" in cfg.offering else None
    return {
        "id": cfg.offering,
        "provider": identity.provider or provider,
        "kind": cfg.offering_kind,
        "region": identity.region,
        "zone": identity.zone,
        "instance_type": identity.instance_type or cfg.instance_type,
        "instance_id": identity.instance_id,
        "market": cfg.market,
    }
