"""GCP prices from the Cloud Billing Catalog API (Compute Engine SKUs, pages of
https://cloudbilling.googleapis.com/v1/services/6F81-5844-456A/skus). A SKU has a description, a usageType
(OnDemand, Preemptible = spot, Commit*), serviceRegions and a tiered unitPrice {units, nanos}. A machine type
costs vCPUs x core + GB x RAM of its family; GPUs are separate rows (`[[gcp_gpu]]`) the catalog composes.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from infra.catalog.price_errors import NoCredentials, PriceFetchError
from infra.gcp.sweep import authorized_session
from payload.timestamps import iso

COMPUTE_ENGINE_SERVICE = "services/6F81-5844-456A"
CATALOG_URL = "https://cloudbilling.googleapis.com/v1/{service}/skus"
SCOPES = ("https://www.googleapis.com/auth/cloud-platform",)
API_KEY_ENV = "GOOGLE_API_KEY"
PAGE_SIZE = 5000
MAX_PAGES = 200  # a runaway nextPageToken loop is an API bug, not a catalog

# Billing-catalog usage type per market.
USAGE_TYPES = {"on-demand": "OnDemand", "spot": "Preemptible"}
# Machine family -> the SKU description stem of its vCPU and RAM SKUs.
FAMILY_SKUS = {
    "n1": "N1 Predefined Instance",
    "a2": "A2 Instance",
    "g2": "G2 Instance",
    "a3": "A3 Instance",
}
# Catalog GPU model -> its SKU description stem. Exact stems, so "A100" does
# not match "A100 80GB" and "H100 80GB" does not match "H100 80GB Mega".
GPU_SKUS = {
    "K80": "Nvidia Tesla K80 GPU",
    "P100": "Nvidia Tesla P100 GPU",
    "V100": "Nvidia Tesla V100 GPU",
    "T4": "Nvidia Tesla T4 GPU",
    "A100": "Nvidia Tesla A100 GPU",
    "L4": "Nvidia L4 GPU",
    "H100": "Nvidia H100 80GB GPU",
}
# SKU flavours that are not the plain VM price (commitments, reservations,
# sole tenancy, custom shapes, DWS and calendar-mode capacity).
EXCLUDED_WORDS = ("Commitment", "Reserved", "Sole Tenancy", "Custom", "Premium", "DWS", "Calendar", "Extended")
SPOT_PREFIX = r"(?:Spot Preemptible |Preemptible )?"
# Units each kind of SKU must be priced in (anything else is a warning, not a guess).
EXPECTED_UNITS = {"core": "h", "ram": "GiBy.h", "gpu": "h"}

CREDENTIALS_HELP = (
    "Provide Google credentials with `gcloud auth application-default login`, a service account key in "
    "GOOGLE_APPLICATION_CREDENTIALS, or a Cloud Billing API key in $GOOGLE_API_KEY "
    "(the Cloud Billing API must be enabled on the project)."
)


def default_session():
    """An HTTP session for the Catalog API: API key if set, else ADC."""
    return authorized_session(
        scopes=SCOPES, error=NoCredentials, fix=CREDENTIALS_HELP, api_key=os.environ.get(API_KEY_ENV)
    )


def list_skus(session, service: str = COMPUTE_ENGINE_SERVICE) -> list[dict[str, Any]]:
    """Every SKU of a service, following nextPageToken."""
    from google.auth.exceptions import RefreshError, TransportError  # heavy: the cloud SDK

    url = CATALOG_URL.format(service=service)
    skus: list[dict[str, Any]] = []
    token = ""
    for _ in range(MAX_PAGES):
        params = {"currencyCode": "USD", "pageSize": PAGE_SIZE}
        if token:
            params["pageToken"] = token
        try:
            resp = session.get(url, params=params, timeout=60)
        except RefreshError as exc:
            raise NoCredentials(f"Google credentials could not be refreshed ({exc}). {CREDENTIALS_HELP}") from exc
        except (TransportError, OSError) as exc:
            raise PriceFetchError(f"Cloud Billing Catalog API unreachable ({url}): {exc}") from exc
        if resp.status_code in (401, 403):
            raise NoCredentials(
                f"Cloud Billing Catalog API refused the credentials (HTTP {resp.status_code}: "
                f"{resp.text[:300]}). {CREDENTIALS_HELP}"
            )
        if resp.status_code != 200:
            raise PriceFetchError(
                f"Cloud Billing Catalog API {url} answered HTTP {resp.status_code}: {resp.text[:300]}"
            )
        body = resp.json()
        skus.extend(body.get("skus", []))
        token = body.get("nextPageToken", "")
        if not token:
            return skus
    raise PriceFetchError(f"Cloud Billing Catalog API kept paging after {MAX_PAGES} pages; giving up")


# --- SKU matching ---------------------------------------------------------------


def unit_price(sku: dict[str, Any]) -> tuple[float, str]:
    """(USD per usage unit, usage unit) of the SKU's current price: the newest
    pricingInfo, its first tier (startUsageAmount 0)."""
    info = sku["pricingInfo"][-1]["pricingExpression"]
    tiers = sorted(info["tieredRates"], key=lambda t: float(t.get("startUsageAmount", 0)))
    money = tiers[0]["unitPrice"]
    if money.get("currencyCode", "USD") != "USD":
        raise PriceFetchError(f"SKU {sku.get('skuId')} is priced in {money['currencyCode']}, expected USD")
    return int(money.get("units", 0) or 0) + int(money.get("nanos", 0) or 0) / 1e9, info.get("usageUnit", "")


@dataclass(frozen=True)
class Match:
    usd: float
    sku: dict[str, Any]

    @property
    def describe(self) -> str:
        return f"{self.sku.get('skuId', '?')} '{self.sku.get('description', '')}'"


def _find(
    skus: list[dict[str, Any]], pattern: re.Pattern, kind: str, region: str, market: str, what: str, warnings: list[str]
) -> Match | None:
    found = [
        s
        for s in skus
        if s.get("category", {}).get("usageType") == USAGE_TYPES[market]
        and region in s.get("serviceRegions", ())
        and pattern.match(s.get("description", ""))
        and not any(w.lower() in s.get("description", "").lower() for w in EXCLUDED_WORDS)
    ]
    matches = []
    for s in found:
        usd, unit = unit_price(s)
        if unit != EXPECTED_UNITS[kind]:
            warnings.append(
                f"gcp {what} {market} in {region}: SKU {s.get('skuId')} is priced per {unit!r}, "
                f"expected {EXPECTED_UNITS[kind]!r}; ignored"
            )
            continue
        matches.append(Match(usd, s))
    if not matches:
        return None
    if len({m.usd for m in matches}) > 1:
        warnings.append(
            f"gcp {what} {market} in {region}: several SKUs match with different prices "
            f"({'; '.join(f'{m.describe} ${m.usd:g}' for m in matches)}); using the first"
        )
    return matches[0]


def _family_pattern(family: str, part: str) -> re.Pattern:
    return re.compile(rf"^{SPOT_PREFIX}{re.escape(FAMILY_SKUS[family])} {part} running in ")


def _gpu_pattern(model: str) -> re.Pattern:
    return re.compile(rf"^{SPOT_PREFIX}{re.escape(GPU_SKUS[model])} (?:running|attached)")


@dataclass
class GcpPrices:
    region: str
    # name -> {"hourly": x, "spot_hourly": y, "note": "..."}
    machines: dict[str, dict[str, Any]] = field(default_factory=dict)
    gpus: dict[str, dict[str, Any]] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)


def machine_prices(
    skus: list[dict[str, Any]], machines: Iterable[tuple[str, int, float]], region: str, out: GcpPrices
) -> None:
    """vCPUs x core price + GB x RAM price for each (machine type, vCPUs, GB)."""
    for name, vcpus, memory_gb in machines:
        family = name.split("-", 1)[0]
        if family not in FAMILY_SKUS:
            out.warnings.append(
                f"gcp {name}: machine family {family!r} has no SKU mapping (known: {', '.join(FAMILY_SKUS)}); left out"
            )
            continue
        row: dict[str, Any] = {}
        notes = []
        for market in USAGE_TYPES:
            core = _find(skus, _family_pattern(family, "Core"), "core", region, market, name, out.warnings)
            ram = _find(skus, _family_pattern(family, "Ram"), "ram", region, market, name, out.warnings)
            if core is None or ram is None:
                missing = " and ".join(p for p, m in (("core", core), ("RAM", ram)) if m is None)
                out.warnings.append(
                    f"gcp {name} {market} in {region}: no {FAMILY_SKUS[family]} {missing} SKU "
                    "in the Cloud Billing Catalog; price left out"
                )
                continue
            row[("spot_" if market == "spot" else "") + "hourly"] = round(vcpus * core.usd + memory_gb * ram.usd, 6)
            notes.append(
                f"{market}: {vcpus} vCPU x ${core.usd:g} + {memory_gb:g} GB x ${ram.usd:g} "
                f"(SKUs {core.sku.get('skuId')}, {ram.sku.get('skuId')})"
            )
        if "hourly" in row or "spot_hourly" in row:
            row["note"] = "; ".join(notes)
            out.machines[name] = row


def gpu_prices(skus: list[dict[str, Any]], models: Iterable[str], region: str, out: GcpPrices) -> None:
    for model in models:
        if model not in GPU_SKUS:
            out.warnings.append(f"gcp GPU {model}: no SKU mapping (known: {', '.join(GPU_SKUS)}); left out")
            continue
        row: dict[str, Any] = {}
        notes = []
        for market in USAGE_TYPES:
            m = _find(skus, _gpu_pattern(model), "gpu", region, market, f"GPU {model}", out.warnings)
            if m is None:
                out.warnings.append(
                    f"gcp GPU {model} {market} in {region}: no '{GPU_SKUS[model]}' SKU in the "
                    "Cloud Billing Catalog; price left out"
                )
                continue
            row[("spot_" if market == "spot" else "") + "hourly"] = round(m.usd, 6)
            notes.append(f"{market}: SKU {m.sku.get('skuId')}")
        if row:
            row["note"] = "; ".join(notes)
            out.gpus[model] = row


def compute_engine_prices(
    session, machines: Iterable[tuple[str, int, float]], gpu_models: Iterable[str], region: str
) -> GcpPrices:
    """Machine-type and per-GPU prices, on-demand and spot, in one region."""
    skus = list_skus(session)
    out = GcpPrices(region)
    machine_prices(skus, machines, region, out)
    gpu_prices(skus, gpu_models, region, out)
    return out


# --- a refresh (analysis.price.refresh) -------------------------------------------


def price_tables(offerings: list, region: str, now: datetime, clients):
    """One refresh's price tables for these offerings in `region`: (tables, source, warnings)."""
    machines = {o.instance_type: (o.instance_type, o.vcpus, o.memory_gb) for o in offerings}
    gpus = sorted({o.gpu_model for o in offerings if o.gpu_model})
    prices = compute_engine_prices(clients.gcp_session(), machines.values(), gpus, region)
    source = (
        f"GCP Cloud Billing Catalog API ({COMPUTE_ENGINE_SERVICE}/skus, Compute Engine, {region}), "
        f"fetched {iso(now, seconds=True)}"
    )
    return {"gcp_machine": prices.machines, "gcp_gpu": prices.gpus}, source, prices.warnings
