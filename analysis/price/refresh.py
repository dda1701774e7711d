"""`gpubench prices refresh`, one provider and region at a time: fetch the offerings not retired on the fetch date,
render the snapshot (`<YYYY-MM-DD>_<provider>-live[-<region>].toml`, other regions than the catalog's only with --out),
validate it with the catalog's own loader before anything is replaced, write, and diff against the prices it replaces.
A type the API does not price is a warning; nothing priced at all is an error."""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field
from datetime import date, datetime, timezone
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import infra.catalog
from analysis.price.billed import catalog_price
from infra import clouds
from infra.catalog import Catalog, CatalogError, NoPrice, Offering, load_catalog
from infra.catalog.price_errors import PriceFetchError, PricesError, SnapshotInvalid
from infra.catalog.prices import PriceIndex, Snapshot, load_snapshot
from payload.timestamps import iso

# The region each provider's shipped snapshots price, i.e. the catalog's region.
CATALOG_REGIONS = {c: clouds.get(c).DEFAULT_REGION for c in clouds.NAMES}
LIVE_NAME = re.compile(r"^\d{4}-\d{2}-\d{2}_(?P<provider>[a-z]+)-live(?:-(?P<region>[a-z0-9-]+))?$")
MARKETS = ("on-demand", "spot")


def snapshot_name(stem: str, provider: str, region: str, day: date) -> str:
    """`<day>_<stem>`, with `-<region>` for a region other than the catalog's."""
    return f"{day.isoformat()}_{stem}" + ("" if CATALOG_REGIONS.get(provider) == region else f"-{region}")


def is_live(snapshot: Snapshot | str) -> bool:
    """True for snapshots written by `prices refresh`."""
    return bool(LIVE_NAME.match(snapshot if isinstance(snapshot, str) else snapshot.name))


def _toml_value(value: Any) -> str:
    return json.dumps(value, default=str)  # JSON's strings, numbers and booleans are TOML's (a float as its repr)


TABLE_ID_FIELDS = {"price": "offering", "gcp_machine": "name", "gcp_gpu": "gpu"}


def render_snapshot(
    *,
    as_of: date,
    source: str,
    region: str,
    fetched_at: datetime | None,
    header: Iterable[str],
    tables: dict[str, dict[str, dict[str, Any]]],
    generator: str = "python -m analysis prices refresh",
) -> str:
    """A snapshot's TOML; `tables`: table -> id -> fields. A converted published file has no `fetched_at`."""
    lines = [f"# {h}" for h in header]
    lines += [
        f"as_of = {_toml_value(as_of.isoformat())}",
        f"source = {_toml_value(source)}",
        f"region = {_toml_value(region)}",
    ]
    if fetched_at is not None:
        lines.append(f"fetched_at = {_toml_value(iso(fetched_at, seconds=True))}")
    lines.append(f"generator = {_toml_value(generator)}")
    for table, rows in tables.items():
        for key in sorted(rows):
            lines += ["", f"[[{table}]]", f"{TABLE_ID_FIELDS[table]} = {_toml_value(key)}"]
            lines += [f"{k} = {_toml_value(v)}" for k, v in rows[key].items() if v is not None]
    return "\n".join(lines) + "\n"


def _quote(catalog: Catalog, offering_id: str, market: str):
    try:  # the warnings (a retired offering) are dropped: the diff shows prices, not policy
        return catalog_price(catalog, offering_id, market, None)[0]
    except NoPrice:
        return None


@dataclass
class Change:
    offering: str
    market: str
    old_usd: float | None
    new_usd: float
    old_snapshot: str | None
    new_snapshot: str

    @property
    def pct(self) -> float | None:
        if not self.old_usd:
            return None
        return (self.new_usd - self.old_usd) / self.old_usd * 100.0

    @property
    def status(self) -> str:
        if self.old_usd is None:
            return "new"
        return "unchanged" if abs(self.new_usd - self.old_usd) < 1e-9 else "changed"

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["pct"] = None if self.pct is None else round(self.pct, 2)
        d["status"] = self.status
        return d


