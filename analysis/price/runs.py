"""Prices each run with two figures, never mixed up: billed_cost_usd (launch to termination of every attempt, each
billed on its own under the offering's rule: the invoice) and train_cost_usd (the training seconds alone at the same
rule and price: the seed studies' "cost to train"). The price: the one recorded at launch (a spot attempt's recorded
history, time-weighted), else the catalog's on the launch date; with `as_of`, the catalog's on that date. A row
that cannot be priced says why."""

from __future__ import annotations

import functools
import math
from datetime import date

from analysis import fastjson
from analysis.price.age import as_date
from analysis.price.billed import CostError, billed_cost, catalog_price, onprem_hourly, time_weighted_price
from infra.catalog import CatalogError, load_catalog
from payload.timestamps import parse_time

PRICE_COLUMNS = tuple(
    "hourly_usd price_basis price_source price_as_of billing billing_as_of instance_hours "
    "billed_hours billed_cost_usd train_hours train_cost_usd setup_fee_usd price_note".split()
)


# What price_run returns before it knows anything: built once, copied per row.
_UNPRICED = {c: None for c in PRICE_COLUMNS} | dict(
    billed_cost_usd=math.nan, train_cost_usd=math.nan, hourly_usd=math.nan, billed_hours=math.nan, setup_fee_usd=0.0
)


@functools.lru_cache(maxsize=256)
def _describe(terms) -> str:
    """A billing rule's wording: a handful of terms over thousands of runs."""
    return terms.describe()


def _num(x) -> float | None:
    try:
        x = float(x)
    except (TypeError, ValueError):
        return None
    return None if math.isnan(x) else x


def _catalog_price(catalog, offering_id: str, market: str, on: date | None) -> tuple[float, str, str]:
    q, _ = catalog_price(catalog, offering_id, market, on)  # an old or retired price: the offerings command says it
    return q.hourly_usd, q.source, q.as_of.isoformat()


def _attempt_price(row: dict, window: dict, catalog, as_of: date | None, launch_day: date | None):
    """(hourly USD, basis, source, as-of) for one attempt."""
    oid, market = row["offering_id"], row["market"]
    spec = catalog.get(oid).onprem
    if spec is not None and _num(row.get("recorded_hourly_usd")) is None:
        # an owned box has no price list: its hourly rate is amortisation + electricity
        return (
            onprem_hourly(spec),
            f"amortised purchase + electricity at {spec.days_per_month:g} days/month",
            catalog.get(oid).specs_source,
            spec.as_of.isoformat() if spec.as_of else None,
        )
    if as_of is not None:
        hourly, source, day = _catalog_price(catalog, oid, market, as_of)
        return hourly, f"catalog {market} price in force on {as_of}", source, day
    spot = market == "spot"
    recorded = _num(row.get("recorded_spot_hourly_usd" if spot else "recorded_hourly_usd"))
    if spot and window.get("spot_prices"):
        start, end = (parse_time(window[k]) for k in ("start", "end"))
        series = [(parse_time(t), p) for t, p in window["spot_prices"]]
        source = window.get("spot_price_source") or "timeline spot_price events"
        basis = (
            "EC2 spot price history of the run's zone, time-weighted"
            if window.get("spot_price_source")
            else "spot price history recorded in the timeline, time-weighted"
        )
        if series[0][0] > start:
            # the history starts inside the window: until then the launch price (or its first point) held
            series.insert(0, (start, recorded if recorded is not None else series[0][1]))
            basis += " (launch price until the first change)"
        if end <= start:
            return series[-1][1], basis, source, window["start"][:10]
        return time_weighted_price(series, start, end), basis, source, window["start"][:10]
    if recorded is not None:
        words = "spot price recorded at launch" if spot else "price recorded at launch"
        return recorded, words, row.get("recorded_price_source"), row.get("recorded_price_as_of")
    hourly, source, day = _catalog_price(catalog, oid, market, launch_day)
    return hourly, f"catalog {market} price in force on the launch date (none recorded)", source, day


def _setup_fee(catalog, offering, market: str, on: date | None) -> float:
    """One-off setup fee of a dedicated server (reported apart, never in the hourly rate)."""
    if offering.kind != "dedicated":
        return 0.0
    try:
        return catalog_price(catalog, offering.id, market, on)[0].setup_fee_usd or 0.0
    except CatalogError:
        return 0.0


def price_run(row: dict, as_of: date | None = None, catalog=None) -> dict:
    """The PRICE_COLUMNS of one run row."""
    catalog = catalog or load_catalog()
    out = dict(_UNPRICED)
    windows = fastjson.loads(row.get("attempts_json") or "[]")
    out["instance_hours"] = sum(w["seconds"] for w in windows) / 3600.0
    train = _num(row.get("train_seconds"))
    out["train_hours"] = math.nan if train is None else train / 3600.0
    oid = row.get("offering_id")
    if not oid:
        out["price_note"] = "no offering id in the result: cannot apply a billing rule (set GPUBENCH_OFFERING)"
        return out
    launch_day = as_date(row.get("launch_at")) or as_date(row.get("started_at"))
    terms_day = as_of or launch_day
    try:
        offering = catalog.get(oid)
        market = row.get("market") or "on-demand"
        billed_usd = billed_h = 0.0
        prices, terms = [], None
        for w in windows:
            hourly, basis, source, day = _attempt_price(row, w, catalog, as_of, launch_day)
            cost, hours, terms = billed_cost(oid, w["seconds"], market, terms_day, hourly, catalog, terms)
            billed_usd += cost
            billed_h += hours
            prices.append((hourly, w["seconds"], basis, source, day, terms))
        total_s = sum(p[1] for p in prices)
        hourly = (sum(p[0] * p[1] for p in prices) / total_s) if total_s > 0 else prices[0][0]
        last = prices[-1]
        out.update(
            hourly_usd=hourly,
            price_basis="; ".join(dict.fromkeys(p[2] for p in prices)),
            price_source="; ".join(dict.fromkeys(str(p[3]) for p in prices)),
            price_as_of=last[4],
            billing=_describe(last[5]),
            billing_as_of=terms_day.isoformat() if terms_day else None,
            billed_hours=billed_h,
            billed_cost_usd=billed_usd,
        )
        out["setup_fee_usd"] = _setup_fee(catalog, offering, market, as_of or launch_day)
        if train is not None:
            out["train_cost_usd"] = billed_cost(oid, train, market, terms_day, hourly, catalog, terms)[0]
    except (CatalogError, CostError) as exc:
        out["price_note"] = str(exc)
    return out


def price_runs(df, as_of: date | None = None, catalog=None, rows: list[dict] | None = None):
    """The runs table with PRICE_COLUMNS added (replacing any already there). `rows`: the dicts a table
    was just built from (the same rows, in order), priced as they are instead of converting it back."""
    import pandas as pd  # heavy: collect imports this module for PRICE_COLUMNS and price_run without pandas

    catalog = catalog or load_catalog()
    base = df.drop(columns=[c for c in PRICE_COLUMNS if c in df.columns])
    priced = [price_run(r, as_of, catalog) for r in (base.to_dict("records") if rows is None else rows)]
    extra = pd.DataFrame(priced, columns=list(PRICE_COLUMNS), index=base.index)
    return pd.concat([base, extra], axis=1)
