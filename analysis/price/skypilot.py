"""Dated price snapshots from SkyPilot's public catalog.

SkyPilot's fetchers publish, per cloud, `catalogs/<version>/<cloud>/vms.csv`
in github.com/skypilot-org/skypilot-catalog, built from the providers' own
price APIs: one row per instance type (or GPU) and availability zone with its
on-demand `Price` and the zone's `SpotPrice` at fetch time. This module turns
such a file, or an extract of its rows, into an ordinary catalog snapshot for
the offerings the catalog sells in one region, so the shipped prices can be
renewed without cloud credentials:

- AWS rows are instance types. The on-demand price is the region's (zones
  agree); spot is the median over the region's standard zones. Local Zones
  (ids such as `use1-atl2-az1`) need an opt-in and are left out.
- GCP machine types and GPUs are separate rows, composed by the catalog
  (`gcp/<machine>+<n>x<gpu>` = machine + n x GPU). A machine row has an
  InstanceType and no accelerator. A GPU row has no InstanceType and prices a
  bundle of `AcceleratorCount` GPUs; the per-GPU price is that of the smallest
  bundle listed divided by its count (larger bundles must agree within 0.1 %).
- Offerings retired on the source's date are not priced: they keep their
  dated older prices (the rule `prices refresh` follows).
- An item whose spot price is above its on-demand price is inconsistent. On
  AWS the on-demand figure is the region's list price and Spot is capped at it
  by default (e.g. AWS Batch's ComputeResource bidPercentage: "the default value
  is 100% of the On-Demand price"), so the spot figure is the odd one: it alone
  is left out.
  On GCP the on-demand GPU figure is the odd one (v9's us-central1 A100-80GB
  and H100 rows: a2-ultragpu-1g composed from them costs 2.95 USD/h against the
  billing catalog's 5.07), so the item is left out. Either way with a warning,
  never guessed at; a price missing is left out too.
  A price of 0 is how the fetcher writes one it did not find (a4-highgpu-8g
  in v9), so it counts as missing, never as free.

Every number in the snapshot is a source value or a median/quotient of them.
"""

from __future__ import annotations

import argparse
import csv
import re
import statistics
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Any

import infra.catalog
from infra.catalog import Catalog, Offering
from infra.catalog.price_errors import PricesError
from infra.catalog.prices import ROW_KEYS
from payload.exitcodes import USAGE

from . import snapshot
from .refresh import RefreshResult, targets

REPO = "skypilot-org/skypilot-catalog"
GENERATOR = "python -m analysis.price.skypilot"
# Standard availability-zone ids (use1-az4); Local/Wavelength zones have more parts.
STANDARD_ZONE = re.compile(r"^[a-z]+[0-9]+-az[0-9]+$")
BUNDLE_TOLERANCE = 0.001
# Catalog price key prefix ("machine:", "gpu:") -> (snapshot table, id field).
COMPONENT_TABLES = {prefix: table for table, (_field, prefix) in ROW_KEYS.items() if prefix}


class SourceError(ValueError):
    """The source file cannot be converted (wrong columns, no prices at all)."""


@dataclass(frozen=True)
class CatalogFile:
    """One SkyPilot `vms.csv` (or an extract of its rows) and where it is from."""

    provider: str  # "aws" | "gcp"
    path: Path  # the local copy that is read
    repo_path: str  # "catalogs/v9/aws/vms.csv"
    commit: str  # the skypilot-catalog commit the rows were read at
    as_of: date  # the date the prices are known to be from
    dated_by: str  # how `as_of` was established

    @property
    def version(self) -> str:
        match = re.search(r"catalogs/(v[0-9]+)/", self.repo_path)
        return match.group(1) if match else "v?"

    def source(self, region: str) -> str:
        """Short enough for `cost` to print; how the date is known is in the header."""
        return (
            f"{REPO} {self.repo_path} @{self.commit[:8]} ({self.provider.upper()} prices via SkyPilot's "
            f"fetcher, {region}; dated {self.as_of.isoformat()}, how: see the snapshot's header)"
        )


@dataclass(frozen=True)
class Quote:
    """One item's prices in the region, with how they were derived."""

    hourly: float
    spot_hourly: float | None
    note: str

    def fields(self) -> dict[str, Any]:
        return {"hourly": self.hourly, "spot_hourly": self.spot_hourly, "note": self.note}


