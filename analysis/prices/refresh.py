"""One `prices refresh` for one provider and region: fetch, render, validate,
write, diff. The clients come from a `Clients` object so tests hand in stubs.

Which offerings are refreshed: the provider's catalog offerings not retired on
the fetch date. A type the API does not price becomes a warning naming it and
the rest are written; nothing priced at all is an error (no snapshot).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable

from infra.catalog import Catalog, Offering

from . import aws, gcp, snapshot
from .errors import PriceFetchError, PricesError


def _boto3_client(service: str, region: str):
    """A client on a fresh session: credentials are resolved now, not reused
    from whatever boto3's default session cached earlier in the process."""
    import boto3

    return boto3.session.Session().client(service, region_name=region)


@dataclass
class Clients:
    """Factories for the cloud clients: (region) -> client, () -> session."""

    pricing: Callable[[str], Any] = lambda region: _boto3_client("pricing", region)
    ec2: Callable[[str], Any] = lambda region: _boto3_client("ec2", region)
    gcp_session: Callable[[], Any] = gcp.default_session


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
        return {
            "provider": self.provider, "region": self.region, "snapshot": self.snapshot, "path": self.path,
            "written": self.written, "changes": [c.to_dict() for c in self.changes], "warnings": self.warnings,
            "error": self.error, "exit_code": self.exit_code,
        }


def targets(catalog: Catalog, provider: str, day) -> list[Offering]:
    return [o for o in catalog.offerings(provider=provider) if not o.is_retired_on(day)]


def _stamp(now: datetime) -> str:
    return now.strftime("%Y-%m-%dT%H:%M:%SZ")


def _aws_tables(offerings: list[Offering], region: str, now: datetime, clients: Clients):
    types = [o.instance_type for o in offerings]
    od = aws.on_demand_prices(clients.pricing(aws.PRICING_ENDPOINT_REGION), types, region)
    warns = list(od.warnings)
    spot: dict[str, tuple[float, dict[str, float]]] = {}
    try:
        spot = aws.current_spot_prices(clients.ec2(region), list(od.prices), now)
    except PricesError as exc:  # on-demand is the point of the refresh; spot is a bonus
        warns.append(f"aws spot prices in {region} not fetched ({exc}); the snapshot has on-demand prices only")
    rows: dict[str, dict[str, Any]] = {}
    no_spot = []
    for o in offerings:
        if o.instance_type not in od.prices:
            continue
        row: dict[str, Any] = {"hourly": od.prices[o.instance_type]}
        if o.instance_type in spot:
            median, zones = spot[o.instance_type]
            row["spot_hourly"] = round(median, 6)
            row["note"] = ("spot_hourly: median over zones of the spot price at fetch time: "
                           + ", ".join(f"{z} {p:g}" for z, p in zones.items()))
        elif "spot" in o.markets and spot:
            no_spot.append(o.instance_type)
        rows[o.id] = row
    if no_spot:
        warns.append(f"aws in {region}: no spot price at fetch time for {', '.join(no_spot)}; "
                     "on-demand only for these")
    source = (f"AWS Price List API (pricing.get_products AmazonEC2, {region}, Linux, shared tenancy)"
              f"{' + EC2 spot price history' if spot else ''}, fetched {_stamp(now)}")
    return {"price": rows}, source, warns


def _gcp_tables(offerings: list[Offering], region: str, now: datetime, clients: Clients):
    machines = {o.instance_type: (o.instance_type, o.vcpus, o.memory_gb) for o in offerings}
    gpus = sorted({o.gpu_model for o in offerings if o.gpu_model})
    prices = gcp.compute_engine_prices(clients.gcp_session(), machines.values(), gpus, region)
    source = (f"GCP Cloud Billing Catalog API ({gcp.COMPUTE_ENGINE_SERVICE}/skus, Compute Engine, {region}), "
              f"fetched {_stamp(now)}")
    return {"gcp_machine": prices.machines, "gcp_gpu": prices.gpus}, source, prices.warnings


FETCHERS = {"aws": _aws_tables, "gcp": _gcp_tables}


def refresh(provider: str, region: str, catalog: Catalog, out_dir: Path, *, clients: Clients | None = None,
            now: datetime | None = None, dry_run: bool = False) -> RefreshResult:
    """Fetch one provider's prices in one region and write them as a snapshot
    in `out_dir` (validated against `catalog` first). Errors are returned in
    the result (with the exit code) rather than raised, so one provider
    failing does not stop the other."""
    now = now or datetime.now(timezone.utc)
    clients = clients or Clients()
    result = RefreshResult(provider, region)
    offerings = targets(catalog, provider, now.date())
    try:
        tables, source, warns = FETCHERS[provider](offerings, region, now, clients)
        result.warnings.extend(warns)
        if not any(tables.values()):
            raise PriceFetchError(f"{provider} {region}: the API priced none of the {len(offerings)} offerings")
        name = snapshot.snapshot_name(provider, region, now.date())
        text = snapshot.render(
            as_of=now.date(), source=source, region=region, fetched_at=now, tables=tables,
            header=[f"Written by `python -m analysis prices refresh --provider {provider} --region {region}`.",
                    "Re-run the command to refresh it; do not edit by hand."],
        )
        path, changes = snapshot.write(text, name, out_dir, catalog, [o.id for o in offerings], dry_run=dry_run)
        result.snapshot, result.path, result.changes, result.written = name, str(path), changes, not dry_run
    except PricesError as exc:
        result.error, result.exit_code = str(exc), exc.exit_code
    return result


def base_catalog(out_dir: Path, data_dir: Path | None = None) -> Catalog:
    """The catalog plus the snapshots already in `out_dir` (earlier refreshes
    written with --out), so the diff compares with the newest price anywhere."""
    from infra.catalog import load_catalog
    from infra.catalog.prices import PriceIndex, load_snapshot

    catalog = load_catalog(data_dir)
    loaded = {s.name for s in catalog.prices.snapshots}
    extra = [load_snapshot(p) for p in sorted(out_dir.glob("*.toml")) if p.stem not in loaded] if out_dir.is_dir() else []
    if not extra:
        return catalog
    snaps = sorted(catalog.prices.snapshots + extra, key=lambda s: (s.as_of, s.name))
    return Catalog(catalog.offerings(), catalog.billing_rules, PriceIndex(snaps))
