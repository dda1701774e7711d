"""Your own hardware: offerings, prices, billing rules and GPUs from catalog
directories you own ($GPUBENCH_CATALOG_DIRS, ./catalog), merged into the
shipped catalog with errors naming the file; an SSH stack and `analysis cost`
use them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from infra.catalog import CATALOG_DIRS_ENV, CatalogError, load_catalog, user_catalog_dirs
from infra.ssh.config import parse_ssh_config

REPO = Path(__file__).resolve().parents[2]

GPUS = """
[RTX-4090]
memory_gb = 24
compute_capability = "8.9"
architecture = "Ada Lovelace"
"""
BILLING = """
[[neocloud-per-second]]
since = "2025-01-01"
kind = "metered"
increment_seconds = 1
minimum_seconds = 60
source = "neocloud.example terms of service, 2026-01-15: per second, 1-minute minimum"
"""
OFFERINGS = """
[[offering]]
provider = "home"
kind = "onprem"
instance_type = "rtx4090-box"
gpu = "RTX-4090"
gpu_count = 1
vcpus = 16
memory_gb = 64
regions = ["office"]
billing = "onprem"
purchase_usd = 3600.0
lifetime_months = 36
power_kw = 0.6
electricity_usd_per_kwh = 0.30
days_per_month = 20
as_of = "2026-01-10"
specs_source = "my invoice, 2026-01-10"

[[offering]]
provider = "neocloud"
kind = "dedicated"
instance_type = "1x-rtx4090"
gpu = "RTX-4090"
gpu_count = 1
regions = ["eu"]
billing = "neocloud-per-second"
specs_source = "neocloud.example/pricing, 2026-01-15"
"""
PRICES = """
as_of = "2026-01-15"
source = "neocloud.example/pricing, read 2026-01-15"

