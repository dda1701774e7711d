"""Reads the TOML data files into typed records, with errors naming the file and the field."""

from __future__ import annotations

import tomllib
from datetime import date
from pathlib import Path
from typing import Any

from infra import clouds

from .errors import CatalogError
from .model import GPU_FIGURES, INTERCONNECT_KINDS, MARKETS, BillingTerms, GpuSpec, Interconnect, Offering, OnPremSpec

DATA_DIR = Path(__file__).parent / "data"


def read_toml(path: Path) -> dict[str, Any]:
    try:
        with path.open("rb") as fh:
            return tomllib.load(fh)
    except tomllib.TOMLDecodeError as exc:
        raise CatalogError(f"{path}: not valid TOML: {exc}") from exc


def as_date(value: Any, where: str) -> date:
    if isinstance(value, date):
        return value
    try:
        return date.fromisoformat(str(value))
    except ValueError as exc:
        raise CatalogError(f"{where}: {value!r} is not a date (use YYYY-MM-DD)") from exc


def require(row: dict, key: str, where: str) -> Any:
    if key not in row:
        raise CatalogError(f"{where}: missing required field {key!r}")
    return row[key]


GPU_KEYS = {"memory_gb", "compute_capability", "architecture", "spec_source", "spec_note", *GPU_FIGURES}


def positive(value: Any, where: str, unit: str) -> float:
    """A number above zero (bools and strings refused), or CatalogError naming the field and unit."""
    if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
        raise CatalogError(f"{where}: {value!r} is not a positive number of {unit}")
    return float(value)


def _gpu_spec(model: str, row: dict, where: str) -> GpuSpec:
    unknown = sorted(set(row) - GPU_KEYS)
    if unknown:
        raise CatalogError(f"{where}: unknown field {unknown[0]!r} (known: {', '.join(sorted(GPU_KEYS))})")
    cc = str(require(row, "compute_capability", where))
    try:
        float(cc)
    except ValueError:
        raise CatalogError(f'{where}: compute_capability {cc!r} is not a number such as "8.9"') from None
    figures = {name: positive(row[name], f"{where} {name}", unit) for name, unit in GPU_FIGURES.items() if name in row}
    if figures and not row.get("spec_source"):
        raise CatalogError(f"{where}: {', '.join(figures)} need a spec_source naming the datasheet")
    return GpuSpec(
        model=model,
        memory_gb=positive(require(row, "memory_gb", where), f"{where} memory_gb", "GB"),
        compute_capability=cc,
        architecture=str(row.get("architecture", "")),
        spec_source=str(row.get("spec_source", "")),
        spec_note=str(row.get("spec_note", "")),
        **figures,
    )


def load_gpus(data_dir: Path, label: str = "gpus.toml") -> dict[str, GpuSpec]:
    raw = read_toml(data_dir / "gpus.toml")
    return {model: _gpu_spec(model, row, f"{label} [{model}]") for model, row in raw.items()}


def interconnect(row: dict, where: str) -> Interconnect | None:
    """An offering's `interconnect = { kind, generation, bandwidth_gbs, source }`, or None."""
    raw = row.get("interconnect")
    if raw is None:
        return None
    if not isinstance(raw, dict):
        raise CatalogError(
            f'{where}: interconnect is a table: {{ kind = "NVLink", bandwidth_gbs = 900, source = "..." }}'
        )
    kind = require(raw, "kind", f"{where} interconnect")
    if kind not in INTERCONNECT_KINDS:
        raise CatalogError(f"{where}: interconnect kind {kind!r} is not one of {', '.join(INTERCONNECT_KINDS)}")
    bandwidth = raw.get("bandwidth_gbs")
    return Interconnect(
        kind=kind,
        bandwidth_gbs=None if bandwidth is None else positive(bandwidth, f"{where} interconnect bandwidth_gbs", "GB/s"),
        source=str(require(raw, "source", f"{where} interconnect")),
        generation=str(raw.get("generation", "")),
    )


BILLING_NUMBERS = {"increment_seconds": 1, "minimum_seconds": 0, "monthly_fee_usd": 0, "hours_per_month": 730}
ONPREM_NUMBERS = ("purchase_usd", "lifetime_months", "power_kw", "electricity_usd_per_kwh", "days_per_month")


