"""One `prices refresh` for one provider and region: fetch the offerings not retired on the fetch date, render,
validate, write, diff. A type the API does not price is a warning; nothing priced at all is an error."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import infra.catalog
from infra import clouds
from infra.catalog import Catalog, Offering, load_catalog
from infra.catalog.price_errors import PriceFetchError, PricesError
from infra.catalog.prices import PriceIndex, load_snapshot

from . import snapshot

REGION_PATTERNS = {c: clouds.get(c).REGION_PATTERN for c in clouds.NAMES}
PROVIDERS = tuple(REGION_PATTERNS)


class Clients:
    """Price API client factories by name (each cloud's `CLIENTS`); tests hand in stubs by keyword."""

    def __init__(self, **factories: Callable[..., Any]):
        self._factories = factories

    def __getattr__(self, name: str) -> Callable[..., Any]:
        if name.startswith("_"):
            raise AttributeError(name)
        if name in self._factories:
            return self._factories[name]
        for cloud in clouds.all_clouds():
            if name in cloud.CLIENTS:
                return cloud.CLIENTS[name]
        raise AttributeError(f"no price API client named {name!r}")


@dataclass
class RefreshResult:
    provider: str
    region: str
    snapshot: str | None = None
    path: str | None = None
    written: bool = False
    changes: list[snapshot.Change] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    error: str | None = None
    exit_code: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "changes": [c.to_dict() for c in self.changes]}


def targets(catalog: Catalog, provider: str, day) -> list[Offering]:
    return [o for o in catalog.offerings(provider=provider) if not o.is_retired_on(day)]


def refresh(
    provider: str,
    region: str,
    catalog: Catalog,
    out_dir: Path,
    *,
    clients: Clients | None = None,
    now: datetime | None = None,
    dry_run: bool = False,
) -> RefreshResult:
    """Fetch one provider's prices in one region into a snapshot in `out_dir`, validated against `catalog`;
    errors come back in the result (one provider failing does not stop the other)."""
    now = now or datetime.now(timezone.utc)
    clients = clients or Clients()
    result = RefreshResult(provider, region)
    offerings = targets(catalog, provider, now.date())
    try:
        tables, source, warns = clouds.get(provider).price_tables(offerings, region, now, clients)
        result.warnings.extend(warns)
        if not any(tables.values()):
            raise PriceFetchError(f"{provider} {region}: the API priced none of the {len(offerings)} offerings")
        name = snapshot.snapshot_name(f"{provider}-live", provider, region, now.date())
        text = snapshot.render(
            as_of=now.date(),
            source=source,
            region=region,
            fetched_at=now,
            tables=tables,
            header=[
                f"Written by `python -m analysis prices refresh --provider {provider} --region {region}`.",
                "Re-run the command to refresh it; do not edit by hand.",
            ],
        )
        path, changes = snapshot.write(text, name, out_dir, catalog, [o.id for o in offerings], dry_run=dry_run)
        result.snapshot, result.path, result.changes, result.written = name, str(path), changes, not dry_run
    except PricesError as exc:
        result.error, result.exit_code = str(exc), exc.exit_code
    return result


def base_catalog(out_dir: Path, data_dir: Path | None = None) -> Catalog:
    """The catalog plus the snapshots already in `out_dir`: the diff compares with the newest price anywhere."""
    catalog = load_catalog(data_dir)
    loaded = {s.name for s in catalog.prices.snapshots}
    extra = (
        [load_snapshot(p) for p in sorted(out_dir.glob("*.toml")) if p.stem not in loaded] if out_dir.is_dir() else []
    )
    if not extra:
        return catalog
    snaps = sorted(catalog.prices.snapshots + extra, key=lambda s: (s.as_of, s.name))
    return Catalog(catalog.offerings(), catalog.billing_rules, PriceIndex(snaps))


def plan(provider: str | None, regions: list[str] | None) -> list[tuple[str, str]]:
    """(provider, region) pairs to refresh; ValueError naming a bad region."""
    CATALOG_REGIONS = snapshot.CATALOG_REGIONS
    providers = [provider] if provider else list(PROVIDERS)
    if not regions:
        return [(p, CATALOG_REGIONS[p]) for p in providers]
    pairs = []
    for region in regions:
        owners = [p for p in providers if REGION_PATTERNS[p].match(region)]
        if not owners:
            want = " or ".join(f"{p} (e.g. {CATALOG_REGIONS[p]})" for p in providers)
            raise ValueError(f"--region {region!r} is not a {want} region name")
        pairs.append((owners[0], region))
    return list(dict.fromkeys(pairs))


def refresh_prices(
    provider: str | None,
    regions: list[str] | None,
    *,
    out: str | Path | None = None,
    dry_run: bool = False,
    clients: Clients | None = None,
    now: datetime | None = None,
) -> list[RefreshResult]:
    """Refresh every (provider, region) into the shipped snapshots, or `out`. ValueError before any fetch for a
    region not a provider's, or (without `out`) not the catalog's own region."""
    pairs = plan(provider, regions)
    shipped = Path(infra.catalog.DATA_DIR) / "prices"
    out_dir = Path(out).resolve() if out else shipped
    if not out:
        other = [(p, r) for p, r in pairs if snapshot.CATALOG_REGIONS[p] != r]
        if other:
            p, r = other[0]
            raise ValueError(
                f"--region {r} is not the catalog's {p} region ({snapshot.CATALOG_REGIONS[p]}); the catalog prices "
                f"every offering in one region, so write {r} elsewhere with --out DIR"
            )
    results = []
    for prov, region in pairs:
        res = refresh(prov, region, base_catalog(out_dir), out_dir, clients=clients, now=now, dry_run=dry_run)
        if res.written:
            infra.catalog.load_catalog.cache_clear()  # the next lookup sees the new snapshot
        results.append(res)
    return results
