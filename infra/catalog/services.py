"""Dated prices of the services around a recurring run (disk, scheduler, function): data/services.toml."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date
from pathlib import Path

from .errors import CatalogError
from .loader import DATA_DIR, as_date, read_toml, require

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
