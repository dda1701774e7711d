"""The studies' published figures shipped as reference data: copied as
printed, derived ones labelled and computed from the printed numbers, every
figure with its source and date; and the report section that uses them."""

from __future__ import annotations

import pandas as pd
import pytest
from queried import assumed_price_note, query_of, section

from analysis.reference.studies import reference_figures


def _by(study, benchmark):
    return [f for f in reference_figures() if f.study == study and f.benchmark == benchmark]


def test_seed000_table1_rows_and_derived_tweets_per_second():
    rows = _by("seed 000", "bilstm-sentiment")
    assert len(rows) == 13  # Table 1 has 13 platform rows
    k80 = next(f for f in rows if f.label.startswith("AWS p2.xlarge"))
    assert k80.train_hours == 3.62 and k80.cost_usd == 3.3 and k80.gpu == "Tesla K80"
    # 4 epochs x 90% of 1,578,627 tweets over the printed 3.62 h
    assert k80.workload_samples == 4 * 1_420_764
    assert k80.value == pytest.approx(4 * 1_420_764 / (3.62 * 3600), abs=0.05)
    assert all(f.basis.startswith("derived: ") for f in rows)
    one_gpu = [f for f in rows if f.gpus_used == 1 and f.gpu_count == 2]
    assert {f.train_hours for f in one_gpu} == {2.49, 1.86}  # the "**" rows: one of two GPUs used


def test_seed004_1080ti_table_measured_and_the_4x_estimate_labelled():
    rows = _by("seed 004", "resnet50")
    one = {f.batch_size: f.value for f in rows if f.gpu_count == 1}
    four = {f.batch_size: f.value for f in rows if f.gpu_count == 4}
    assert one == {16: 213, 32: 250, 64: 273} and four == {16: 649, 32: 825, 64: 947}
    assert all(f.basis == "measured" for f in rows if f.gpu_count == 1)
    assert all(f.basis.startswith("estimated by the study") for f in rows if f.gpu_count == 4)
    assert {f.precision for f in rows} == {"fp16"}
    assert len(_by("seed 004", "inception3")) == len(_by("seed 004", "vgg16")) == 6


def test_every_figure_has_source_url_and_date():
    for f in reference_figures():
        assert f.source and "https://" in f.source, f
        assert f.published and f.date_note, f
        assert f.value > 0 and f.unit in ("tweets/s", "images/s")


def _runs(**over):
    row = {
        "run_id": "r1",
        "status": "completed",
        "benchmark": "resnet50",
        "offering_id": "local/this-machine",
        "market": "on-demand",
        "gpus_used": 0,
        "per_gpu_batch_size": 16,
        "precision": "fp32",
        "data": "synthetic",
        "samples_per_second": 4.0,
        "hourly_usd": 0.1,
        "price_source": "assumed: x",
        "device": "CPU",
    }
    row.update(over)
    return pd.DataFrame([row])


def test_section_compares_at_the_same_batch_and_says_what_differs():
    html = section(_runs())
    assert "Reference: published measurements" in html and "<img" in html
    assert "53.2&times;" in html  # 213 / 4.0, the 1080 Ti at the same batch 16
    assert "(other batch)" in html  # batch 32/64 figures are listed but flagged
    assert "fp16" in html and "tf_cnn_benchmarks" in html


def test_section_without_comparable_runs_says_so():
    html = section(_runs(benchmark="mnist-mlp"))
    assert "nothing to put beside the published figures" in html and "<img" not in html
    with query_of(_runs(status="failed")) as q:
        assert q.measured().empty


def test_assumed_price_note_only_for_local_offerings():
    local = pd.DataFrame(
        [
            {
                "offering_kind": "local",
                "offering_id": "local/this-machine",
                "hourly_usd": 0.1,
                "price_source": "assumed: gpubench demo default",
            }
        ]
    )
    assert "Assumed price." in assumed_price_note(local) and "USD 0.10/h" in assumed_price_note(local)
    cloud = local.assign(offering_kind="cloud", offering_id="aws/p2.xlarge")
    assert assumed_price_note(cloud) == ""
