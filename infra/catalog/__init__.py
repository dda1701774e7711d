"""The offering catalog: what each GPU offering is, how it bills, and what it
cost on a given date. Pure Python and data files (no Pulumi, no TensorFlow),
so infra, payload and analysis all read the same rows.

    cat = load_catalog()
    cat.get("aws/p3.8xlarge").stack_name("spot")   # "aws-p3-8x-spot"
    cat.price("gcp/n1-standard-8+1xv100", as_of=date(2018, 8, 1))
"""

from __future__ import annotations

import difflib
import os
import tomllib
import warnings
from datetime import date
from functools import lru_cache
from pathlib import Path

from .errors import CatalogError, NoPrice, UnknownOffering
from .loader import DATA_DIR, load_billing, load_gpus, load_offerings
from .model import MARKETS, BillingTerms, GpuSpec, Offering, OnPremSpec, PriceComponent, PriceQuote  # noqa: F401 - re-exported
from .prices import PriceIndex, load_snapshots


class RetiredOfferingWarning(UserWarning):
    """Pricing an offering the provider no longer sells."""


class Catalog:
    def __init__(self, offerings: list[Offering], billing: dict[str, tuple[BillingTerms, ...]], prices: PriceIndex):
        self._by_id = {o.id: o for o in offerings}
        self.billing_rules = billing
        self.prices = prices
        for o in offerings:
            if o.billing not in billing:
                raise CatalogError(
                    f"offering {o.id}: billing rule {o.billing!r} is not defined (known: {', '.join(sorted(billing))}); "
                    "add it to billing.toml in your catalog directory"
                )
        self._by_stack = {o.stack_name(m): (o, m) for o in offerings if o.is_cloud for m in o.markets}
        if len(self._by_stack) != sum(len(o.markets) for o in offerings if o.is_cloud):
            raise CatalogError("two cloud offerings map to the same stack name; give one a stack_suffix")

    # --- lookup -----------------------------------------------------------
    def get(self, offering_id: str) -> Offering:
        try:
            return self._by_id[offering_id]
        except KeyError:
            # the closest ids, also matching a bare instance type ('p3.8xlarge')
            ids = list(self._by_id)
            exact = [i for i in ids if offering_id in (i.split("/", 1)[1], self._by_id[i].instance_type)]
            close = difflib.get_close_matches(offering_id.lower(), ids, n=3, cutoff=0.5)
            raise UnknownOffering(offering_id, list(dict.fromkeys(exact + close))[:3]) from None

    def offerings(self, provider: str | None = None, gpu: str | None = None) -> list[Offering]:
        rows = list(self._by_id.values())
        if provider:
            rows = [o for o in rows if o.provider == provider]
        if gpu:
            want = gpu.replace(" ", "-").lower()
            rows = [o for o in rows if o.gpu and o.gpu.model.lower() == want]
        return rows

    def providers(self) -> list[str]:
        return sorted({o.provider for o in self._by_id.values()})

    def gpu_models(self) -> list[str]:
        return sorted({o.gpu.model for o in self._by_id.values() if o.gpu})

    def cloud_stacks(self) -> dict[str, tuple[Offering, str]]:
        """Every Pulumi stack name the matrix has: name -> (offering, market)."""
        return dict(self._by_stack)

    def billing_terms(self, offering_id: str, on: date | None = None) -> BillingTerms:
        """The billing terms in force on a date (default: the newest)."""
        history = self.billing_rules[self.get(offering_id).billing]
        if on is None:
            return history[-1]
        eligible = [t for t in history if t.since <= on]
        if not eligible:
            raise CatalogError(f"billing rule {history[0].rule!r} has no terms before {history[0].since}")
        return eligible[-1]

    # --- prices -----------------------------------------------------------
    def price(self, offering_id: str, as_of: date | None = None, market: str = "on-demand") -> PriceQuote:
        """The hourly price in force on `as_of` (default: newest snapshot), or NoPrice; a retired offering
        warns without a date (RetiredOfferingWarning) and refuses one after its retirement."""
        o = self.get(offering_id)
        if market not in MARKETS:
            raise CatalogError(f"market {market!r} is not one of {', '.join(MARKETS)}")
        if market not in o.markets:
            raise NoPrice(f"{o.id} has no spot market (markets: {', '.join(o.markets)}); use --market on-demand")
        if o.retired is not None:
            if as_of is None:
                warnings.warn(
                    f"{o.id} was retired on {o.retired} ({o.retired_source}); showing its last published price. "
                    f"Pass --as-of YYYY-MM-DD (before {o.retired}) to price it on a date it was sold.",
                    RetiredOfferingWarning,
                    stacklevel=2,
                )
            elif as_of >= o.retired:
                raise NoPrice(f"{o.id} was retired on {o.retired}; choose --as-of before that date")
        if o.price_components:
            whole = self.prices.lookup(o.id, market, as_of)
            try:
                composed = self._composed_price(o, as_of, market)
            except NoPrice:
                if whole is None:
                    raise
                composed = None
            # A published price of the whole machine (GPUs included) wins
            # over the sum of parts when it is at least as new.
            if composed is not None and (whole is None or whole.as_of < composed.as_of):
                return composed
        return self._row(o.id, o.id, market, as_of)

    def _row(self, offering_id: str, key: str, market: str, as_of: date | None) -> PriceQuote:
        row = self.prices.lookup(key, market, as_of)
        if row is not None:
            return row
        first = self.prices.first_date(key, market)
        what = key if key == offering_id else f"{key} (part of {offering_id})"
        if first is None:
            raise NoPrice(f"no {market} price for {what} in any snapshot")
        raise NoPrice(f"no {market} price for {what} on or before {as_of}; the first snapshot pricing it is {first}")

    def _composed_price(self, o: Offering, as_of: date | None, market: str) -> PriceQuote:
        """GCP: machine type (+ count x GPU), each from its own newest snapshot."""
        machine_key, *gpu_key = o.price_components
        parts = []
        for key, qty in ((machine_key, 1), *((k, o.gpu_count) for k in gpu_key)):
            row = self._row(o.id, key, market, as_of)
            label = key if qty == 1 else f"{key} x{qty}"
            parts.append(PriceComponent(label, row.hourly_usd, qty, row.as_of, row.source, row.snapshot))
        newest = max(parts, key=lambda p: p.as_of)
        return PriceQuote(
            offering_id=o.id,
            market=market,
            hourly_usd=round(sum(p.total_usd for p in parts), 6),
            as_of=newest.as_of,
            source="; ".join(dict.fromkeys(p.source for p in parts)),
            snapshot=newest.snapshot,
            components=tuple(parts),
        )


