"""The shipped prices of today: every stack in stacks/ is priced from the
shipped snapshots, the newest of them is the SkyPilot v9 catalog converted by
analysis.price.skypilot from the rows kept under data/skypilot-v9, and the
converter's rules hold on small hand-made catalogs."""

from __future__ import annotations

import csv
import statistics
import tomllib
import warnings
from datetime import date
from pathlib import Path

import pytest
import yaml

import infra.catalog
from analysis.price import billed, skypilot
from analysis.price.refresh import CATALOG_REGIONS
from infra.catalog import NoPrice, RetiredOfferingWarning
from infra.catalog.prices import load_snapshot, load_snapshots
from payload.exitcodes import OK, USAGE

ROOT = Path(__file__).resolve().parents[2]
STACKS = ROOT / "stacks"
SOURCE_DIR = Path(__file__).resolve().parent / "data" / "skypilot-v9"
SOURCE = tomllib.loads((SOURCE_DIR / "source.toml").read_text(encoding="utf-8"))
SHIPPED = Path(infra.catalog.DATA_DIR) / "prices"
AWS_HEADER = (
    "InstanceType,AcceleratorName,AcceleratorCount,vCPUs,MemoryGiB,GpuInfo,Price,SpotPrice,Region,AvailabilityZone"
)
GCP_HEADER = (
    "InstanceType,vCPUs,MemoryGiB,AcceleratorName,AcceleratorCount,GpuInfo,Region,AvailabilityZone,Price,SpotPrice"
)


def source_file(provider: str, path: Path | None = None, as_of: date | None = None) -> skypilot.CatalogFile:
    entry = SOURCE["files"][provider]
    return skypilot.CatalogFile(
        provider,
        path or SOURCE_DIR / entry["extract"],
        entry["repo_path"],
        SOURCE["commit"],
        as_of or date.fromisoformat(SOURCE["as_of"]),
        SOURCE["dated_by"],
    )


def stack_configs() -> dict[str, dict]:
    """Stack name -> its config, for every stack that runs an offering."""
    out = {}
    for path in sorted(STACKS.glob("Pulumi.*.yaml")):
        config = yaml.safe_load(path.read_text(encoding="utf-8"))["config"]
        if "gpubench:offering" in config:
            out[path.name.removeprefix("Pulumi.").removesuffix(".yaml")] = config
    return out


