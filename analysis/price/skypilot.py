"""Dated price snapshots from SkyPilot's public catalog (github.com/skypilot-org/skypilot-catalog
`catalogs/<version>/<cloud>/vms.csv`: a row per instance type or GPU bundle and zone, on-demand `Price` and
`SpotPrice` at fetch time), so the shipped prices renew without cloud credentials. The rules: docs/research/prices.md,
section 7. Every number written is a source value or a median/quotient of them; a price of 0 is how the fetcher
writes one it did not find (a4-highgpu-8g in v9): missing, never free."""

from __future__ import annotations

import argparse
import csv
import re
import statistics
import sys
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import NamedTuple

import infra.catalog
from infra.catalog import Catalog, Offering
from infra.catalog.price_errors import PricesError
from infra.catalog.prices import ROW_KEYS
from payload.exitcodes import USAGE

from .refresh import CATALOG_REGIONS, RefreshResult, render_snapshot, snapshot_name, targets, write_snapshot

REPO = "skypilot-org/skypilot-catalog"
GENERATOR = "python -m analysis.price.skypilot"
STANDARD_ZONE = re.compile(r"^[a-z]+[0-9]+-az[0-9]+$")  # use1-az4; Local/Wavelength zones have more parts
BUNDLE_TOLERANCE = 0.001  # a larger GPU bundle's per-GPU price must agree with the smallest's
# Catalog price key prefix ("machine:", "gpu:") -> snapshot table.
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


class Quote(NamedTuple):
    """One item's prices in the region, with how they were derived."""

    hourly: float
    spot_hourly: float | None
    note: str


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


# Whether an item whose spot is above on-demand keeps its on-demand figure. AWS: yes, the on-demand figure is the
# region's list price and Spot is capped at it by default (AWS Batch's ComputeResource bidPercentage: "the default
# value is 100% of the On-Demand price"), so only the spot figure goes. GCP: no, the on-demand GPU figure is the
# odd one (v9's us-central1 A100-80GB and H100 rows: a2-ultragpu-1g composed from them costs 2.95 USD/h against
# the billing catalog's 5.07), so the item goes. Either way with a warning, never guessed at.
KEEPS_ON_DEMAND = {"aws": True, "gcp": False}


def _kept(key: str, quote: Quote | None, provider: str, missing: str, warnings: list[str]) -> dict | None:
    """The quote's snapshot fields, or None with a warning naming `key`: inconsistent, or `missing` (no quote)."""
    if quote is not None and quote.spot_hourly is not None and quote.spot_hourly > quote.hourly:
        found = f"{key}: spot ${quote.spot_hourly} is above on-demand ${quote.hourly} in the source; "
        if not KEEPS_ON_DEMAND[provider]:
            warnings.append(found + "left out as inconsistent (older dated prices, if any, stay in force)")
            return None
        warnings.append(found + "the spot figure is left out, the on-demand list price stands")
        quote = Quote(quote.hourly, None, f"{quote.note}; spot left out: above on-demand")
    if quote is None:
        if not any(w.startswith(key + ":") for w in warnings):
            warnings.append(f"{key}: {missing} (older dated prices, if any, stay in force)")
        return None
    return quote._asdict()


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
    return Quote(round(statistics.median(on_demand), 6), round(statistics.median(spot), 6) if spot else None, note)


def aws_tables(rows, offerings: list[Offering], region: str, where: str):
    """({"price": {offering id: fields}}, warnings) for AWS offerings from the region's rows: on-demand is the
    region's (zones agree)."""
    warnings: list[str] = []
    prices = {}
    for o in offerings:
        mine = [r for r in rows if r["InstanceType"] == o.instance_type and STANDARD_ZONE.match(r["AvailabilityZone"])]
        quote = _zone_quote(mine, f"{o.instance_type} in {region}")
        prices[o.id] = _kept(o.id, quote, "aws", f"no {o.instance_type} price in {where} for {region}", warnings)
    return {"price": {k: v for k, v in prices.items() if v}}, warnings


def gcp_gpu_quote(rows, model: str, region: str, warnings: list[str]) -> Quote | None:
    """Per-GPU price from the smallest bundle the region's rows list."""
    mine = [r for r in rows if not r["InstanceType"] and r["AcceleratorName"] == model]
    smallest = min((float(r["AcceleratorCount"]) for r in mine), default=None)
    if smallest is None:
        return None
    quote = _zone_quote(
        [r for r in mine if float(r["AcceleratorCount"]) == smallest],
        f"GPU {model} in {region}, the {int(smallest)}-GPU row / {int(smallest)}",
        divisor=smallest,
    )
    if quote is None:
        return None
    for r in mine:
        price = _number(r["Price"])
        per_gpu = None if price is None else price / float(r["AcceleratorCount"])
        if per_gpu is not None and abs(per_gpu - quote.hourly) > BUNDLE_TOLERANCE * quote.hourly:
            warnings.append(
                f"gpu:{model}: the {r['AcceleratorCount']}-GPU row in {r['AvailabilityZone']} is "
                f"${per_gpu:.6f} per GPU, not ${quote.hourly}; the smallest bundle is used"
            )
    return quote