# Extra folders of price snapshots (os.pathsep-separated), e.g. the output of
# `python -m analysis prices refresh --out DIR`, loaded beside data/prices/.
PRICES_DIR_ENV = "GPUBENCH_PRICES_DIR"
# Catalog directories you own (os.pathsep-separated), same layout as data/:
# offerings/*.toml, prices/*.toml, billing.toml, gpus.toml (each optional).
# A `catalog/` folder in the current directory is read too, after them.
CATALOG_DIRS_ENV = "GPUBENCH_CATALOG_DIRS"
PROJECT_CATALOG = "catalog"


def user_catalog_dirs(environ=None, cwd: Path | None = None) -> tuple[Path, ...]:
    """Your catalog directories: $GPUBENCH_CATALOG_DIRS, then ./catalog if it exists."""
    environ = os.environ if environ is None else environ
    dirs: list[Path] = []
    for text in environ.get(CATALOG_DIRS_ENV, "").split(os.pathsep):
        if not text.strip():
            continue
        d = Path(text).expanduser().resolve()
        if not d.is_dir():
            raise CatalogError(
                f"{CATALOG_DIRS_ENV}: {text} is not a directory; give folders holding offerings/*.toml, "
                "prices/*.toml and/or billing.toml, separated by " + repr(os.pathsep)
            )
        dirs.append(d)
    local = (cwd or Path.cwd()) / PROJECT_CATALOG
    if local.is_dir() and local.resolve() not in dirs:
        dirs.append(local.resolve())
    return tuple(dict.fromkeys(dirs))


def _merged(load, filename: str, path: Path, user_dirs: tuple[Path, ...], clash) -> dict:
    """The shipped table of `filename` plus each user directory's; `clash(label, name, origin, old, new)`
    raises for a name defined twice (or returns to accept it)."""
    table = load(path)
    origin = dict.fromkeys(table, filename)
    for label in (str(user / filename) for user in user_dirs if (user / filename).is_file()):
        for name, value in load(Path(label).parent, label).items():
            if name in table:
                clash(label, name, origin[name], table[name], value)
            table[name], origin[name] = value, label
    return table


def _gpu_clash(label: str, model: str, origin: str, old: GpuSpec, new: GpuSpec) -> None:
    if old != new:
        raise CatalogError(
            f"{label} [{model}]: GPU model {model!r} is already defined in {origin} with other "
            "specs; use the existing model name as is or give yours another name"
        )


def _billing_clash(label: str, name: str, origin: str, *_) -> None:
    raise CatalogError(
        f"{label} [[{name}]]: billing rule {name!r} is already defined in {origin}; "
        "refer to it from your offerings as is, or give your rule another name"
    )


@lru_cache(maxsize=4)
def _load(data_dir: str, extra_price_dirs: tuple[str, ...] = (), user_dirs: tuple[str, ...] = ()) -> Catalog:
    path = Path(data_dir)
    users = tuple(Path(d) for d in user_dirs)
    gpus = _merged(load_gpus, "gpus.toml", path, users, _gpu_clash)
    billing = _merged(load_billing, "billing.toml", path, users, _billing_clash)
    snapshots = load_snapshots(path, tuple(Path(d) for d in extra_price_dirs), users)
    return Catalog(load_offerings(path, gpus, users), billing, PriceIndex(snapshots))


def load_catalog(data_dir: str | Path | None = None) -> Catalog:
    """The catalog from `data_dir` (default: the shipped data) plus $GPUBENCH_PRICES_DIR's snapshots and
    your catalog directories, cached (`load_catalog.cache_clear()` after a snapshot is written)."""
    extra = tuple(str(Path(d).resolve()) for d in os.environ.get(PRICES_DIR_ENV, "").split(os.pathsep) if d)
    users = tuple(str(d) for d in user_catalog_dirs())
    return _load(str(Path(data_dir or DATA_DIR).resolve()), extra, users)


load_catalog.cache_clear = _load.cache_clear  # type: ignore[attr-defined]


@lru_cache(maxsize=1)
def _zones() -> dict[str, dict[str, tuple[str, ...]]]:
    raw = tomllib.loads((Path(DATA_DIR) / "zones.toml").read_text())
    return {cloud: {region: tuple(zones) for region, zones in regions.items()} for cloud, regions in raw.items()}


def region_zones(provider: str, region: str) -> tuple[str, ...]:
    """The zones of a region (data/zones.toml); a region not listed there: its a, b and c zones."""
    listed = _zones().get(provider, {})
    if region in listed:
        return listed[region]
    return tuple(f"{region}{letter}" for letter in "abc") if listed else ()
