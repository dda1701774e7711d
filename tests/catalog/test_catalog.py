"""The offering catalog: ids, stack names, image generations, as-of price
selection, GCP composition and the errors a user sees."""

from __future__ import annotations

import shutil
import warnings
from datetime import date

import pytest

from infra.catalog import CatalogError, NoPrice, RetiredOfferingWarning, UnknownOffering, load_catalog
from infra.catalog.loader import DATA_DIR


@pytest.fixture(scope="module")
def cat():
    return load_catalog()


def test_issue_offerings_are_all_present(cat):
    aws = {o.instance_type for o in cat.offerings("aws")}
    for itype in [
        "p2.xlarge",
        "p2.8xlarge",
        "p2.16xlarge",
        "g3.4xlarge",
        "g3.8xlarge",
        "g3.16xlarge",
        "p3.2xlarge",
        "p3.8xlarge",
        "p3.16xlarge",
        "p4d.24xlarge",
        "p5.48xlarge",
    ]:
        assert itype in aws
    assert {"T4", "A10G", "L4"} <= {o.gpu_model for o in cat.offerings("aws")}
    gcp = {(o.gpu_model, o.gpu_count) for o in cat.offerings("gcp")}
    for gpu in ("K80", "V100"):
        assert {(gpu, n) for n in (1, 2, 4, 8)} <= gcp
    assert {("P100", n) for n in (1, 2, 4)} <= gcp  # GCE attaches at most 4 P100 to an N1 VM
    assert {("T4", n) for n in (1, 2, 4)} <= gcp
    assert {"A100", "L4", "H100"} <= {g for g, _ in gcp}
    for oid in [
        "hetzner/ex51-ssd-gpu",
        "leadergpu/2xgtx1080",
        "leadergpu/2xp100",
        "softlayer/bm-2xm60",
        "softlayer/bm-4xk80",
        "paperspace/p6000",
        "paperspace/v100",
        "vastai/gtx1070ti",
        "onprem/parkopedia-4x1080ti",
    ]:
        assert cat.get(oid).gpu_count >= 1


@pytest.mark.parametrize(
    "oid, market, stack",
    [
        ("aws/p3.8xlarge", "on-demand", "aws-p3-8x"),
        ("aws/p3.8xlarge", "spot", "aws-p3-8x-spot"),
        ("aws/p2.xlarge", "on-demand", "aws-p2-1x"),
        ("aws/g4dn.12xlarge", "spot", "aws-g4dn-12x-spot"),
        ("gcp/n1-standard-8+1xv100", "on-demand", "gcp-v100-1x"),
        ("gcp/n1-standard-64+8xv100", "spot", "gcp-v100-8x-spot"),
        ("gcp/a2-highgpu-1g", "on-demand", "gcp-a100-1x"),
        ("gcp/n1-standard-1+1xk80", "on-demand", "gcp-k80-1x-std1"),
    ],
)
def test_stack_names_follow_the_contract(cat, oid, market, stack):
    assert cat.get(oid).stack_name(market) == stack
    assert cat.cloud_stacks()[stack] == (cat.get(oid), market)


def test_stack_names_are_unique_and_only_for_clouds(cat):
    stacks = cat.cloud_stacks()
    assert len(stacks) == sum(len(o.markets) for o in cat.offerings() if o.is_cloud)
    assert all(o.provider in ("aws", "gcp") for o, _ in stacks.values())
    with pytest.raises(ValueError, match="not sold on the 'spot' market"):
        cat.get("hetzner/ex51-ssd-gpu").stack_name("spot")


@pytest.mark.parametrize(
    "gpu, generation",
    [
        ("K80", "cuda11-legacy"),
        ("M60", "cuda12"),
        ("P100", "cuda12"),
        ("V100", "cuda12"),
        ("T4", "cuda13"),
        ("H100", "cuda13"),
    ],
)
def test_image_generation_follows_compute_capability(cat, gpu, generation):
    assert {o.image_generation for o in cat.offerings(gpu=gpu)} == {generation}