def validate_and_diff(path: Path, base: Catalog, offering_ids: Iterable[str]) -> list[Change]:
    """Load the snapshot with the catalog's loader and price every offering with it against `base` (the catalog
    without it); SnapshotInvalid when it does not load or prices nothing."""
    try:
        snap = load_snapshot(path)
    except CatalogError as exc:
        raise SnapshotInvalid(f"the refreshed snapshot does not load: {exc}") from exc
    others = [s for s in base.prices.snapshots if s.name != snap.name]
    try:
        new = Catalog(base.offerings(), base.billing_rules, PriceIndex(others + [snap]))
        old = Catalog(base.offerings(), base.billing_rules, PriceIndex(others))
    except CatalogError as exc:
        raise SnapshotInvalid(f"the refreshed snapshot breaks the catalog: {exc}") from exc
    known = {o.id for o in base.offerings()}
    stray = [r.key for r in snap.rows if r.key.startswith(("aws/", "gcp/")) and r.key not in known]
    if stray:
        raise SnapshotInvalid(f"the refreshed snapshot prices offerings the catalog does not have: {', '.join(stray)}")
    changes = []
    for oid in offering_ids:
        for market in MARKETS:
            if market not in base.get(oid).markets:
                continue
            try:
                after = _quote(new, oid, market)
            except CatalogError as exc:
                raise SnapshotInvalid(f"{oid} {market} cannot be priced with the refreshed snapshot: {exc}") from exc
            if after is None or snap.name not in {after.snapshot, *(c.snapshot for c in after.components)}:
                continue
            before = _quote(old, oid, market)
            changes.append(
                Change(
                    oid,
                    market,
                    before.hourly_usd if before else None,
                    after.hourly_usd,
                    before.snapshot if before else None,
                    snap.name,
                )
            )
    if not changes:
        raise SnapshotInvalid(f"the refreshed snapshot {snap.name} prices none of the offerings asked for")
    return changes


def write_snapshot(
    text: str, name: str, directory: Path, base: Catalog, offering_ids: Iterable[str], dry_run: bool = False
) -> tuple[Path, list[Change]]:
    """Validate `text` as snapshot `name`, write it (unless dry_run) atomically; (path, changes)."""
    with tempfile.TemporaryDirectory(prefix="gpubench-prices-") as tmp:
        staged = Path(tmp) / f"{name}.toml"
        staged.write_text(text, encoding="utf-8")
        changes = validate_and_diff(staged, base, offering_ids)
        target = directory / f"{name}.toml"
        if not dry_run:
            directory.mkdir(parents=True, exist_ok=True)
            partial = directory / f".{name}.toml.partial"
            shutil.copyfile(staged, partial)
            os.replace(partial, target)
    return target, changes


def list_snapshots(catalog: Catalog) -> list[dict[str, Any]]:
    """Every snapshot the catalog loaded, oldest first, marking refreshed ones."""
    return [
        {
            "snapshot": s.name,
            "as_of": s.as_of.isoformat(),
            "region": s.region,
            "rows": len(s.rows),
            "live": is_live(s),
            "source": s.source,
        }
        for s in catalog.prices.snapshots
    ]


def live_catalog(catalog: Catalog) -> Catalog | None:
    """The catalog priced from refreshed snapshots only (None if there are none)."""
    live = [s for s in catalog.prices.snapshots if is_live(s)]
    if not live:
        return None
    return Catalog(catalog.offerings(), catalog.billing_rules, PriceIndex(live))


REGION_PATTERNS = {c: clouds.get(c).REGION_PATTERN for c in clouds.NAMES}
PROVIDERS = tuple(REGION_PATTERNS)


class Clients(SimpleNamespace):
    """Price API client factories by name (each cloud's `CLIENTS`); tests hand in stubs by keyword."""

    def __init__(self, **factories: Callable[..., Any]):
        super().__init__(**{name: f for cloud in clouds.all_clouds() for name, f in cloud.CLIENTS.items()} | factories)


@dataclass
class RefreshResult:
    provider: str
    region: str
    snapshot: str | None = None
    path: str | None = None
    written: bool = False
    changes: list[Change] = field(default_factory=list)
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
        name = snapshot_name(f"{provider}-live", provider, region, now.date())
        text = render_snapshot(
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
        path, changes = write_snapshot(text, name, out_dir, catalog, [o.id for o in offerings], dry_run=dry_run)
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
        other = [(p, r) for p, r in pairs if CATALOG_REGIONS[p] != r]
        if other:
            p, r = other[0]
            raise ValueError(
                f"--region {r} is not the catalog's {p} region ({CATALOG_REGIONS[p]}); the catalog prices "
                f"every offering in one region, so write {r} elsewhere with --out DIR"
            )
    results = []
    for prov, region in pairs:
        res = refresh(prov, region, base_catalog(out_dir), out_dir, clients=clients, now=now, dry_run=dry_run)
        if res.written:
            infra.catalog.load_catalog.cache_clear()  # the next lookup sees the new snapshot
        results.append(res)
    return results