def gcp_tables(rows, offerings: list[Offering], region: str, where: str):
    """({"gcp_machine": {...}, "gcp_gpu": {...}}, warnings) from the region's rows: the machine types and GPU models
    the offerings are composed of (`gcp/<machine>+<n>x<gpu>` = machine + n x GPU), each priced on its own."""
    warnings: list[str] = []
    needed: dict[str, set[str]] = {table: set() for table in COMPONENT_TABLES.values()}
    for o in offerings:
        for key in o.price_components:
            prefix, _, name = key.partition(":")
            needed[COMPONENT_TABLES[prefix + ":"]].add(name)

    def machine(name):  # a machine row has an InstanceType and no accelerator
        mine = [r for r in rows if r["InstanceType"] == name and not r["AcceleratorName"]]
        return _zone_quote(mine, f"machine type {name} in {region}")

    quoters = {
        "gcp_machine": ("machine", machine),
        "gcp_gpu": ("gpu", lambda name: gcp_gpu_quote(rows, name, region, warnings)),
    }
    tables = {}
    for table, names in needed.items():
        label, quoter = quoters[table]
        kept = {
            n: _kept(f"{label}:{n}", quoter(n), "gcp", f"no price in {where} for {region}", warnings)
            for n in sorted(names)
        }
        tables[table] = {k: v for k, v in kept.items() if v}
    return tables, warnings


TABLE_BUILDERS = {"aws": aws_tables, "gcp": gcp_tables}


# What a snapshot table's rows mean, said once in the header of a snapshot that has the table.
TABLE_NOTES = {"gcp_gpu": "GPU prices are per GPU: the smallest bundle the catalog lists, divided by its GPU count."}


def convert(source: CatalogFile, catalog: Catalog, region: str | None = None) -> tuple[str, str, list[str], list[str]]:
    """(snapshot name, TOML text, offering ids priced, warnings) for one source file. SourceError when the
    file has nothing the catalog can use. Offerings retired on the source's date keep their dated older prices."""
    region = region or CATALOG_REGIONS[source.provider]
    offerings = targets(catalog, source.provider, source.as_of)
    where = f"{REPO} {source.repo_path} @{source.commit[:8]}"
    rows = [r for r in read_rows(source.path, source.provider) if r["Region"] == region]
    tables, warnings = TABLE_BUILDERS[source.provider](rows, offerings, region, where)
    if not any(tables.values()):
        raise SourceError(f"{source.path} prices none of the {len(offerings)} {source.provider} offerings in {region}")
    retired = ", ".join(
        sorted(o.id for o in catalog.offerings(provider=source.provider) if o.is_retired_on(source.as_of))
    )
    header = [
        f"{source.provider.upper()} {region} prices from {where}, rows read from {source.path.name}.",
        f"Dated {source.as_of.isoformat()}: {source.dated_by}.",
        "Spot: the median over the region's standard zones at the catalog's fetch time (values in each note).",
        *(TABLE_NOTES[name] for name in tables if name in TABLE_NOTES),
        *([f"Not priced (retired by this date; their dated older prices stay): {retired}."] if retired else []),
        *(f"Left out: {w}." for w in warnings),
        f"Written by `{GENERATOR}`; re-run it on a newer catalog rather than editing by hand.",
    ]
    text = render_snapshot(
        as_of=source.as_of,
        # short enough for `cost` to print; how the date is known is in the header
        source=f"{REPO} {source.repo_path} @{source.commit[:8]} ({source.provider.upper()} prices via SkyPilot's "
        f"fetcher, {region}; dated {source.as_of.isoformat()}, how: see the snapshot's header)",
        region=region,
        fetched_at=None,
        header=header,
        tables=tables,
        generator=GENERATOR,
    )
    version = m.group(1) if (m := re.search(r"catalogs/(v[0-9]+)/", source.repo_path)) else "v?"
    name = snapshot_name(f"skypilot-{version}-{source.provider}", source.provider, region, source.as_of)
    return name, text, [o.id for o in offerings], warnings


def import_catalog(
    source: CatalogFile, catalog: Catalog, out_dir: Path, *, region: str | None = None, dry_run: bool = False
) -> RefreshResult:
    """Convert, validate and (unless dry_run) write `source`; errors come back in the result."""
    result = RefreshResult(source.provider, region or CATALOG_REGIONS[source.provider])
    try:
        name, text, ids, warnings = convert(source, catalog, result.region)
        result.warnings.extend(warnings)
        path, changes = write_snapshot(text, name, out_dir, catalog, ids, dry_run=dry_run)
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