# --- reading -------------------------------------------------------------------

REQUIRED = {
    "aws": ("InstanceType", "Price", "SpotPrice", "Region", "AvailabilityZone"),
    "gcp": ("InstanceType", "AcceleratorName", "AcceleratorCount", "Region", "AvailabilityZone", "Price", "SpotPrice"),
}


def read_rows(path: Path, provider: str) -> list[dict[str, str]]:
    """The file's rows; SourceError naming the file when a needed column is missing."""
    if not path.is_file():
        raise SourceError(f"{path} does not exist; give a copy of {REPO} catalogs/<version>/{provider}/vms.csv")
    with path.open(newline="", encoding="utf-8") as handle:
        reader = csv.DictReader(handle)
        missing = [c for c in REQUIRED[provider] if c not in (reader.fieldnames or [])]
        if missing:
            raise SourceError(f"{path} is not a SkyPilot {provider} vms.csv: no column {', '.join(missing)}")
        return list(reader)


def _number(text: str) -> float | None:
    """The price in a cell; None for an empty cell or a 0 (no price fetched)."""
    value = float(text) if text.strip() else None
    return value if value is not None and value > 0 else None


def _median(values: Iterable[float]) -> float:
    return round(statistics.median(values), 6)


# Per provider: whether an item whose spot is above on-demand keeps its on-demand figure
# (the module docstring says why).
KEEPS_ON_DEMAND = {"aws": True, "gcp": False}


def _consistent(name: str, quote: Quote | None, warnings: list[str], provider: str) -> Quote | None:
    if quote is None or quote.spot_hourly is None or quote.spot_hourly <= quote.hourly:
        return quote
    found = f"{name}: spot ${quote.spot_hourly} is above on-demand ${quote.hourly} in the source; "
    if KEEPS_ON_DEMAND[provider]:
        warnings.append(found + "the spot figure is left out, the on-demand list price stands")
        return Quote(quote.hourly, None, f"{quote.note}; spot left out: above on-demand")
    warnings.append(found + "left out as inconsistent (older dated prices, if any, stay in force)")
    return None


def _zone_quote(rows: list[dict[str, str]], what: str, divisor: float = 1.0) -> Quote | None:
    """On-demand and spot over zones: the median of each (None without an on-demand price)."""
    on_demand = [v / divisor for r in rows if (v := _number(r["Price"])) is not None]
    spot = [v / divisor for r in rows if (v := _number(r["SpotPrice"])) is not None]
    if not on_demand:
        return None
    zones = sorted(r["AvailabilityZone"] for r in rows)
    note = f"{what}; median over zones {', '.join(zones)}"
    if spot:
        note += f"; spot values {sorted(round(s, 6) for s in spot)}"
    return Quote(_median(on_demand), _median(spot) if spot else None, note)


# --- AWS -------------------------------------------------------------------------


def aws_quote(rows: list[dict[str, str]], instance_type: str, region: str) -> Quote | None:
    mine = [
        r
        for r in rows
        if r["InstanceType"] == instance_type and r["Region"] == region and STANDARD_ZONE.match(r["AvailabilityZone"])
    ]
    return _zone_quote(mine, f"{instance_type} in {region}")


def aws_tables(rows, offerings: list[Offering], region: str, where: str):
    """({"price": {offering id: fields}}, warnings) for AWS offerings."""
    prices: dict[str, dict[str, Any]] = {}
    warnings: list[str] = []
    for o in offerings:
        quote = _consistent(o.id, aws_quote(rows, o.instance_type, region), warnings, "aws")
        if quote is None:
            if not any(w.startswith(o.id + ":") for w in warnings):
                warnings.append(
                    f"{o.id}: no {o.instance_type} price in {where} for {region} (older dated prices, if any, stay in force)"
                )
            continue
        prices[o.id] = quote.fields()
    return {"price": prices}, warnings


# --- GCP -------------------------------------------------------------------------


def gcp_machine_quote(rows, name: str, region: str) -> Quote | None:
    mine = [r for r in rows if r["InstanceType"] == name and not r["AcceleratorName"] and r["Region"] == region]
    return _zone_quote(mine, f"machine type {name} in {region}")