def extract_rows(provider: str) -> list[dict[str, str]]:
    with (SOURCE_DIR / SOURCE["files"][provider]["extract"]).open(newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


# --- today's shipped prices ----------------------------------------------------------


def test_every_stack_is_priced_the_way_cost_prices_it_retired_ones_with_a_warning():
    catalog = infra.catalog.load_catalog()
    configs = stack_configs()
    assert len(configs) > 90  # the whole matrix, not a handful
    for stack, config in configs.items():
        offering = catalog.get(config["gpubench:offering"])
        market = config.get("gpubench:market", "on-demand")
        if offering.unpriced:  # listed with the reason no source gives a price
            with pytest.raises(NoPrice):
                billed.quote(catalog, offering.id, market, None, None)
            continue
        try:
            price, hourly, warns, onprem = billed.quote(catalog, offering.id, market, None, None)
        except NoPrice as exc:
            pytest.fail(f"{stack}: {exc}")
        assert hourly > 0 and (price is not None or onprem is not None), stack
        assert any("was retired" in w for w in warns) == (offering.retired is not None), stack


def test_the_cpu_stacks_have_todays_prices_from_the_source_rows():
    catalog = infra.catalog.load_catalog()
    rows = extract_rows("gcp")
    newest = date.fromisoformat(SOURCE["as_of"])
    for machine in ("n1-highcpu-16", "n1-highcpu-32"):
        mine = [r for r in rows if r["InstanceType"] == machine and r["Region"] == CATALOG_REGIONS["gcp"]]
        assert mine, machine
        for market, column in (("on-demand", "Price"), ("spot", "SpotPrice")):
            quote = catalog.price(f"gcp/{machine}", market=market)
            assert quote.as_of == newest and quote.snapshot == f"{newest}_skypilot-v9-gcp"
            assert quote.hourly_usd == pytest.approx(statistics.median(float(r[column]) for r in mine))


def test_the_newest_shipped_snapshots_are_the_source_and_carry_its_commit_and_date():
    snapshots = [s for s in load_snapshots(Path(infra.catalog.DATA_DIR)) if "_skypilot-" in s.name]
    newest = max(s.as_of for s in snapshots)
    assert newest == date.fromisoformat(SOURCE["as_of"])
    at_newest = sorted(s.name for s in snapshots if s.as_of == newest)
    assert at_newest == [f"{newest}_skypilot-v9-aws", f"{newest}_skypilot-v9-gcp"]
    for snap in snapshots:
        if snap.as_of == newest:
            provider = snap.name.rsplit("-", 1)[1]
            assert SOURCE["files"][provider]["repo_path"] in snap.source
            assert SOURCE["commit"][:8] in snap.source and SOURCE["repo"] in snap.source
            assert snap.region == CATALOG_REGIONS[provider]
    # the dated history stays: every older snapshot is still shipped
    assert {"2025-07-01_skypilot-v8-aws", "2025-07-01_skypilot-v8-gcp", "2023-01-01_skypilot-v3-aws"} <= {
        s.name for s in snapshots
    }


@pytest.mark.parametrize("provider", ["aws", "gcp"])
def test_the_shipped_snapshot_is_what_the_converter_makes_of_the_kept_rows(provider):
    name, text, _ids, _warnings = skypilot.convert(source_file(provider), infra.catalog.load_catalog())
    assert (SHIPPED / f"{name}.toml").read_text(encoding="utf-8") == text


def test_the_snapshots_price_every_region_the_stacks_use():
    catalog = infra.catalog.load_catalog()
    regions = {}
    for config in stack_configs().values():
        if catalog.get(config["gpubench:offering"]).unpriced:
            continue  # sold elsewhere (aws/p5e.48xlarge: us-east-2), with no price to compare
        for key, value in config.items():
            if key.endswith(":region"):
                regions.setdefault(key.split(":")[0], set()).add(value)
    assert regions and all(found == {CATALOG_REGIONS[provider]} for provider, found in regions.items()), regions


def test_retired_offerings_keep_prices_dated_before_their_retirement():
    catalog = infra.catalog.load_catalog()
    retired = [o for o in catalog.offerings() if o.retired is not None]
    assert {o.provider for o in retired} == {"aws", "gcp"}
    for o in retired:
        for market in o.markets:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RetiredOfferingWarning)
                quote = catalog.price(o.id, market=market)
            own = [c for c in quote.components if not c.name.startswith("machine:")] or [quote]
            assert all(part.as_of < o.retired for part in own), (o.id, market)


def test_aws_spot_is_the_median_over_standard_zones_of_the_kept_rows():
    rows = extract_rows("aws")
    snap = load_snapshot(SHIPPED / f"{SOURCE['as_of']}_skypilot-v9-aws.toml")
    spot = {r.key: r.hourly_usd for r in snap.rows if r.market == "spot"}
    p5 = [r for r in rows if r["InstanceType"] == "p5.48xlarge"]
    standard = [float(r["SpotPrice"]) for r in p5 if r["AvailabilityZone"].count("-") == 1]
    assert len(standard) < len(p5)  # the Local Zone row is in the source and left out
    assert spot["aws/p5.48xlarge"] == pytest.approx(statistics.median(standard))


# --- the converter's rules on hand-made catalogs ---------------------------------------


def write_csv(path: Path, header: str, lines: list[str]) -> Path:
    path.write_text("\n".join([header, *lines]) + "\n", encoding="utf-8")
    return path


def aws_line(itype: str, price: str, spot: str, zone: str, region: str = "us-east-1") -> str:
    return f"{itype},T4,1.0,4.0,16.0,,{price},{spot},{region},{zone}"