[[price]]
offering = "neocloud/1x-rtx4090"
hourly = 0.69
"""


def make_catalog_dir(root: Path, offerings: str = OFFERINGS, **files: str) -> Path:
    (root / "offerings").mkdir(parents=True)
    (root / "prices").mkdir()
    (root / "gpus.toml").write_text(files.get("gpus", GPUS))
    (root / "billing.toml").write_text(files.get("billing", BILLING))
    (root / "offerings" / "mine.toml").write_text(offerings)
    (root / "prices" / "2026-01-15_neocloud.toml").write_text(files.get("prices", PRICES))
    return root


@pytest.fixture
def user_dir(tmp_path, monkeypatch):
    d = make_catalog_dir(tmp_path / "my-catalog")
    monkeypatch.setenv(CATALOG_DIRS_ENV, str(d))
    load_catalog.cache_clear()
    yield d
    load_catalog.cache_clear()


def test_user_offerings_prices_and_billing_merge_into_the_catalog(user_dir):
    cat = load_catalog()
    box = cat.get("home/rtx4090-box")
    assert box.gpu.model == "RTX-4090" and box.gpu.memory_gb == 24 and box.onprem.purchase_usd == 3600
    quote = cat.price("neocloud/1x-rtx4090")
    assert quote.hourly_usd == 0.69 and quote.source == "neocloud.example/pricing, read 2026-01-15"
    assert cat.billing_terms("neocloud/1x-rtx4090").minimum_seconds == 60
    assert cat.get("aws/p3.8xlarge").gpu_count == 4  # the shipped rows are all still there
    from analysis.price.runs import onprem_hourly

    # an owned box has no price list: 3600 / 36 months / (20 days x 24 h) + 0.6 kW x $0.30
    assert onprem_hourly(box.onprem) == pytest.approx(3600 / 36 / 480 + 0.18)


def test_ssh_stack_and_analysis_cost_use_a_user_offering(user_dir, tmp_path):
    raw = {
        "gpubench:offering": "home/rtx4090-box",
        "gpubench:host": "gpu-box.example.internal",
        "gpubench:results": "file:///srv/results",
        "gpubench:benchmark": "mnist-mlp",
    }
    cfg = parse_ssh_config(raw, "ssh-home-4090", load_catalog())
    assert cfg.gpu_model == "RTX-4090" and cfg.gpu_count == 1 and cfg.expect_gpu
    assert cfg.offering_options["offering"] == "home/rtx4090-box"
    assert cfg.offering_options["offering_kind"] == "onprem"  # priced by amortisation at report time
    rented = parse_ssh_config({**raw, "gpubench:offering": "neocloud/1x-rtx4090"}, "ssh-neo-4090", load_catalog())
    assert float(rented.offering_options["hourly_usd"]) == 0.69
    assert rented.offering_options["price_source"] == "neocloud.example/pricing, read 2026-01-15"

    env = {**os.environ, CATALOG_DIRS_ENV: str(user_dir), "PYTHONPATH": str(REPO)}
    out = subprocess.run(
        [sys.executable, "-m", "analysis", "cost", "neocloud/1x-rtx4090", "--hours", "0.01", "--json"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    cost = json.loads(out.stdout)
    assert cost["offering"] == "neocloud/1x-rtx4090"
    assert cost["billed_hours"] == pytest.approx(60 / 3600)  # 36 s billed as the rule's 60 s minimum
    assert cost["cost_usd"] == pytest.approx(0.69 * 60 / 3600) and cost["billing_source"].startswith("neocloud")
    # the same directory as ./catalog of a project, with no environment variable
    (tmp_path / "proj").mkdir()
    make_catalog_dir(tmp_path / "proj" / "catalog")
    env.pop(CATALOG_DIRS_ENV)
    out = subprocess.run(
        [sys.executable, "-m", "analysis", "cost", "home/rtx4090-box", "--hours", "10", "--json"],
        cwd=tmp_path / "proj",
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    cost = json.loads(out.stdout)
    assert cost["offering"] == "home/rtx4090-box"
    assert cost["cost_usd"] == pytest.approx(10 * (3600 / 36 / 480 + 0.18))


@pytest.mark.parametrize(
    "change, fragments",
    [
        (
            {
                "offerings": OFFERINGS.replace('provider = "neocloud"', 'provider = "hetzner"').replace(
                    '"1x-rtx4090"', '"ex51-ssd-gpu"'
                )
            },
            ["offering id 'hetzner/ex51-ssd-gpu'", "mine.toml", "already defined in offerings/dedicated.toml"],
        ),
        (
            {"offerings": OFFERINGS.replace('instance_type = "rtx4090-box"\n', "")},
            ["mine.toml offering #1", "'instance_type'"],
        ),
        (
            {"offerings": OFFERINGS.replace('gpu = "RTX-4090"', 'gpu = "RTX-5090"', 1)},
            ["mine.toml offering #1", "RTX-5090"],
        ),
        ({"billing": BILLING.replace("neocloud-per-second", "aws")}, ["billing.toml [[aws]]", "already defined"]),
        ({"gpus": "[K80]\nmemory_gb = 48\ncompute_capability = '3.7'\n"}, ["gpus.toml [K80]", "other specs"]),
        ({"prices": PRICES.replace("hourly = 0.69", "")}, ["2026-01-15_neocloud.toml [[price]] #1", "has no price"]),
        (
            {
                "offerings": OFFERINGS
                + "\n[[offering]]\nprovider = 'x'\nkind = 'dedicated'\ninstance_type = 'y'\nbilling = 'nope'\n"
            },
            ["x/y", "'nope'", "billing.toml in your catalog"],
        ),
    ],
)
def test_bad_user_rows_name_the_file(tmp_path, monkeypatch, change, fragments):
    d = make_catalog_dir(tmp_path / "bad", **change)
    monkeypatch.setenv(CATALOG_DIRS_ENV, str(d))
    load_catalog.cache_clear()
    try:
        with pytest.raises(CatalogError) as exc:
            load_catalog()
    finally:
        load_catalog.cache_clear()
    for fragment in fragments:
        assert fragment in str(exc.value)
    assert str(d) in str(exc.value) or "x/y" in str(exc.value)


def test_missing_directory_and_project_catalog(tmp_path):
    with pytest.raises(CatalogError, match="nowhere is not a directory"):
        user_catalog_dirs({CATALOG_DIRS_ENV: str(tmp_path / "nowhere")}, cwd=tmp_path)
    assert user_catalog_dirs({}, cwd=tmp_path) == ()
    (tmp_path / "catalog").mkdir()
    a = tmp_path / "a"
    a.mkdir()
    assert user_catalog_dirs({CATALOG_DIRS_ENV: f"{a}{os.pathsep}"}, cwd=tmp_path) == (a, tmp_path / "catalog")


def test_a_user_cloud_row_joins_the_cloud_matrix(tmp_path, monkeypatch):
    d = tmp_path / "cat"
    (d / "offerings").mkdir(parents=True)
    (d / "prices").mkdir()
    (d / "offerings" / "aws.toml").write_text(
        'billing = "aws"\nmarkets = ["on-demand", "spot"]\nregions = ["us-east-1"]\n'
        'specs_source = "aws.amazon.com/ec2/instance-types/g6 (read 2026-01-15)"\n\n'
        '[[offering]]\ninstance_type = "g6.2xlarge"\ngpu = "L4"\ngpu_count = 1\nvcpus = 8\nmemory_gb = 32\n'
    )
    (d / "prices" / "2026-01-15_my-aws.toml").write_text(
        'as_of = "2026-01-15"\nsource = "aws.amazon.com/ec2/pricing/on-demand (read 2026-01-15)"\n\n'
        '[[price]]\noffering = "aws/g6.2xlarge"\nhourly = 0.9776\n'
    )
    monkeypatch.setenv(CATALOG_DIRS_ENV, str(d))
    load_catalog.cache_clear()
    try:
        cat = load_catalog()
        assert {"aws-g6-2x", "aws-g6-2x-spot"} <= set(cat.cloud_stacks())  # the parser of aws.toml read it
        assert cat.price("aws/g6.2xlarge").hourly_usd == 0.9776
    finally:
        load_catalog.cache_clear()