def gcp_gpu_quote(rows, model: str, region: str, warnings: list[str]) -> Quote | None:
    """Per-GPU price from the smallest bundle the source lists in the region."""
    mine = [r for r in rows if not r["InstanceType"] and r["AcceleratorName"] == model and r["Region"] == region]
    counts = sorted({float(r["AcceleratorCount"]) for r in mine})
    if not counts:
        return None
    smallest = counts[0]
    quote = _zone_quote(
        [r for r in mine if float(r["AcceleratorCount"]) == smallest],
        f"GPU {model} in {region}, the {int(smallest)}-GPU row / {int(smallest)}",
        divisor=smallest,
    )
    if quote is None:
        return None
    for r in mine:
        price = _number(r["Price"])
        if (
            price is not None
            and abs(price / float(r["AcceleratorCount"]) - quote.hourly) > BUNDLE_TOLERANCE * quote.hourly
        ):
            warnings.append(
                f"gpu:{model}: the {r['AcceleratorCount']}-GPU row in {r['AvailabilityZone']} is "
                f"${price / float(r['AcceleratorCount']):.6f} per GPU, not ${quote.hourly}; the smallest bundle is used"
            )
    return quote


def gcp_components(offerings: list[Offering]) -> dict[str, set[str]]:
    """Snapshot table -> the machine types / GPU models the offerings are priced from."""
    needed: dict[str, set[str]] = {table: set() for table in COMPONENT_TABLES.values()}
    for o in offerings:
        for key in o.price_components:
            prefix, _, name = key.partition(":")
            needed[COMPONENT_TABLES[prefix + ":"]].add(name)
    return needed


def gcp_tables(rows, offerings: list[Offering], region: str, where: str):
    """({"gcp_machine": {...}, "gcp_gpu": {...}}, warnings) for GCP offerings."""
    warnings: list[str] = []
    quoters = {
        "gcp_machine": ("machine", lambda name: gcp_machine_quote(rows, name, region)),
        "gcp_gpu": ("gpu", lambda name: gcp_gpu_quote(rows, name, region, warnings)),
    }
    tables: dict[str, dict[str, dict[str, Any]]] = {}
    for table, names in gcp_components(offerings).items():
        label, quoter = quoters[table]
        tables[table] = {}
        for name in sorted(names):
            quote = _consistent(f"{label}:{name}", quoter(name), warnings, "gcp")
            if quote is None:
                if not any(w.startswith(f"{label}:{name}:") for w in warnings):
                    warnings.append(
                        f"{label}:{name}: no price in {where} for {region} (older dated prices, if any, stay in force)"
                    )
                continue
            tables[table][name] = quote.fields()
    return tables, warnings


TABLE_BUILDERS = {"aws": aws_tables, "gcp": gcp_tables}


# --- the snapshot -------------------------------------------------------------------


def snapshot_name(source: CatalogFile, region: str) -> str:
    suffix = "" if snapshot.CATALOG_REGIONS.get(source.provider) == region else f"-{region}"
    return f"{source.as_of.isoformat()}_skypilot-{source.version}-{source.provider}{suffix}"


def convert(source: CatalogFile, catalog: Catalog, region: str | None = None) -> tuple[str, str, list[str], list[str]]:
    """(snapshot name, TOML text, offering ids priced, warnings) for one source file.

    SourceError when the file has nothing the catalog can use."""
    region = region or snapshot.CATALOG_REGIONS[source.provider]
    offerings = targets(catalog, source.provider, source.as_of)
    where = f"{REPO} {source.repo_path} @{source.commit[:8]}"
    tables, warnings = TABLE_BUILDERS[source.provider](
        read_rows(source.path, source.provider), offerings, region, where
    )
    if not any(tables.values()):
        raise SourceError(f"{source.path} prices none of the {len(offerings)} {source.provider} offerings in {region}")
    retired = sorted(o.id for o in catalog.offerings(provider=source.provider) if o.is_retired_on(source.as_of))
    header = [
        f"{source.provider.upper()} {region} prices from {where}, rows read from {source.path.name}.",
        f"Dated {source.as_of.isoformat()}: {source.dated_by}.",
        "Spot: the median over the region's standard zones at the catalog's fetch time (values in each note).",
        *_header_lines(tables, retired),
        *(f"Left out: {w}." for w in warnings),
        f"Written by `{GENERATOR}`; re-run it on a newer catalog rather than editing by hand.",
    ]
    text = snapshot.render(
        as_of=source.as_of,
        source=source.source(region),
        region=region,
        fetched_at=None,
        header=header,
        tables=tables,
        generator=GENERATOR,
    )
    return snapshot_name(source, region), text, [o.id for o in offerings], warnings