def test_gcp_offerings_keep_accelerator_apart_from_machine_type(cat):
    v100 = cat.get("gcp/n1-standard-8+1xv100")
    assert (v100.instance_type, v100.accelerator_type, v100.accelerator_count) == (
        "n1-standard-8",
        "nvidia-tesla-v100",
        1,
    )
    a100 = cat.get("gcp/a2-highgpu-1g")
    assert a100.accelerator_type is None and a100.accelerator_count == 0 and a100.gpu_count == 1
    assert v100.zones[0] == "us-central1-a" and "us-central1" in v100.regions


def test_unknown_offering_names_the_closest_ids(cat):
    with pytest.raises(UnknownOffering) as err:
        cat.get("p3.8xlarge")
    assert err.value.suggestions[0] == "aws/p3.8xlarge"
    assert "aws/p3.8xlarge" in str(err.value)
    with pytest.raises(UnknownOffering, match="aws/p3.2xlarge"):
        cat.get("aws/p3.2xlarg")


def test_as_of_selects_the_snapshot_in_force(cat):
    assert cat.price("aws/p2.xlarge", as_of=date(2018, 2, 8)).snapshot == "2018-02-08_seed000-rare"
    # seed 004 gives the same on-demand price later, and a spot price
    spot = cat.price("aws/p2.xlarge", as_of=date(2018, 7, 1), market="spot")
    assert (spot.hourly_usd, spot.snapshot) == (0.28, "2018-06-01_seed004-parkopedia")
    # seed 003's late-October-2018 spot figure replaces it from its own date
    assert cat.price("aws/p2.8xlarge", as_of=date(2018, 12, 1), market="spot").hourly_usd == 4.05
    assert cat.price("aws/p2.8xlarge", as_of=date(2018, 7, 1), market="spot").hourly_usd == 2.71


def test_as_of_before_the_first_snapshot_is_an_error_naming_the_first_date(cat):
    with pytest.raises(NoPrice, match="first snapshot pricing it is 2018-02-08"):
        cat.price("aws/p2.xlarge", as_of=date(2016, 1, 1))


def test_newest_snapshot_is_the_default(cat):
    def newest(key):
        return max(r.as_of for s in cat.prices.snapshots for r in s.rows if (r.key, r.market) == (key, "on-demand"))

    assert cat.price("aws/g4dn.xlarge").as_of == newest("aws/g4dn.xlarge")
    with pytest.warns(RetiredOfferingWarning):  # P3 retired 2025-12-20: still priced, with a warning
        assert cat.price("aws/p3.2xlarge").as_of == newest("aws/p3.2xlarge")


def test_gcp_price_composes_machine_type_and_gpus(cat):
    # seed 002 quotes only the totals: $0.4975 (K80 + n1-standard-1), $1.5075 (P100 + n1-standard-1)
    k80 = cat.price("gcp/n1-standard-1+1xk80", as_of=date(2017, 11, 28))
    p100 = cat.price("gcp/n1-standard-1+1xp100", as_of=date(2017, 11, 28))
    assert k80.hourly_usd == pytest.approx(0.4975)
    assert p100.hourly_usd == pytest.approx(1.5075)
    assert [c.name for c in k80.components] == ["machine:n1-standard-1", "gpu:K80"]
    # seed 004, section 2.3: 0.38+2.48 = 2.86, 3.04+8*2.48 = 22.88, 1.52+8*0.45 = 5.12
    day = date(2018, 7, 1)
    assert cat.price("gcp/n1-standard-8+1xv100", as_of=day).hourly_usd == pytest.approx(2.86)
    assert cat.price("gcp/n1-standard-64+8xv100", as_of=day).hourly_usd == pytest.approx(22.88)
    eight_k80 = cat.price("gcp/n1-standard-32+8xk80", as_of=day)
    assert eight_k80.hourly_usd == pytest.approx(5.12)
    assert {c.name: c.quantity for c in eight_k80.components} == {"machine:n1-standard-32": 1, "gpu:K80 x8": 8}


