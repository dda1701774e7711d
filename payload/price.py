"""What a run records about its price and offering: the price row stored with every
result (prices drift: store the one used) and the offering facts beside it.

The launcher (infra: a cloud stack's user-data, the SSH runner, the demo)
knows the catalog and hands the payload its price as options
(``GPUBENCH_HOURLY_USD``, ``GPUBENCH_PRICE_SOURCE``, ``GPUBENCH_PRICE_AS_OF``,
and for spot runs ``GPUBENCH_ON_DEMAND_HOURLY_USD``); the payload never reads
the catalog itself, so it runs where only the payload is installed. A missing
price is recorded as null with a warning that says how to provide one.
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
    """Return (price dict for result.json, warnings).

    ``hourly_usd`` in the result is always the on-demand price and
    ``spot_hourly_usd`` the spot price. The launch price is the price of the
    market the run was launched in, so it fills that market's field; a spot
    launch may also pass the on-demand price for comparison.
    """
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


def offering_facts(
    offering: str | None, kind: str | None = None, instance_type: str | None = None
) -> tuple[dict, list[str]]:
    """provider (the id's prefix), kind and instance type as the launcher gave them."""
    provider = offering.split("/", 1)[0] if offering and "/" in offering else None
    return {"provider": provider, "kind": kind, "instance_type": instance_type}, []


def result_offering(offering: str | None, market: str, identity, facts: dict) -> dict:
    """`result["offering"]`: what the instance says about itself (metadata), else what the launcher gave."""
    return {
        "id": offering,
        "provider": identity.provider or facts["provider"],
        "kind": facts["kind"],
        "region": identity.region,
        "zone": identity.zone,
        "instance_type": identity.instance_type or facts["instance_type"],
        "instance_id": identity.instance_id,
        "market": market,
    }
