"""Today's GPUs in the catalog: the GPU table's datasheet figures against the text they cite,
the offering rows of each source file, prices dated or a stated reason for none, `offers` for
one H100 and one A100 80 GB, and their stacks."""

from __future__ import annotations

import json
import re
import tomllib
from datetime import date
from pathlib import Path

import pytest

import infra.catalog
from analysis.cli import main
from infra import stacks as stackfiles
from infra.catalog import CatalogError, NoPrice
from infra.catalog.loader import interconnect, load_gpus
from infra.catalog.model import GPU_FIGURES


def figures(spec):
    return {name: getattr(spec, name) for name in GPU_FIGURES}


DATA = Path(infra.catalog.DATA_DIR)
GPUS = load_gpus(DATA)
RAW_GPUS = tomllib.loads((DATA / "gpus.toml").read_text(encoding="utf-8"))

# The offerings added for today's GPUs, by source file.
TODAY = {
    "aws.toml": [
        *(f"aws/g6e.{size}" for size in ("xlarge", "2xlarge", "4xlarge", "8xlarge", "12xlarge", "16xlarge")),
        "aws/g6e.24xlarge",
        "aws/g6e.48xlarge",
        "aws/p4de.24xlarge",
        "aws/p5.4xlarge",
        "aws/p5e.48xlarge",
        "aws/p5en.48xlarge",
        "aws/p6-b200.48xlarge",
    ],
    "gcp.toml": [
        *(f"gcp/a2-ultragpu-{n}g" for n in (1, 2, 4, 8)),
        *(f"gcp/a3-highgpu-{n}g" for n in (1, 2, 4)),
        "gcp/a3-megagpu-8g",
        "gcp/a3-ultragpu-8g",
        "gcp/a4-highgpu-8g",
    ],
}
NEW_IDS = [oid for ids in TODAY.values() for oid in ids]
# Slices of an 8-GPU board: no source read here says how their GPUs are linked (gcp.toml says so).
NO_INTERCONNECT_SOURCE = {"gcp/a2-ultragpu-2g", "gcp/a2-ultragpu-4g", "gcp/a3-highgpu-2g", "gcp/a3-highgpu-4g"}


def _quote(catalog, oid, market="on-demand"):
    try:
        return catalog.price(oid, market=market)
    except NoPrice:
        return None


# --- gpus.toml: every figure against its cited datasheet text -------------------------------


def _spellings(value: float, unit: str) -> set[str]:
    """How a datasheet may print a figure: 989.5, 1,979, 2.2 PFLOPS, 3.35 TB/s."""
    out = {f"{value:g}", f"{value:,g}"}
    if value >= 1000:
        big = "PFLOPS" if unit == "TFLOPS" else "TB/s"
        out.add(f"{value / 1000:g} {big}")
    return out


@pytest.mark.parametrize("model", sorted(GPUS))
def test_every_figure_is_printed_in_its_cited_source_dense_or_as_twice_with_sparsity(model):
    """A dense figure is in the cited text as is, or doubled with the datasheet's sparsity mark
    (or, for a two-GPU board, doubled as the board's figure, which spec_note says)."""
    spec = GPUS[model]
    assert spec.spec_source, model
    for name, value in figures(spec).items():
        if value is None:
            continue
        unit = GPU_FIGURES[name]
        plain = any(s in spec.spec_source for s in _spellings(value, unit))
        doubled = [s for s in _spellings(2 * value, unit) if s in spec.spec_source]
        sparse = any(re.search(re.escape(s) + r"\*", spec.spec_source) for s in doubled)
        board = bool(doubled) and "board" in spec.spec_source and "per GPU" in spec.spec_note
        assert plain or sparse or board, (model, name, value, spec.spec_source)
        if sparse and not plain:
            assert "half" in spec.spec_note, (model, name)  # says the figure was halved


def test_tensor_figures_are_dense_and_exist_only_where_the_architecture_has_them():
    """Ampere and later run FP16/BF16 at twice TF32 (both dense), so a ratio of 1 would mean one
    figure was copied with sparsity; no tensor cores before Volta, no TF32 before Ampere."""
    for model, spec in GPUS.items():
        cc = float(spec.compute_capability)
        if cc < 7.0:
            assert spec.fp16_tensor_tflops is None and spec.tf32_tflops is None, model
        if cc < 8.0:
            assert spec.tf32_tflops is None, model
        if spec.tf32_tflops and spec.fp16_tensor_tflops:
            assert 1.9 < spec.fp16_tensor_tflops / spec.tf32_tflops < 2.1, model  # B200: 4.5 / 2.2 PF
        if spec.fp16_tensor_tflops and spec.fp32_tflops:
            assert spec.fp16_tensor_tflops > spec.fp32_tflops, model
        left_out = [n for n, v in figures(spec).items() if v is None]
        if left_out:
            assert spec.spec_note, f"{model}: {left_out} left out without saying why"


