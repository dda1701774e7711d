"""The price row recorded with every result (prices drift: SkyPilot #4914).

Order: the launch-time price cloud-init wrote to the env file
(``GPUBENCH_HOURLY_USD``, ``GPUBENCH_PRICE_SOURCE``, ``GPUBENCH_PRICE_AS_OF``)
wins; else, with ``--offering``, ``infra.catalog``'s newest snapshot; else
null. Every null comes with a warning that says why, which ends up in the
result's ``warnings``.
"""

from __future__ import annotations

__all__ = ["offering_facts", "price_row"]

_NULL_PRICE = {"hourly_usd": None, "spot_hourly_usd": None, "source": None, "as_of": None, "origin": None}


def _catalog():
    from infra.catalog import load_catalog  # optional: payload images may not ship infra/

    return load_catalog()


def price_row(offering: str | None, hourly_usd: float | None, source: str | None,
              as_of: str | None, catalog_loader=_catalog) -> tuple[dict, list[str]]:
    """Return (price dict for result.json, warnings)."""
    if hourly_usd is not None:
        spot = None
        warnings = []
        if offering:  # the env gives one price; the catalog may know the spot one too
            try:
                spot = catalog_loader().price(offering).spot_hourly_usd
            except Exception:  # noqa: BLE001 - optional enrichment only
                pass
        return ({"hourly_usd": float(hourly_usd), "spot_hourly_usd": spot, "source": source,
                 "as_of": as_of, "origin": "env"}, warnings)
    if not offering:
        return dict(_NULL_PRICE), ["price unknown: no --offering/GPUBENCH_OFFERING and no GPUBENCH_HOURLY_USD"]
    try:
        quote = catalog_loader().price(offering)
    except ImportError as exc:
        return dict(_NULL_PRICE), [f"price unknown: infra.catalog is not importable ({exc}); "
                                   "set GPUBENCH_HOURLY_USD at launch"]
    except Exception as exc:  # noqa: BLE001 - UnknownOffering, CatalogError, bad data
        return dict(_NULL_PRICE), [f"price unknown: catalog lookup of {offering!r} failed: "
                                   f"{type(exc).__name__}: {exc}"]
    as_of_text = quote.as_of.isoformat() if hasattr(quote.as_of, "isoformat") else quote.as_of
    return ({"hourly_usd": quote.hourly_usd, "spot_hourly_usd": quote.spot_hourly_usd,
             "source": source or quote.source, "as_of": as_of or (str(as_of_text) if as_of_text else None),
             "origin": "catalog"}, [])


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
