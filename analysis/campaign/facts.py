"""What the manifest records of a stack before its launch, read through the Pulumi program's own parser
and catalog lookup (infra.config, infra.launch): the price recorded is the one the instance carries."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from infra.config import BenchmarkConfig, ConfigError, parse_config
from infra.launch import region_of, resolve, zone_of
from infra.stacks import load_config

ZONE_KEY = "gpubench:zone"  # infra/config.py BENCHMARK_KEYS "zone": AWS availability_zone, GCP zone


def stack_facts(name: str, stacks_dir: Path, catalog: Any) -> dict[str, Any]:
    """Facts for the manifest; raises infra.config.ConfigError / FileNotFoundError on a bad stack file."""
    cfg = parse_config(load_config(name, stacks_dir), name)
    if not isinstance(cfg, BenchmarkConfig):
        raise ConfigError("stackType", f"{name} is a results stack; campaigns launch benchmark stacks only")
    launch = resolve(cfg, catalog)
    price = launch.price
    return {
        "offering": launch.offering.id,
        "provider": launch.provider,
        "market": cfg.market,
        "region": region_of(cfg, launch.offering),
        "zone": zone_of(cfg),
        "suite": list(cfg.suite),
        "max_hours": cfg.max_hours,
        "hourly_usd": launch.hourly_usd,
        "price_source": str(price.source) if price is not None else None,
        "price_as_of": str(price.as_of) if price is not None else None,
        "warnings": list(launch.warnings),
    }


def offering_zones(offering_id: str, catalog: Any) -> tuple[str, ...]:
    try:
        return tuple(catalog.get(offering_id).zones or ())
    except Exception:  # noqa: BLE001 - no zone list just means no catalog-backed retry zones
        return ()