def load_billing(data_dir: Path, label: str = "billing.toml") -> dict[str, tuple[BillingTerms, ...]]:
    raw = read_toml(data_dir / "billing.toml")
    rules: dict[str, tuple[BillingTerms, ...]] = {}
    for name, history in raw.items():
        terms = []
        if not isinstance(history, list):
            raise CatalogError(f"{label} [{name}]: a billing rule is a list of dated terms, write [[{name}]]")
        for i, row in enumerate(history):
            where = f"{label} [[{name}]] #{i + 1}"
            kind = require(row, "kind", where)
            if kind not in ("metered", "monthly", "amortised"):
                raise CatalogError(f"{where}: kind {kind!r} is not one of metered, monthly, amortised")
            since, source = as_date(require(row, "since", where), where), str(require(row, "source", where))
            numbers = {k: float(row.get(k, default)) for k, default in BILLING_NUMBERS.items()}
            terms.append(BillingTerms(rule=name, since=since, kind=kind, source=source, **numbers))
        rules[name] = tuple(sorted(terms, key=lambda t: t.since))
    return rules


def _gpu(gpus: dict[str, GpuSpec], model: str | None, where: str) -> GpuSpec | None:
    if model is None:
        return None
    if model not in gpus:
        raise CatalogError(f"{where}: gpu {model!r} is not in gpus.toml (known: {', '.join(sorted(gpus))})")
    return gpus[model]


def _markets(values: Any, where: str) -> tuple[str, ...]:
    markets = tuple(values or ("on-demand",))
    bad = [m for m in markets if m not in MARKETS]
    if bad:
        raise CatalogError(f"{where}: market {bad[0]!r} is not one of {', '.join(MARKETS)}")
    return markets


def _retired(row: dict, where: str) -> tuple[date | None, str | None]:
    if "retired" not in row:
        return None, None
    return as_date(row["retired"], where), str(require(row, "retired_source", where))


def _listed_offerings(raw: dict, gpus: dict[str, GpuSpec], file: str) -> list[Offering]:
    """Rows that carry their own provider (dedicated, marketplace, on-prem, local)."""
    out = []
    for i, row in enumerate(raw.get("offering", [])):
        where = f"{file} offering #{i + 1}"
        provider = require(row, "provider", where)
        itype = require(row, "instance_type", where)
        onprem = None
        if row.get("billing") == "onprem":
            numbers = {k: float(require(row, k, where)) for k in ONPREM_NUMBERS}
            onprem = OnPremSpec(**numbers, as_of=as_date(row["as_of"], where) if "as_of" in row else None)
        retired, retired_source = _retired(row, where)
        out.append(
            Offering(
                id=f"{provider}/{itype}",
                provider=provider,
                kind=require(row, "kind", where),
                instance_type=itype,
                gpu=_gpu(gpus, row.get("gpu"), where),
                gpu_count=int(row.get("gpu_count", 0)),
                vcpus=row.get("vcpus"),
                memory_gb=row.get("memory_gb"),
                regions=tuple(row.get("regions", ())),
                billing=require(row, "billing", where),
                markets=_markets(row.get("markets"), where),
                specs_source=row.get("specs_source", ""),
                retired=retired,
                retired_source=retired_source,
                onprem=onprem,
            )
        )
    return out


def _parser(filename: str):
    """A cloud's offering file has its own shape, parsed in infra/<cloud>/catalog.py; other files list rows."""
    name = filename.removesuffix(".toml")
    return clouds.get(name).parse_offerings if clouds.is_cloud(name) else _listed_offerings


def load_offerings(data_dir: Path, gpus: dict[str, GpuSpec], user_dirs: tuple[Path, ...] = ()) -> list[Offering]:
    """The shipped offerings, then each user catalog directory's; an id defined twice names both files."""
    offerings: list[Offering] = []
    seen: dict[str, str] = {}  # id -> the file defining it
    sources = [(p, f"offerings/{p.name}") for p in sorted((data_dir / "offerings").glob("*.toml"))]
    for user in user_dirs:
        sources += [(p, str(p)) for p in sorted((user / "offerings").glob("*.toml"))]
    for path, label in sources:
        parser = _parser(path.name)
        try:
            rows = parser(read_toml(path), gpus, label)
        except KeyError as exc:  # a provider-level key the parser needs, e.g. billing for aws.toml
            raise CatalogError(f"{label}: missing required top-level field {exc.args[0]!r}") from None
        for o in rows:
            if o.id in seen:
                raise CatalogError(
                    f"offering id {o.id!r} in {label} is already defined in {seen[o.id]}; "
                    "rename it (its provider/instance_type) or remove one of the two rows"
                )
            seen[o.id] = label
        offerings.extend(rows)
    return offerings