def test_composition_takes_each_component_from_its_own_snapshot(cat):
    # n1-standard-4 is priced by seed 000 (Feb 2018); the K80 by seed 004 (Jun 2018)
    quote = cat.price("gcp/n1-standard-4+1xk80", as_of=date(2018, 7, 1))
    dates = {c.name: c.as_of for c in quote.components}
    assert dates == {"machine:n1-standard-4": date(2018, 2, 8), "gpu:K80": date(2018, 6, 1)}
    assert quote.as_of == date(2018, 6, 1)


def test_spot_on_an_offering_without_spot_is_an_error(cat):
    with pytest.raises(NoPrice, match="no spot market"):
        cat.price("hetzner/ex51-ssd-gpu", market="spot")


def test_retired_offering_warns_without_as_of_and_refuses_a_later_date(cat):
    with pytest.warns(RetiredOfferingWarning, match="retired on 2024-05-01"):
        cat.price("gcp/n1-standard-4+1xk80")
    with pytest.raises(NoPrice, match="retired on 2024-05-01"):
        cat.price("gcp/n1-standard-4+1xk80", as_of=date(2025, 1, 1))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert cat.price("gcp/n1-standard-4+1xk80", as_of=date(2018, 7, 1)).hourly_usd == pytest.approx(0.64)


def test_billing_terms_change_on_their_dates(cat):
    assert cat.billing_terms("aws/p2.xlarge", date(2017, 10, 1)).increment_seconds == 3600
    assert cat.billing_terms("aws/p2.xlarge", date(2017, 10, 2)).increment_seconds == 1
    old_gcp = cat.billing_terms("gcp/n1-standard-4+1xk80", date(2017, 9, 25))
    assert (old_gcp.increment_seconds, old_gcp.minimum_seconds) == (60, 600)


def _copy_data(tmp_path):
    target = tmp_path / "data"
    shutil.copytree(DATA_DIR, target)
    return target


def test_malformed_data_names_the_file(tmp_path):
    data = _copy_data(tmp_path)
    (data / "prices" / "2020-01-01_broken.toml").write_text("as_of = [unclosed\n")
    with pytest.raises(CatalogError, match="2020-01-01_broken.toml: not valid TOML"):
        load_catalog(data)


def test_unknown_gpu_in_an_offering_is_named(tmp_path):
    data = _copy_data(tmp_path)
    aws = data / "offerings" / "aws.toml"
    aws.write_text(aws.read_text().replace('gpu = "K80"', 'gpu = "K8O"', 1))
    with pytest.raises(CatalogError, match="gpu 'K8O' is not in gpus.toml"):
        load_catalog(data)


def test_price_row_without_a_price_is_named(tmp_path):
    data = _copy_data(tmp_path)
    (data / "prices" / "2020-01-01_empty.toml").write_text(
        'as_of = "2020-01-01"\nsource = "test"\n[[price]]\noffering = "aws/p2.xlarge"\n'
    )
    with pytest.raises(CatalogError, match=r"2020-01-01_empty.toml \[\[price\]\] #1: aws/p2.xlarge has no price"):
        load_catalog(data)


def test_every_price_row_has_a_source_and_date(cat):
    for snap in cat.prices.snapshots:
        assert snap.source.strip(), snap.name
        assert snap.name.startswith(snap.as_of.isoformat()), f"{snap.name}: file name must start with its as_of date"
        for row in snap.rows:
            assert row.source.strip() and row.as_of <= date.today()


def test_non_cloud_offerings_are_named_after_their_id(cat):
    assert cat.get("local/this-machine").stack_name() == "local-this-machine"
    assert cat.get("onprem/parkopedia-4x1080ti").stack_name() == "onprem-parkopedia-4x1080ti"
