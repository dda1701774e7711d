"""Spot runs priced from their cloud's spot price history: an API call per run (on the bulk path after
the download, in a thread pool), failing one run at a time with the reason, never the collect."""

from __future__ import annotations

import json
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

from analysis.price.spot import price_run
from infra import clouds

SpotPricer = Callable[[dict], dict]

# The cloud SDK clients keep 10 pooled connections (botocore max_pool_connections): more threads churn them.
PRICING_WORKERS = 10


def spot_history_pricer(mode: str = "auto") -> SpotPricer | None:
    """The pricer of spot runs on clouds that keep a spot price history, None for "off"; with "auto", only
    where that cloud's credentials resolve (checked once per cloud)."""
    if mode == "off":
        return None
    state: dict[str, bool] = {}

    def pricer(result: dict) -> dict | None:
        provider = (result.get("offering") or {}).get("provider")
        if (history := _spot_history(provider)) is None:
            return None
        if mode == "auto" and provider not in state:
            state[provider] = history.has_credentials()
        if mode == "auto" and not state[provider]:
            return None
        return price_run(result)

    return pricer


def _spot_history(provider: str | None):
    return clouds.get(provider).spot_history() if clouds.is_cloud(provider) else None


def price_spot(row: dict, result: dict, spot_pricer: SpotPricer | None) -> dict:
    """The row of a spot run on a cloud that keeps a spot price history, with the series each attempt paid
    in its billing windows (pricing time-weights them)."""
    if spot_pricer is None or row["market"] != "spot" or _spot_history(row["provider"]) is None:
        return row
    if not (priced := spot_pricer(result)):
        return row
    paid = {a["attempt"]: a for a in priced.get("attempts", []) if a.get("series")}
    windows = json.loads(row["attempts_json"])
    for w in windows:
        if (a := paid.get(w["attempt"])) is not None:
            w["spot_prices"], w["spot_price_source"] = [list(p) for p in a["series"]], a["source"]
    row["attempts_json"] = json.dumps(windows, separators=(",", ":"))
    row["spot_price_method"] = priced.get("method")
    row["spot_price_warnings"] = "; ".join(priced.get("warnings") or []) or None
    return row


def price_bulk(entries: dict[str, dict], to_price: list[tuple[str, dict]], spot_pricer: SpotPricer) -> set[str]:
    """Price the bulk path's spot runs in a thread pool. Returns the entry keys it could not price (set
    aside with why, not cached: tried again next time)."""

    def one(item) -> str | None:
        mkey, result = item
        entry = entries[mkey]
        try:
            entry["row"] = price_spot(entry["row"], result, spot_pricer)
        except Exception as exc:  # noqa: BLE001 - as in the thread path: the file is set aside with why
            entry.pop("row")
            entry.update(etag=None, reason=f"unreadable: {type(exc).__name__}: {exc}")
            return mkey
        return None

    with ThreadPoolExecutor(max_workers=PRICING_WORKERS) as pool:
        return {mkey for mkey in pool.map(one, to_price) if mkey is not None}