def gcp_gpu_line(model: str, count: int, price: str, spot: str, zone: str) -> str:
    return f",,,{model},{count},,us-central1,{zone},{price},{spot}"


def test_aws_rows_give_region_prices_and_name_what_is_missing_or_inconsistent(tmp_path):
    path = write_csv(
        tmp_path / "vms.csv",
        AWS_HEADER,
        [
            aws_line("g4dn.xlarge", "0.5", "0.2", "use1-az1"),
            aws_line("g4dn.xlarge", "0.5", "0.4", "use1-az2"),
            aws_line("g4dn.xlarge", "0.5", "0.3", "use1-az4"),
            aws_line("g4dn.xlarge", "0.5", "0.01", "use1-atl2-az1"),  # Local Zone
            aws_line("g4dn.xlarge", "0.6", "0.05", "usw2-az1", "us-west-2"),
            aws_line("g5.xlarge", "1.0", "1.5", "use1-az1"),  # spot above on-demand
            aws_line("g6.xlarge", "", "0.3", "use1-az1"),  # no on-demand price
        ],
    )
    catalog = infra.catalog.load_catalog()
    _, text, _, warns = skypilot.convert(source_file("aws", path), catalog)
    raw = tomllib.loads(text)
    prices = {r["offering"]: r for r in raw["price"]}
    assert prices["aws/g4dn.xlarge"]["hourly"] == 0.5 and prices["aws/g4dn.xlarge"]["spot_hourly"] == 0.3
    assert set(prices) == {"aws/g4dn.xlarge", "aws/g5.xlarge"}
    # spot above the on-demand list price: the spot figure alone is left out, and the note says so
    assert prices["aws/g5.xlarge"]["hourly"] == 1.0 and "spot_hourly" not in prices["aws/g5.xlarge"]
    assert prices["aws/g5.xlarge"]["note"].endswith("spot left out: above on-demand")
    assert any(
        w.startswith("aws/g5.xlarge: spot $1.5 is above on-demand $1.0") and "on-demand list price stands" in w
        for w in warns
    )
    assert any(w.startswith("aws/g6.xlarge: no g6.xlarge price") for w in warns)
    assert not any(w.startswith("aws/p3.8xlarge") for w in warns)  # retired: not asked for
    assert "Not priced (retired by this date" in text and "aws/p3.8xlarge" in text.split("as_of =")[0]


def test_gcp_gpu_price_is_the_smallest_bundle_per_gpu_and_machines_are_their_own_rows(tmp_path):
    path = write_csv(
        tmp_path / "vms.csv",
        GCP_HEADER,
        [
            "n1-standard-8,8.0,30.0,,,,us-central1,us-central1-a,0.38,0.12",
            "n1-standard-8,8.0,30.0,,,,us-central1,us-central1-b,0.38,0.14",
            "n1-standard-8,8.0,30.0,,,,europe-west4,europe-west4-a,0.42,0.2",
            gcp_gpu_line("V100", 1, "2.48", "1.2", "us-central1-a"),
            gcp_gpu_line("V100", 2, "4.96", "2.4", "us-central1-a"),
            gcp_gpu_line("V100", 8, "21.0", "9.6", "us-central1-a"),  # 2.625 per GPU: not the list price
            gcp_gpu_line("T4", 2, "0.7", "0.38", "us-central1-a"),  # no 1-GPU row: 2-GPU row / 2
            gcp_gpu_line("H100", 1, "4.2", "5.3", "us-central1-a"),  # spot above on-demand
        ],
    )
    catalog = infra.catalog.load_catalog()
    _, text, _, warns = skypilot.convert(source_file("gcp", path), catalog)
    raw = tomllib.loads(text)
    machines = {r["name"]: r for r in raw["gcp_machine"]}
    gpus = {r["gpu"]: r for r in raw["gcp_gpu"]}
    assert machines["n1-standard-8"]["hourly"] == 0.38 and machines["n1-standard-8"]["spot_hourly"] == 0.13
    assert gpus["V100"]["hourly"] == 2.48 and gpus["V100"]["spot_hourly"] == 1.2
    assert gpus["T4"]["hourly"] == 0.35 and gpus["T4"]["spot_hourly"] == 0.19
    assert "H100" not in gpus and any(w.startswith("gpu:H100: spot $5.3") for w in warns)
    assert any(w.startswith("gpu:V100: the 8-GPU row") for w in warns)
    assert "K80" not in gpus  # only retired offerings use it