def test_todays_gpus_carry_every_figure_and_skypilot_names():
    for model in ("L4", "L40S", "A100", "A100-80GB", "H100", "H200", "B200", "T4", "V100"):
        spec = GPUS[model]
        expected = {n for n in GPU_FIGURES if not (n == "tf32_tflops" and float(spec.compute_capability) < 8)}
        assert {n for n, v in figures(spec).items() if v is not None} == expected, model
    assert GPUS["A100-80GB"].memory_gb == 80 and GPUS["A100"].memory_gb == 40
    assert GPUS["B200"].compute_capability == "10.0" and GPUS["H200"].compute_capability == "9.0"
    assert GPUS["L40S"].compute_capability == "8.9"


def _write_gpus(tmp_path, text: str) -> Path:
    (tmp_path / "gpus.toml").write_text(text, encoding="utf-8")
    return tmp_path


@pytest.mark.parametrize(
    ("row", "message"),
    [
        ("memory_gb = 24\ncompute_capability = '8.9'\nmemory_bandwidth_gbs = -300\nspec_source = 'x'",
         "memory_bandwidth_gbs: -300 is not a positive number of GB/s"),
        ("memory_gb = 24\ncompute_capability = '8.9'\nfp32_tflops = '30'\nspec_source = 'x'",
         "fp32_tflops: '30' is not a positive number of TFLOPS"),
        ("memory_gb = 0\ncompute_capability = '8.9'", "memory_gb: 0 is not a positive number of GB"),
        ("memory_gb = 24\ncompute_capability = '8.9'\nfp32_tflop = 30", "unknown field 'fp32_tflop'"),
        ("memory_gb = 24\ncompute_capability = '8.9'\nfp32_tflops = 30", "need a spec_source naming the datasheet"),
        ("memory_gb = 24\ncompute_capability = 'Ada'", "compute_capability 'Ada' is not a number"),
    ],
)  # fmt: skip
def test_a_bad_gpu_row_is_an_error_naming_the_field_and_the_unit(tmp_path, row, message):
    with pytest.raises(CatalogError) as err:
        load_gpus(_write_gpus(tmp_path, f"[RTX-4090]\n{row}\n"))
    assert "gpus.toml [RTX-4090]" in str(err.value) and message in str(err.value), str(err.value)


def test_a_bad_interconnect_is_an_error_naming_the_offering():
    with pytest.raises(CatalogError, match="interconnect kind 'InfiniBand' is not one of NVLink, PCIe"):
        interconnect({"interconnect": {"kind": "InfiniBand", "source": "x"}}, "aws.toml offering #3")
    with pytest.raises(CatalogError, match="bandwidth_gbs: 0 is not a positive number of GB/s"):
        interconnect({"interconnect": {"kind": "NVLink", "bandwidth_gbs": 0, "source": "x"}}, "o")
    with pytest.raises(CatalogError, match="missing required field 'source'"):
        interconnect({"interconnect": {"kind": "PCIe"}}, "o")


# --- offerings/aws.toml and offerings/gcp.toml: today's rows ------------------------------


@pytest.mark.parametrize("file", sorted(TODAY))
def test_todays_rows_are_complete_and_sourced(file):
    catalog = infra.catalog.load_catalog()
    for oid in TODAY[file]:
        o = catalog.get(oid)
        assert o.gpu is not None and o.gpu_count >= 1 and o.vcpus and o.memory_gb, oid
        assert o.regions and o.specs_source and o.markets == ("on-demand", "spot"), oid
        assert o.retired is None, oid
        if o.gpu_count > 1:  # how the GPUs are linked, as a cited source says
            assert (o.interconnect is None) == (oid in NO_INTERCONNECT_SOURCE), oid
        if o.interconnect and o.interconnect.kind == "NVLink":
            assert o.interconnect.bandwidth_gbs and o.interconnect.generation, oid
        if o.provider == "gcp":
            assert o.zones and o.zones[0].startswith(o.regions[0]), oid


def test_every_new_offering_is_priced_with_a_date_and_source_or_says_why_not():
    catalog = infra.catalog.load_catalog()
    unpriced = set()
    for oid in NEW_IDS:
        o = catalog.get(oid)
        quote = _quote(catalog, oid)
        if quote is None:
            unpriced.add(oid)
            assert o.unpriced and len(o.unpriced) > 40, f"{oid} has no price and no reason"
            continue
        assert o.unpriced is None, f"{oid} is priced ({quote.snapshot}) but says it is not"
        assert quote.as_of and quote.source and quote.snapshot and quote.hourly_usd > 0, oid
        spot = _quote(catalog, oid, "spot")
        assert spot is not None and 0 < spot.hourly_usd <= quote.hourly_usd, oid
    assert unpriced == {"aws/p5e.48xlarge", "gcp/a4-highgpu-8g"}


