"""The price a run paid (`price_run(result)`, a JSON-ready dict), each attempt costed on its own (a preempted run
that resumed elsewhere paid another zone's price, and every boot its own billing minimum): spot runs on a cloud with
a spot price history (AWS) at the time-weighted price of their zone over their window, other spot runs at the
catalog snapshot in force on the run's date, on-demand runs at the price recorded at launch. It never raises for a
missing price or missing credentials: it falls back (recorded price, then catalog) and says so in `warnings` and
`method`."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass
from datetime import datetime, timedelta, timezone
from typing import Any

from analysis.price.billed import catalog_price, time_weighted_price
from infra import clouds
from infra.catalog import CatalogError, load_catalog
from infra.catalog.price_errors import PricesError
from payload.timestamps import iso, parse_time


@dataclass(frozen=True)
class SpotWindowPrice:
    """A time-weighted spot price over a window and the steps behind it."""

    average_usd: float
    series: tuple[tuple[datetime, float], ...]  # (time of change, USD/h), first at or before the window's start
    source: str

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "series": [[iso(t, seconds=True), p] for t, p in self.series]}


def spot_price_for_window(
    client, instance_type: str, az: str, start: datetime, end: datetime, provider: str
) -> SpotWindowPrice:
    """Time-weighted spot price of `instance_type` in `az` over [start, end], from the provider's spot price
    history (the cloud's `spot_history` hook); PricesError when it has no price covering the window start."""
    history = clouds.get(provider).spot_history()
    start, end = start.astimezone(timezone.utc), end.astimezone(timezone.utc)
    series, source = history.series(client, instance_type, az, start, end)
    before = [p for p in series if p[0] <= start]
    if not before:
        raise PricesError(
            f"{source} for {instance_type} in {az} has no price at or before {iso(start, seconds=True)}"
            f" (history covers the last {history.DAYS} days)"
        )
    window = [before[-1]] + [p for p in series if start < p[0] <= end]
    return SpotWindowPrice(
        average_usd=time_weighted_price(window, start, end),
        series=tuple(window),
        source=f"{source}, time-weighted over {iso(start, seconds=True)}..{iso(end, seconds=True)}",
    )


def attempt_windows(result: dict[str, Any]) -> list[dict[str, Any]]:
    """Each attempt's billed window: its instance launch (else start) to its end (else the run's finished_at)."""
    launches: dict[int | None, datetime] = {}
    for ev in result.get("timeline", []):
        if ev.get("event") == "instance_launch":
            launches.setdefault(ev.get("attempt"), parse_time(ev["time"]))
    single = len(result.get("attempts", [])) == 1
    out = []
    for a in result.get("attempts", []):
        start = parse_time(a["start"])
        launch = launches.get(a.get("attempt")) or (launches.get(None) if single else None)
        if launch is not None and launch < start:
            start = launch
        end = parse_time(a["end"] or result["finished_at"])
        out.append(
            {
                "attempt": a.get("attempt"),
                "zone": a.get("zone") or result["offering"].get("zone"),
                "start": start,
                "end": end,
            }
        )
    return out


def _flat(windows, hourly: float | None, source: str | None) -> list[dict[str, Any]]:
    return [
        {
            "attempt": w["attempt"],
            "zone": w["zone"],
            "start": iso(w["start"], seconds=True),
            "end": iso(w["end"], seconds=True),
            "seconds": max(0.0, (w["end"] - w["start"]).total_seconds()),
            "hourly_usd": hourly,
            "series": None,
            "source": source,
        }
        for w in windows
    ]


def _price(method: str, hourly=None, source=None, snapshot=None, as_of=None, warnings=()) -> dict[str, Any]:
    return {
        "method": method,
        "hourly_usd": hourly,
        "source": source,
        "snapshot": snapshot,
        "as_of": as_of,
        "warnings": [w for w in warnings if w],
    }


def _fallback(ctx: dict[str, Any], market: str, why: str) -> dict[str, Any]:
    """The price recorded at launch, else the catalog's on the run's date."""
    recorded = ctx["result"].get("price") or {}
    field = "spot_hourly_usd" if market == "spot" else "hourly_usd"
    if recorded.get(field) is not None:
        src = f"recorded at launch ({recorded.get('source') or 'source not recorded'}, as of {recorded.get('as_of')})"
        return _price("recorded", float(recorded[field]), src, None, recorded.get("as_of"), [why])
    try:
        quote, notes = catalog_price(ctx["catalog"], ctx["offering_id"], market, ctx["day"])
    except CatalogError as exc:
        return _price("unpriced", warnings=[why, f"no price: {exc}"])
    return _price("catalog", quote.hourly_usd, quote.source, quote.snapshot, quote.as_of.isoformat(), [why, *notes])


def _catalog_spot(ctx) -> dict[str, Any]:
    """Clouds without a spot price history: the catalog snapshot in force on the run's date."""
    try:
        quote, notes = catalog_price(ctx["catalog"], ctx["offering_id"], "spot", ctx["day"])
    except CatalogError as exc:
        return _fallback(ctx, "spot", f"no catalog spot price in force on {ctx['day']}: {exc}")
    src = f"catalog snapshot {quote.snapshot} (as of {quote.as_of}): {quote.source}"
    return _price("catalog-snapshot", quote.hourly_usd, src, quote.snapshot, quote.as_of.isoformat(), notes)


def _history_spot(ctx, windows, history) -> dict[str, Any]:
    """Clouds with a spot price history: each attempt at its own zone's price over its own window."""
    result, warns, attempts = ctx["result"], [], []
    itype = result["offering"].get("instance_type") or ctx["offering_id"].split("/", 1)[-1]
    oldest = ctx["now"] - timedelta(days=history.DAYS)
    clients: dict[str, Any] = {}
    fallback = None
    for w in windows:
        zone = w["zone"]
        try:
            if not zone:
                raise PricesError("the result records no availability zone")
            if w["start"] < oldest:
                raise PricesError(f"the run started before the last {history.DAYS} days of spot price history")
            region = result["offering"].get("region") or ctx["cloud"].region_of_zone(zone)
            if region not in clients:
                clients[region] = ctx["client_factory"](region)
            priced = spot_price_for_window(clients[region], itype, zone, w["start"], w["end"], ctx["provider"])
        except (PricesError, ValueError) as exc:  # ValueError: a zero-length window
            fallback = fallback or _fallback(ctx, "spot", "")
            warns.append(
                f"attempt {w['attempt']}: spot history not used ({exc}); priced at the {fallback['method']} spot price"
            )
            attempts += _flat([w], fallback["hourly_usd"], fallback["source"])
            continue
        (attempt,) = _flat([w], priced.average_usd, priced.source)
        attempts.append({**attempt, "series": priced.to_dict()["series"]})
    method = f"{ctx['provider']}-spot-history"
    if fallback:
        warns.extend(fallback["warnings"])
        method = f"{method}+{fallback['method']}" if any(a["series"] for a in attempts) else fallback["method"]
    sources = list(dict.fromkeys(a["source"] for a in attempts if a["source"]))
    f = fallback or {"snapshot": None, "as_of": ctx["day"].isoformat()}
    return {**_price(method, None, "; ".join(sources) or None, f["snapshot"], f["as_of"], warns), "attempts": attempts}


def _weighted(attempts: list[dict[str, Any]]) -> float | None:
    priced = [a for a in attempts if a["hourly_usd"] is not None and a["seconds"] > 0]
    if not priced or len(priced) != len([a for a in attempts if a["seconds"] > 0]):
        return None
    total = sum(a["seconds"] for a in priced)
    return sum(a["hourly_usd"] * a["seconds"] for a in priced) / total


def price_run(
    result: dict[str, Any],
    client_factory: Callable[[str], Any] | None = None,
    catalog=None,
    now: datetime | None = None,
) -> dict[str, Any]:
    """The price a run paid, per attempt and overall (hourly_usd time-weighted over the attempts)."""
    offering = result["offering"]
    offering_id = offering.get("id") or ""
    market = offering.get("market") or "on-demand"
    provider = offering.get("provider") or offering_id.split("/", 1)[0]
    windows = attempt_windows(result)
    day = (windows[0]["start"] if windows else parse_time(result["started_at"])).date()
    ctx = {
        "result": result,
        "offering_id": offering_id,
        "day": day,
        "catalog": catalog or load_catalog(),
        "now": now or datetime.now(timezone.utc),
        "provider": provider,
        "cloud": clouds.get(provider) if clouds.is_cloud(provider) else None,
        "client_factory": client_factory or (lambda region: clouds.get(provider).spot_history().client(region)),
    }
    # off-cloud and on-demand runs: the price recorded at launch; spot runs: the cloud's history if it has one
    history = clouds.get(provider).spot_history() if market == "spot" and clouds.is_cloud(provider) else None
    if history is not None:
        priced = _history_spot(ctx, windows, history)
    else:
        p = _catalog_spot(ctx) if market == "spot" and clouds.is_cloud(provider) else _fallback(ctx, "on-demand", "")
        priced = {**p, "attempts": _flat(windows, p["hourly_usd"], p["source"])}
    hourly = _weighted(priced["attempts"])
    out = {"offering": offering_id, "provider": provider, "market": market, **priced}
    return out if hourly is None else {**out, "hourly_usd": hourly}
