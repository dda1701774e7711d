"""What a benchmark stack launches, independent of the cloud: price, payload environment, tags.

Pure Python so preview and tests can compute it without Pulumi. The cloud modules
turn a `Launch` into resources.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Mapping

from infra.config import BenchmarkConfig
from infra.images import payload_image

TAG_KEYS = ("stack", "offering", "market", "hourly-usd", "expires-at")


@dataclass(frozen=True)
class Launch:
    """A benchmark stack resolved against the catalog."""

    cfg: BenchmarkConfig
    offering: Any  # infra.catalog Offering
    price: Any  # infra.catalog PriceQuote
    hourly_usd: float | None  # None when the catalog has no price for it
    image: str  # payload container image
    warnings: tuple[str, ...]

    @property
    def provider(self) -> str:
        return self.offering.provider

    @property
    def generation(self) -> str:
        return self.offering.image_generation


def resolve(cfg: BenchmarkConfig, catalog: Any) -> Launch:
    """Look the offering and its price up; collect the warnings preview shows."""
    from infra.config import check_against_offering

    offering = catalog.get(cfg.offering)
    check_against_offering(cfg, offering, offering.provider)
    warnings: list[str] = []
    price = _price(catalog, offering.id, cfg.market, warnings)
    if offering.retired:
        warnings.append(f"retired GPU: {offering.gpu.model} on {offering.id} was retired on {offering.retired}; launches may fail")
    if offering.image_generation == "cuda11-legacy":
        warnings.append(f"legacy image: {offering.gpu.model} (compute capability {offering.gpu.compute_capability}) needs the CUDA 11 / driver 470 image and the legacy payload")
    zone = zone_of(cfg)
    if zone and offering.zones and zone not in offering.zones:
        warnings.append(f"GPU not offered in zone {zone}: {offering.gpu.model} is offered in {', '.join(offering.zones)}")
    region = region_of(cfg, offering)
    if offering.regions and region not in offering.regions:
        warnings.append(f"region {region} is not one the catalog lists for {offering.id}: {', '.join(offering.regions)}")
    hourly = float(price.hourly_usd) if price is not None else None
    return Launch(cfg, offering, price, hourly, payload_image(cfg.payload_image, offering.image_generation), tuple(warnings))


def _price(catalog: Any, offering_id: str, market: str, warnings: list[str]) -> Any:
    """Newest price for the market; spot falls back to on-demand with a warning.

    The catalog's RetiredOfferingWarning is silenced here: preview reports retirement itself."""
    import warnings as pywarnings

    from infra.catalog import CatalogError

    with pywarnings.catch_warnings():
        pywarnings.simplefilter("ignore")
        try:
            return catalog.price(offering_id, market=market)
        except CatalogError as exc:
            first = str(exc)
        if market != "on-demand":
            try:
                quote = catalog.price(offering_id, market="on-demand")
                warnings.append(f"no spot price ({first}); estimating with the on-demand price")
                return quote
            except CatalogError:
                pass
        warnings.append(f"no price in the catalog ({first}); cost unknown, tags say 'unknown'")
        return None


def zone_of(cfg: BenchmarkConfig) -> str | None:
    return cfg.zone or cfg.provider_config.get("gcp:zone")


def region_of(cfg: BenchmarkConfig, offering: Any) -> str:
    """Configured region, else the zone's region, else the catalog's first region."""
    for key in ("aws:region", "gcp:region"):
        if cfg.provider_config.get(key):
            return cfg.provider_config[key]
    zone = zone_of(cfg)
    if zone and offering.provider == "gcp":
        return zone.rsplit("-", 1)[0]
    return offering.regions[0] if offering.regions else ""


def gcp_zone(cfg: BenchmarkConfig, offering: Any) -> str:
    """Configured zone, else the first catalog zone offering the GPU."""
    zone = zone_of(cfg)
    if zone:
        return zone
    if offering.zones:
        return offering.zones[0]
    raise ValueError(f"{offering.id} lists no zones; set gpubench:zone")


def fmt_usd(value: float | None) -> str:
    if value is None:
        return "unknown"
    return f"{value:.4f}".rstrip("0").rstrip(".")


def payload_env(launch: Launch, results_url: str, deadline: str) -> dict[str, str]:
    """GPUBENCH_* variables of docs/CONTRACTS.md (GPUBENCH_HOST_EVENTS is added by cloud_init)."""
    cfg = launch.cfg
    env = {
        "GPUBENCH_BENCHMARK": ",".join(cfg.suite),
        "GPUBENCH_RESULTS": results_url,
        "GPUBENCH_STACK": cfg.stack,
        "GPUBENCH_OFFERING": launch.offering.id,
        "GPUBENCH_MARKET": cfg.market,
        "GPUBENCH_PRECISION": cfg.precision,
        "GPUBENCH_IMAGE": launch.image,
        "GPUBENCH_EXPECT_GPU": "1" if cfg.expect_gpu else "0",
        "GPUBENCH_DEADLINE": deadline,
    }
    if launch.price is not None:
        env.update({"GPUBENCH_HOURLY_USD": fmt_usd(launch.hourly_usd), "GPUBENCH_PRICE_SOURCE": str(launch.price.source),
                    "GPUBENCH_PRICE_AS_OF": str(launch.price.as_of)})
    optional = {"GPUBENCH_EPOCHS": cfg.epochs, "GPUBENCH_STEPS": cfg.steps, "GPUBENCH_BATCH_SIZE": cfg.batch_size,
                "GPUBENCH_DATA": cfg.data, "GPUBENCH_PARAMS": cfg.params,
                "GPUBENCH_GPUS": None if cfg.gpus == "all" else cfg.gpus}
    env.update({k: str(v) for k, v in optional.items() if v is not None})
    return env


def tag_values(launch: Launch) -> dict[str, str]:
    """Tag values known before deploy (expires-at comes from the deadline resource)."""
    return {
        "stack": launch.cfg.stack,
        "offering": launch.offering.id,
        "market": launch.cfg.market,
        "hourly-usd": fmt_usd(launch.hourly_usd),
    }


def aws_tags(values: Mapping[str, Any]) -> dict[str, Any]:
    """AWS tags: `gpubench:<key>`."""
    return {f"gpubench:{k}": v for k, v in values.items()}


_LABEL_BAD = re.compile(r"[^a-z0-9_-]")


def gcp_label_value(value: str) -> str:
    """GCP label values allow only [a-z0-9_-] (max 63): lowercase, everything else becomes '_'.

    So `gcp/n1-standard-8+1xv100` -> `gcp_n1-standard-8_1xv100`, `3.06` -> `3_06`, and an
    RFC 3339 deadline `2024-05-01T12:00:00Z` is stored in ISO 8601 basic form `20240501t120000z`.
    """
    return _LABEL_BAD.sub("_", value.lower())[:63]


def gcp_deadline_label(rfc3339: str) -> str:
    return rfc3339.replace("-", "").replace(":", "").lower()


def gcp_labels(values: Mapping[str, Any]) -> dict[str, Any]:
    """GCP labels: keys `gpubench-<key>` (no ':' or uppercase allowed), values via gcp_label_value."""
    return {f"gpubench-{k}": (gcp_label_value(v) if isinstance(v, str) else v) for k, v in values.items()}


def schedule_at(rfc3339: str) -> str:
    """EventBridge Scheduler one-time expression: at(yyyy-mm-ddThh:mm:ss), evaluated in UTC."""
    text = rfc3339.rstrip("Z")
    text = text.split("+")[0].split(".")[0]
    return f"at({text})"