def test_the_whole_machine_price_stands_in_where_the_gpu_part_is_inconsistent():
    """SkyPilot's v9 H100 and A100-80GB GPU rows have spot above on-demand: the machines are priced
    by their dated whole-machine price, not by a machine part alone; the newest one in force."""
    catalog = infra.catalog.load_catalog()
    for oid, older, older_day in (
        ("gcp/a3-highgpu-1g", "2025-03-06_cyclenerd-gcp-a3", date(2025, 3, 6)),
        ("gcp/a2-ultragpu-1g", "2024-11-07_cyclenerd-gcp-a2-ultragpu", date(2024, 11, 7)),
    ):
        quote = catalog.price(oid)
        assert quote.snapshot == "2026-07-30_cyclenerd-gcp-a2-ultragpu-a3" and not quote.components, oid
        assert catalog.price(oid, market="spot").hourly_usd < quote.hourly_usd, oid
        assert catalog.price(oid, as_of=older_day).snapshot == older, oid
    # where both parts are consistent, machine + GPUs (a3-megagpu-8g prices its GPUs as H100-MEGA)
    mega = catalog.price("gcp/a3-megagpu-8g")
    assert {c.name for c in mega.components} == {"machine:a3-megagpu-8g", "gpu:H100-MEGA x8"}
    assert mega.hourly_usd == pytest.approx(9.46006 + 82.75421, abs=1e-4)


# --- offers: one H100, one A100 80 GB -----------------------------------------------------


def _offers(capsys, gpu: str, *more: str) -> dict[str, dict]:
    assert main(["offers", "--gpu", gpu, *more, "--json"]) == 0
    return {r["id"]: r for r in json.loads(capsys.readouterr().out)}


def test_offers_for_one_h100_and_one_a100_80gb_list_todays_offerings_with_dated_prices(capsys):
    # GCP's single-GPU A3 High and A2 Ultra machines are priced whole (2026-07-30): within the
    # default --max-price-age, so listed without --stale.
    h100 = _offers(capsys, "H100:1", "--as-of", "2026-11-27")
    assert {"aws/p5.4xlarge", "gcp/a3-highgpu-1g"} <= set(h100)
    a100 = _offers(capsys, "A100-80GB:1", "--as-of", "2026-11-27")
    assert "gcp/a2-ultragpu-1g" in a100 and a100["gcp/a2-ultragpu-1g"]["as_of"] == "2026-07-30"
    for row in [*h100.values(), *a100.values()]:
        assert row["gpu_count"] == 1
        assert row["hourly_usd"] and row["as_of"] and row["source"] and row["snapshot"], row["id"]
    # a name users know from SkyPilot, and every size of the L40S family
    l40s = _offers(capsys, "L40S")
    assert {f"aws/g6e.{s}" for s in ("xlarge", "2xlarge", "4xlarge", "8xlarge", "16xlarge")} <= set(l40s)
    assert l40s["aws/g6e.48xlarge"]["interconnect"] == "PCIe" and l40s["aws/g6e.xlarge"]["interconnect"] is None


def test_offers_lists_an_unpriced_offering_last_with_its_reason(capsys):
    assert main(["offers", "--gpu", "B200"]) == 0
    text = capsys.readouterr().out
    assert "1 without a catalog price" in text and "gcp/a4-highgpu-8g: SkyPilot's v9 GCP catalog" in text
    rows = list(_offers(capsys, "B200").values())
    assert [r["id"] for r in rows][-1] == "gcp/a4-highgpu-8g"
    assert rows[-1]["hourly_usd"] is None and "$0.0" in rows[-1]["unpriced"]
    assert rows[0]["id"] == "aws/p6-b200.48xlarge" and rows[0]["hourly_usd"] == pytest.approx(113.9328)


# --- stacks --------------------------------------------------------------------------------


def test_todays_offerings_have_their_generated_stacks_within_the_naming_rules():
    catalog = infra.catalog.load_catalog()
    assert stackfiles.check(catalog, stackfiles.STACKS_DIR) == []
    shipped = set(stackfiles.stack_names())
    for oid in NEW_IDS:
        for name in catalog.get(oid).stack_names():
            assert name in shipped, name
            # GCP resource names: lowercase letters, digits and dashes, at most 63 characters,
            # and the stack name is a prefix of them
            assert re.fullmatch(r"[a-z][a-z0-9-]{0,39}", name), name


@pytest.mark.parametrize(
    "name",
    ["2025-03-06_cyclenerd-gcp-a3", "2024-11-07_cyclenerd-gcp-a2-ultragpu", "2026-07-30_cyclenerd-gcp-a2-ultragpu-a3"],
)
def test_each_whole_machine_price_is_its_cited_source_value_rounded(name):
    raw = tomllib.loads((DATA / "prices" / f"{name}.toml").read_text(encoding="utf-8"))
    assert raw["as_of"] in (name[:10],) and raw["source"] and raw["region"] == "us-central1"
    for row in raw["price"]:
        hour, spot = re.search(r"hour ([0-9.]+), hour_spot ([0-9.]+)$", row["note"]).groups()
        assert row["hourly"] == round(float(hour), 4) and row["spot_hourly"] == round(float(spot), 4), row