# What a snapshot table's rows mean, said once in the header of a snapshot that has the table.
TABLE_NOTES = {"gcp_gpu": "GPU prices are per GPU: the smallest bundle the catalog lists, divided by its GPU count."}


def _header_lines(tables: dict[str, Any], retired: list[str]) -> list[str]:
    lines = [TABLE_NOTES[name] for name in tables if name in TABLE_NOTES]
    if retired:
        lines.append(f"Not priced (retired by this date; their dated older prices stay): {', '.join(retired)}.")
    return lines


def import_catalog(
    source: CatalogFile,
    catalog: Catalog,
    out_dir: Path,
    *,
    region: str | None = None,
    dry_run: bool = False,
) -> RefreshResult:
    """Convert `source`, validate it against `catalog` and (unless dry_run)
    write it to `out_dir`. Errors come back in the result with their exit code."""
    result = RefreshResult(source.provider, region or snapshot.CATALOG_REGIONS[source.provider])
    try:
        name, text, ids, warnings = convert(source, catalog, result.region)
        result.warnings.extend(warnings)
        path, changes = snapshot.write(text, name, out_dir, catalog, ids, dry_run=dry_run)
    except (SourceError, PricesError) as exc:
        result.error = str(exc)
        result.exit_code = USAGE if isinstance(exc, SourceError) else exc.exit_code
        return result
    except OSError as exc:  # an unreadable file or an --out directory that cannot be written
        result.error = f"{exc.filename or out_dir}: {exc.strerror or exc}; give a readable --csv and a writable --out"
        result.exit_code = USAGE
        return result
    result.snapshot, result.path, result.changes, result.written = name, str(path), changes, not dry_run
    return result


# --- command line -------------------------------------------------------------------


def parser():
    p = argparse.ArgumentParser(
        prog="python -m analysis.price.skypilot",
        description="Write a dated price snapshot from a SkyPilot catalog vms.csv (or an extract of its rows).",
        epilog=(
            "example: python -m analysis.price.skypilot --provider gcp --csv vms.csv "
            "--repo-path catalogs/v9/gcp/vms.csv --commit 2c3d7ea7... --as-of 2026-07-09 "
            "--dated-by 'the day catalogs/v9 was created' --out my-prices/"
        ),
    )
    p.add_argument("--provider", required=True, choices=sorted(TABLE_BUILDERS))
    p.add_argument("--csv", required=True, type=Path, help="the vms.csv file (or an extract with its header)")
    p.add_argument("--repo-path", required=True, help="its path in the repository, e.g. catalogs/v9/aws/vms.csv")
    p.add_argument("--commit", required=True, help="the skypilot-catalog commit it was read at")
    p.add_argument("--as-of", required=True, type=date.fromisoformat, help="the prices' date, YYYY-MM-DD")
    p.add_argument("--dated-by", required=True, help="how that date is known (recorded in the snapshot)")
    p.add_argument("--region", help="default: the catalog's region for the provider")
    p.add_argument("--out", type=Path, help="directory to write to (default: the shipped snapshots)")
    p.add_argument("--dry-run", action="store_true", help="validate and diff, write nothing")
    return p


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    source = CatalogFile(args.provider, args.csv, args.repo_path, args.commit, args.as_of, args.dated_by)
    out_dir = args.out or Path(infra.catalog.DATA_DIR) / "prices"
    result = import_catalog(source, infra.catalog.load_catalog(), out_dir, region=args.region, dry_run=args.dry_run)
    for warning in result.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    if result.error:
        print(f"error: {result.error}", file=sys.stderr)
        return result.exit_code
    verb = "would write" if args.dry_run else "wrote"
    print(f"{verb} {result.path}: {len(result.changes)} offering prices")
    for change in result.changes:
        if change.status != "unchanged":
            old = "new" if change.old_usd is None else f"${change.old_usd:g} ({change.old_snapshot})"
            print(f"  {change.offering:34} {change.market:9} {old} -> ${change.new_usd:g}")
    return result.exit_code


if __name__ == "__main__":
    sys.exit(main())
