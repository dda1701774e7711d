"""The price row recorded with every result (prices drift: SkyPilot #4914).

Order: the launch-time price cloud-init wrote to the env file
(``GPUBENCH_HOURLY_USD``, ``GPUBENCH_PRICE_SOURCE``, ``GPUBENCH_PRICE_AS_OF``)
wins; else, with ``--offering``, ``infra.catalog``'s newest snapshot; else
null. Every null comes with a warning that says why, which ends up in the
result's ``warnings``.
"""

from __future__ import annotations

import warnings

__all__ = ["offering_facts", "price_row"]

_NULL_PRICE = {"hourly_usd": None, "spot_hourly_usd": None, "source": None, "as_of": None, "origin": None}


def _catalog():
    from infra.catalog import load_catalog  # optional: payload images may not ship infra/

    return load_catalog()


def _quote(loader, offering: str, market: str, notes: list[str] | None = None):
    """Catalog quote for one market (CONTRACTS.md: ``cat.price(id, market=...)``).

    Catalog warnings (e.g. a retired offering priced at its last price) go to
    ``notes`` so they reach the result instead of stderr."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        quote = loader().price(offering, market=market)
    if notes is not None:
        notes.extend(f"catalog: {w.message}" for w in caught if f"catalog: {w.message}" not in notes)
    return quote


def price_row(offering: str | None, market: str, hourly_usd: float | None, source: str | None,
              as_of: str | None, catalog_loader=_catalog) -> tuple[dict, list[str]]:
    """Return (price dict for result.json, warnings).

    ``hourly_usd`` is always the on-demand price and ``spot_hourly_usd`` the
    spot price. The launch-time env price is the price of the market the run
    was launched in (infra writes the spot price for spot stacks), so it
    fills the field of that market; the catalog fills the other when it can.
    """
    fields = {"on-demand": "hourly_usd", "spot": "spot_hourly_usd"}
    price = dict(_NULL_PRICE)
    if hourly_usd is not None:
        price.update({fields[market]: float(hourly_usd), "source": source, "as_of": as_of, "origin": "env"})
        other = "on-demand" if market == "spot" else "spot"
        if offering:  # optional enrichment: the other market's catalog price
            try:
                price[fields[other]] = _quote(catalog_loader, offering, other).hourly_usd
            except Exception:  # noqa: BLE001 - no spot market, catalog not shipped, ...
                pass
        return price, []
    if not offering:
        return price, ["price unknown: no --offering/GPUBENCH_OFFERING and no GPUBENCH_HOURLY_USD"]
    notes: list[str] = []
    for mkt in (market, "on-demand" if market == "spot" else "spot"):
        try:
            quote = _quote(catalog_loader, offering, mkt, notes if mkt == market else None)
        except ImportError as exc:
            return price, [f"price unknown: infra.catalog is not importable ({exc}); "
                           "set GPUBENCH_HOURLY_USD at launch"]
        except Exception as exc:  # noqa: BLE001 - UnknownOffering, NoPrice, CatalogError, bad data
            if mkt == market:
                notes.append(f"price unknown: catalog lookup of {offering!r} ({mkt}) failed: "
                                f"{type(exc).__name__}: {exc}")
            continue
        price[fields[mkt]] = quote.hourly_usd
        if mkt == market:
            day = quote.as_of.isoformat() if hasattr(quote.as_of, "isoformat") else quote.as_of
            price.update(source=source or quote.source, as_of=as_of or (str(day) if day else None),
                         origin="catalog")
    return price, notes


def offering_facts(offering: str | None, catalog_loader=_catalog) -> tuple[dict, list[str]]:
    """provider/kind/instance_type from the catalog; provider from the id prefix otherwise."""
    facts = {"provider": offering.split("/", 1)[0] if offering and "/" in offering else None,
             "kind": None, "instance_type": None}
    if not offering:
        return facts, []
    try:
        o = catalog_loader().get(offering)
    except Exception as exc:  # noqa: BLE001
        return facts, [f"offering {offering!r} not found in infra.catalog: {type(exc).__name__}: {exc}"]
    return {"provider": o.provider, "kind": o.kind, "instance_type": o.instance_type}, []
