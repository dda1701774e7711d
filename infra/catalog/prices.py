"""Dated price snapshots (one TOML file under data/prices/: what one source published on one date) and
as-of lookup: a price (per offering; for GCP per machine type and per GPU) comes from the newest snapshot
on or before the date that has it, so an old study is re-priced at the prices of its day. Also the dated
prices of the services around a recurring run (disk, scheduler, function): data/services.toml.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date
from pathlib import Path

from .errors import CatalogError
from .loader import DATA_DIR, as_date, read_toml, require
from .model import PriceQuote

# Price units a row may use, converted to hours.
UNIT_FIELDS = {"hourly": 1.0, "per_minute": 60.0}
MARKET_FIELDS = {"on-demand": "", "spot": "spot_"}


@dataclass(frozen=True)
class Snapshot:
    name: str
    as_of: date
    source: str
    region: str | None
    rows: tuple[PriceQuote, ...]


def _fx(raw: dict, where: str) -> dict[str, float]:
    rates = {"USD": 1.0}
    fx = raw.get("fx", {})
    for key, value in fx.items():
        if key.startswith("usd_per_"):
            rates[key.removeprefix("usd_per_").upper()] = float(value)
    if len(rates) > 1 and "source" not in fx:
        raise CatalogError(f"{where}: [fx] needs a source for its exchange rates")
    return rates


def _row_prices(row: dict, market: str, rates: dict[str, float], where: str) -> tuple[float, float | None] | None:
    """(hourly USD, monthly USD or None) for one market, or None if absent."""
    prefix = MARKET_FIELDS[market]
    currency = row.get("currency", "USD")
    if currency not in rates:
        raise CatalogError(f"{where}: currency {currency!r} has no usd_per_{currency.lower()} in [fx]")
    rate = rates[currency]
    for unit, hours_factor in UNIT_FIELDS.items():
        if prefix + unit in row:
            return float(row[prefix + unit]) * hours_factor * rate, None
    if prefix + "monthly" in row:
        monthly = float(row[prefix + "monthly"]) * rate
        return monthly / float(row.get("hours_per_month", 730)), monthly
    return None


ROW_KEYS = {"price": ("offering", ""), "gcp_machine": ("name", "machine:"), "gcp_gpu": ("gpu", "gpu:")}


def load_snapshot(path: Path, label: str | None = None) -> Snapshot:
    raw = read_toml(path)
    where = label or f"prices/{path.name}"
    as_of = as_date(require(raw, "as_of", where), where)
    source = str(require(raw, "source", where))
    rates = _fx(raw, where)
    rows: list[PriceQuote] = []
    for table, (id_field, prefix) in ROW_KEYS.items():
        for i, row in enumerate(raw.get(table, [])):
            rwhere = f"{where} [[{table}]] #{i + 1}"
            key = prefix + str(require(row, id_field, rwhere))
            priced = {m: p for m in MARKET_FIELDS if (p := _row_prices(row, m, rates, rwhere)) is not None}
            if not priced:
                raise CatalogError(f"{rwhere}: {key} has no price (give hourly, per_minute or monthly)")
            for market, (hourly, monthly) in priced.items():
                if hourly < 0:
                    raise CatalogError(f"{rwhere}: negative price for {key}")
                rows.append(
                    PriceQuote(
                        offering_id=key,
                        market=market,
                        hourly_usd=hourly,
                        as_of=as_date(row["as_of"], rwhere) if "as_of" in row else as_of,
                        source=str(row.get("source", source)),
                        snapshot=path.stem,
                        setup_fee_usd=float(row.get("setup_fee", 0)) * rates[row.get("currency", "USD")],
                        monthly_usd=monthly,
                        note=row.get("note"),
                    )
                )
    return Snapshot(name=path.stem, as_of=as_of, source=source, region=raw.get("region"), rows=tuple(rows))


def load_snapshots(
    data_dir: Path, extra_dirs: tuple[Path, ...] = (), user_dirs: tuple[Path, ...] = ()
) -> list[Snapshot]:
    """The data dir's snapshots, those in `extra_dirs` (GPUBENCH_PRICES_DIR) and in each user catalog's `prices/`."""
    paths: list[tuple[Path, str | None]] = [(p, None) for p in (data_dir / "prices").glob("*.toml")]
    for extra in extra_dirs:
        if not extra.is_dir():
            raise CatalogError(f"price snapshot directory {extra} does not exist (check GPUBENCH_PRICES_DIR)")
        paths.extend((p, None) for p in extra.glob("*.toml"))
    for user in user_dirs:
        paths.extend((p, str(p)) for p in (user / "prices").glob("*.toml"))
    return sorted((load_snapshot(p, label) for p, label in paths), key=lambda s: (s.as_of, s.name))


class PriceIndex:
    """Price rows by (key, market), oldest first, for as-of lookups."""

    def __init__(self, snapshots: list[Snapshot]):
        self.snapshots = snapshots
        self._rows: dict[tuple[str, str], list[PriceQuote]] = {}
        for snap in snapshots:
            for row in snap.rows:
                self._rows.setdefault((row.key, row.market), []).append(row)
        for rows in self._rows.values():
            rows.sort(key=lambda r: (r.as_of, r.snapshot))

    def lookup(self, key: str, market: str, as_of: date | None) -> PriceQuote | None:
        rows = self._rows.get((key, market), [])
        eligible = [r for r in rows if as_of is None or r.as_of <= as_of]
        return eligible[-1] if eligible else None

    def first_date(self, key: str, market: str) -> date | None:
        rows = self._rows.get((key, market), [])
        return rows[0].as_of if rows else None


PRICE_FIELDS = tuple(
    """hours_per_month disk_gb_month_usd scheduler_job_month_usd scheduler_per_million_usd function_increment_seconds
    function_gb_second_usd function_vcpu_second_usd function_per_million_usd function_unit_usd function_unit_memory_gb
    free_scheduler_jobs free_scheduler_invocations free_function_gb_seconds free_function_vcpu_seconds
    free_function_requests""".split()
)


@dataclass(frozen=True)
class ServicePrices:
    provider: str
    as_of: date
    label: str
    source: str
    note: str = ""
    values: dict[str, float] = field(default_factory=dict)
    sources: dict[str, str] = field(default_factory=dict)

    def get(self, name: str, default: float = 0.0) -> float:
        return self.values.get(name, default)

    def source_of(self, name: str) -> str:
        """The field's own source, a shared `free_function_source`, or the set's."""
        if name in self.sources:
            return self.sources[name]
        if name.startswith("free_function") and "free_function" in self.sources:
            return self.sources["free_function"]
        return self.source


def load_service_prices(data_dir: Path | None = None) -> dict[str, tuple[ServicePrices, ...]]:
    raw = read_toml((data_dir or DATA_DIR) / "services.toml")
    out: dict[str, tuple[ServicePrices, ...]] = {}
    for provider, history in raw.items():
        sets = []
        for i, row in enumerate(history):
            where = f"services.toml [[{provider}]] #{i + 1}"
            unknown = set(row) - set(PRICE_FIELDS) - {"as_of", "label", "source", "note"}
            unknown = {k for k in unknown if not k.endswith("_source")}
            if unknown:
                raise CatalogError(f"{where}: unknown field(s) {', '.join(sorted(unknown))}")
            values = {k: float(row[k]) for k in PRICE_FIELDS if k in row}
            if any(v < 0 for v in values.values()):
                raise CatalogError(f"{where}: prices and allowances must not be negative")
            sets.append(
                ServicePrices(
                    provider=provider,
                    as_of=as_date(require(row, "as_of", where), where),
                    label=str(require(row, "label", where)),
                    source=str(require(row, "source", where)),
                    note=str(row.get("note", "")),
                    values=values,
                    sources={k.removesuffix("_source"): str(v) for k, v in row.items() if k.endswith("_source")},
                )
            )
        out[provider] = tuple(sorted(sets, key=lambda s: s.as_of))
    return out


def service_prices(provider: str, on: date | None = None, data_dir: Path | None = None) -> ServicePrices:
    """The newest price set of `provider` on or before `on` (default: newest)."""
    sets = load_service_prices(data_dir).get(provider)
    if not sets:
        raise CatalogError(f"no service prices for provider {provider!r} in services.toml")
    eligible = [s for s in sets if on is None or s.as_of <= on]
    if not eligible:
        raise CatalogError(
            f"no {provider} service prices on or before {on}; the first set is dated {sets[0].as_of} "
            f"(use --as-of {sets[0].as_of} or later)"
        )
    return eligible[-1]