def test_a_price_of_zero_is_a_price_the_fetcher_did_not_find_never_a_free_machine(tmp_path):
    """SkyPilot's v9 GCP file lists a4-highgpu-8g at 0.0 in every zone."""
    path = write_csv(
        tmp_path / "vms.csv",
        GCP_HEADER,
        [
            "a4-highgpu-8g,224.0,3968.0,,,,us-central1,us-central1-b,0.0,0.0",
            "n1-standard-8,8.0,30.0,,,,us-central1,us-central1-a,0.38,0.0",  # on-demand only
            gcp_gpu_line("B200", 8, "90.216", "37.7464", "us-central1-b"),
        ],
    )
    _, text, _, warns = skypilot.convert(source_file("gcp", path), infra.catalog.load_catalog())
    raw = tomllib.loads(text)
    machines = {r["name"]: r for r in raw["gcp_machine"]}
    assert "a4-highgpu-8g" not in machines and any(w.startswith("machine:a4-highgpu-8g: no price") for w in warns)
    assert machines["n1-standard-8"]["hourly"] == 0.38 and "spot_hourly" not in machines["n1-standard-8"]
    assert {r["gpu"]: r["hourly"] for r in raw["gcp_gpu"]}["B200"] == pytest.approx(90.216 / 8)


def test_import_writes_a_snapshot_the_catalog_loads_and_refuses_a_file_that_is_not_a_catalog(tmp_path):
    catalog = infra.catalog.load_catalog()
    result = skypilot.import_catalog(source_file("gcp"), catalog, tmp_path / "out")
    assert result.written and result.exit_code == OK and not result.error
    snap = load_snapshot(Path(result.path))
    assert snap.as_of == date.fromisoformat(SOURCE["as_of"]) and snap.region == "us-central1"
    bad = write_csv(tmp_path / "bad.csv", "name,price", ["x,1"])
    result = skypilot.import_catalog(source_file("gcp", bad), catalog, tmp_path / "bad-out")
    assert result.exit_code == USAGE and "no column" in result.error and str(bad) in result.error
    assert not (tmp_path / "bad-out").exists()


def test_command_line_dry_run_writes_nothing_and_names_the_changes(tmp_path, capsys):
    out = tmp_path / "out"
    entry = SOURCE["files"]["aws"]
    argv = [
        "--provider",
        "aws",
        "--csv",
        str(SOURCE_DIR / entry["extract"]),
        "--repo-path",
        entry["repo_path"],
        "--commit",
        SOURCE["commit"],
        "--as-of",
        "2026-08-01",
        "--dated-by",
        "a test date",
        "--out",
        str(out),
    ]
    assert skypilot.main([*argv, "--dry-run"]) == OK
    printed = capsys.readouterr()
    assert "would write" in printed.out and not out.exists()
    assert "aws/p2.xlarge: no p2.xlarge price" in printed.err
    assert skypilot.main(argv) == OK
    assert (out / "2026-08-01_skypilot-v9-aws.toml").exists()
    assert skypilot.main([*argv[:3], str(tmp_path / "missing.csv"), *argv[4:]]) == USAGE
    assert "does not exist" in capsys.readouterr().err


def test_an_out_directory_that_cannot_be_written_is_a_usage_error_not_a_traceback(tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory", encoding="utf-8")
    result = skypilot.import_catalog(source_file("aws"), infra.catalog.load_catalog(), blocker / "out")
    assert result.exit_code == USAGE and "writable --out" in result.error and not result.written
