"""Pricing of runs (billing windows, spot attempts, recorded vs catalog prices)
and the metrics the report computes from them (the summary by the report's
query), checked against hand-computed values."""

from __future__ import annotations

import math
from datetime import date, datetime, timezone

import pandas as pd
import pytest
from queried import summary_of, tables_of
from synthetic_results import make_result

from analysis.dataset.row import COLUMNS, result_to_row
from analysis.metrics import (
    Options,
    add_frontier,
    breakeven,
    pareto_mask,
    recommend,
    relative_to_base,
    scaling,
)
from analysis.price.billed import breakeven_days_per_month
from analysis.price.runs import price_runs
from infra.catalog import load_catalog


def priced(*results, as_of=None) -> pd.DataFrame:
    rows = [result_to_row(r, source="mem", key=f"k{i}", etag="e", schema_version_read=1) for i, r in enumerate(results)]
    return price_runs(pd.DataFrame(rows, columns=list(COLUMNS)), as_of=as_of)


def test_each_spot_attempt_is_billed_on_its_own_under_hourly_billing():
    # 2017-06: AWS still billed every started hour (per-second billing began 2017-10-02)
    r = make_result(
        "aws/p2.xlarge",
        market="spot",
        spot_hourly_usd=0.2,
        attempts=2,
        train_seconds=1200,
        boot_seconds=120,
        tail_seconds=60,
        start=datetime(2017, 6, 1, tzinfo=timezone.utc),
    )
    row = priced(r).iloc[0]
    assert row["billed_hours"] == 2.0  # two boots, each a full hour
    assert row["billed_cost_usd"] == pytest.approx(0.4)
    assert row["train_cost_usd"] == pytest.approx(0.2)  # 20 min of training: one started hour
    assert row["instance_hours"] == pytest.approx((2 * (120 + 600) + 5 + 60) / 3600)
    assert row["price_basis"] == "spot price recorded at launch"
    assert row["billing_as_of"] == "2017-06-01"


def test_spot_price_history_is_time_weighted_over_the_billed_window():
    r = make_result(
        "aws/p2.xlarge",
        market="spot",
        spot_hourly_usd=0.2,
        train_seconds=3600,
        boot_seconds=0,
        tail_seconds=0,
        spot_prices=[(0, 0.2), (1800, 0.4)],
    )
    row = priced(r).iloc[0]
    assert row["hourly_usd"] == pytest.approx(0.3)
    assert row["billed_cost_usd"] == pytest.approx(0.3)
    assert "time-weighted" in row["price_basis"]


def test_billed_covers_launch_to_shutdown_and_train_only_the_training():
    r = make_result(
        "aws/p3.2xlarge",
        hourly_usd=3.06,
        train_seconds=3600,
        boot_seconds=300,
        tail_seconds=120,
        price_source="GPUBENCH_HOURLY_USD at launch",
        price_as_of="2018-01-15",
    )
    row = priced(r).iloc[0]
    assert row["train_cost_usd"] == pytest.approx(3.06)
    assert row["billed_cost_usd"] == pytest.approx(3.06 * (3600 + 300 + 120) / 3600)
    assert (row["price_source"], row["price_as_of"]) == ("GPUBENCH_HOURLY_USD at launch", "2018-01-15")


def test_as_of_reprices_from_the_catalog_and_missing_prices_fall_back_to_it():
    recorded = make_result("aws/p2.xlarge", hourly_usd=5.0, repeat=1)
    unrecorded = make_result("aws/p2.xlarge", hourly_usd=None, repeat=2)
    df = priced(recorded, unrecorded)
    assert df["hourly_usd"].tolist() == [5.0, 0.9]
    assert "catalog" in df["price_basis"].iloc[1] and df["price_as_of"].iloc[1] == "2018-02-08"
    again = priced(recorded, as_of=date(2018, 2, 8)).iloc[0]
    assert again["hourly_usd"] == 0.9 and again["price_basis"].startswith(
        "catalog on-demand price in force on 2018-02-08"
    )


def test_unpriceable_runs_say_why_instead_of_inventing_a_cost():
    r = make_result("aws/p2.xlarge", hourly_usd=None)
    r["offering"]["id"] = None
    row = priced(r).iloc[0]
    assert math.isnan(row["billed_cost_usd"]) and "no offering id" in row["price_note"]
    early = make_result("aws/g5.xlarge", hourly_usd=None)  # no snapshot prices it on 2018-02-08
    row = priced(early).iloc[0]
    assert math.isnan(row["train_cost_usd"]) and "no on-demand price for aws/g5.xlarge" in row["price_note"]


def _lab() -> pd.DataFrame:
    """Two repeats each: K80 base, V100 x1, V100 box used with 1 and 4 GPUs, on-prem box."""
    specs = [
        ("aws/p2.xlarge", 1, 100.0, 0.9),
        ("aws/p3.2xlarge", 1, 400.0, 3.06),
        ("aws/p3.8xlarge", 4, 1200.0, 12.24),
        ("aws/p3.8xlarge", 1, 400.0, 12.24),
        ("onprem/parkopedia-4x1080ti", 4, 1000.0, None),
    ]
    results = []
    for i, (o, g, sps, h) in enumerate(specs):
        for rep, factor in enumerate((1.0, 1.1)):
            results.append(
                make_result(
                    o,
                    "resnet50",
                    gpus_used=g,
                    samples_per_second=sps * factor,
                    train_seconds=360000 / (sps * factor),
                    hourly_usd=h,
                    repeat=10 * rep + i,
                    boot_seconds=0,
                    tail_seconds=0,
                )
            )
    results.append(make_result("aws/p2.xlarge", "resnet50", status="failed", hourly_usd=0.9, repeat=99))
    return priced(*results)


def test_summary_medians_spread_and_per_dollar_figures():
    s = summary_of(_lab()).set_index(["offering_id", "gpus_used"])
    k80 = s.loc[("aws/p2.xlarge", 1)]
    assert k80["repeats"] == 2  # the failed run is not timed
    assert k80["samples_per_second"] == pytest.approx(105.0)
    assert k80["samples_per_second_spread"] == pytest.approx(10 / 105)
    assert k80["train_hours"] == pytest.approx((1.0 + 1 / 1.1) / 2)
    assert k80["samples_per_usd"] == pytest.approx(105 * 3600 / 0.9)
    assert k80["imagenet_hours"] == pytest.approx(153_600_000 / 105 / 3600)
    assert k80["imagenet_cost_usd"] == pytest.approx(153_600_000 / 105 / 3600 * 0.9)


def test_relative_to_the_base_and_a_missing_base():
    s = relative_to_base(summary_of(_lab()), "aws/p2.xlarge").set_index(["offering_id", "gpus_used"])
    v100 = s.loc[("aws/p3.2xlarge", 1)]
    assert v100["rel_time"] == pytest.approx(0.25)
    # per-second billing rounds 818.18 s up to 819 s: within 0.1 %
    assert v100["rel_train_cost"] == pytest.approx(0.25 * 3.06 / 0.9, rel=1e-3)
    other = relative_to_base(summary_of(_lab()), "gcp/n1-standard-4+1xk80")
    assert other["rel_time"].isna().all()
    assert other["relative_note"].iloc[0] == "base gcp/n1-standard-4+1xk80 has no completed resnet50 run"


def test_scaling_efficiency_against_the_same_machine_with_one_gpu():
    sc = scaling(summary_of(_lab()))
    (row,) = sc.to_dict("records")
    assert (row["offering_id"], row["gpus"]) == ("aws/p3.8xlarge", 4)
    assert row["speedup"] == pytest.approx(3.0) and row["efficiency"] == pytest.approx(0.75)
    assert row["reference"] == "same offering, 1 GPU"


def test_other_batch_sizes_and_precisions_are_not_pooled_as_repeats():
    """resnet50 at batch 32 and at batch 64 (seed 004 measures 16/32/64) are two
    configurations: each has its own median, base and 1-GPU scaling reference."""
    runs = []
    for o, g, sps, batch, rep in (
        ("aws/p3.8xlarge", 1, 100.0, 32, 1),
        ("aws/p3.8xlarge", 1, 300.0, 64, 2),
        ("aws/p3.8xlarge", 4, 1080.0, 64, 3),
        ("aws/p2.xlarge", 1, 50.0, 64, 4),
    ):
        r = make_result(
            o,
            "resnet50",
            gpus_used=g,
            samples_per_second=sps,
            train_seconds=360000 / sps,
            hourly_usd=12.24 if o == "aws/p3.8xlarge" else 0.9,
            repeat=rep,
            boot_seconds=0,
            tail_seconds=0,
        )
        r["benchmark"]["per_gpu_batch_size"] = batch
        runs.append(r)
    s = summary_of(priced(*runs))
    one = s[(s["offering_id"] == "aws/p3.8xlarge") & (s["gpus_used"] == 1)].set_index("per_gpu_batch_size")
    assert one["repeats"].tolist() == [1, 1]
    assert one.loc[32, "samples_per_second"] == 100.0 and one.loc[64, "samples_per_second"] == 300.0
    (row,) = scaling(s).to_dict("records")
    assert row["speedup"] == pytest.approx(1080 / 300)  # against the 1-GPU run at batch 64, not 32
    rel = relative_to_base(s, "aws/p2.xlarge").set_index(["offering_id", "gpus_used", "per_gpu_batch_size"])
    rel = rel.loc["aws/p3.8xlarge"]
    assert rel.loc[(1, 64), "rel_time"] == pytest.approx(50 / 300)
    assert math.isnan(rel.loc[(1, 32), "rel_time"]) and "batch 32" in rel.loc[(1, 32), "relative_note"]


def test_breakeven_matches_the_cost_model():
    be = breakeven(summary_of(_lab()))
    spec = load_catalog().get("onprem/parkopedia-4x1080ti").onprem
    row = be[(be["cloud"] == "aws/p3.2xlarge")].iloc[0]
    assert row["breakeven_days_per_month"] == pytest.approx(breakeven_days_per_month(spec, 1050.0, 3.06, 420.0))
    assert set(be["cloud"]) == {"aws/p2.xlarge", "aws/p3.2xlarge", "aws/p3.8xlarge"}


def test_breakeven_beyond_a_month_is_called_never_not_a_day_count():
    """A slow box against a cheap, fast cloud: the formula's 'days per month' exceeds 31."""
    lab = _lab()
    box = lab["offering_id"] == "onprem/parkopedia-4x1080ti"
    lab.loc[box, "samples_per_second"] = lab.loc[box, "samples_per_second"] / 40
    be = breakeven(summary_of(lab))
    row = be[be["cloud"] == "aws/p2.xlarge"].iloc[0]
    assert row["breakeven_days_per_month"] > 31 and row["note"].startswith("never within a month")


def test_pareto_mask():
    x = pd.Series([1.0, 2.0, 3.0, 2.0, float("nan")])
    y = pd.Series([5.0, 2.0, 1.0, 3.0, 0.1])
    assert pareto_mask(x, y).tolist() == [True, True, True, False, False]


def test_recommendations_cheapest_fastest_deadline_and_budget():
    s = add_frontier(summary_of(_lab()))
    (rec,) = recommend(s, Options(deadline_hours=0.3, budget_usd=1.0))
    assert rec["cheapest"]["offering_id"] == "onprem/parkopedia-4x1080ti"
    assert rec["fastest"]["offering_id"] == "aws/p3.8xlarge"
    assert rec["under_deadline"]["hours"] <= 0.3 and rec["under_budget"]["cost_usd"] <= 1.0
    (none,) = recommend(s, Options(deadline_hours=0.01, budget_usd=0.001))
    assert none["under_deadline"] == {"offering_id": None, "why": "no offering trains resnet50 within 0.01 h"}
    assert none["under_budget"]["why"] == "no offering trains resnet50 for at most $0.001"
    (by_train,) = recommend(s, Options(cost_basis="train"))
    assert by_train["cost_basis"] == "train"


def test_analyse_of_nothing_is_empty_not_an_error():
    empty = price_runs(pd.DataFrame(columns=list(COLUMNS)))
    got = tables_of(empty, Options())
    assert got["summary"].empty and got["scaling"].empty and got["breakeven"].empty and got["recommendations"] == []


def test_keras_backends_are_compared_side_by_side_not_pooled():
    """The same benchmark on the same offering under tensorflow and jax: two rows,
    each with its own median (seed 002 compared TensorFlow and CNTK under Keras)."""
    runs = []
    for backend, sps, rep in (("tensorflow", 100.0, 1), ("tensorflow", 110.0, 2), ("jax", 150.0, 3)):
        r = make_result(
            "aws/p3.8xlarge",
            "resnet50",
            gpus_used=1,
            samples_per_second=sps,
            train_seconds=360000 / sps,
            hourly_usd=12.24,
            repeat=rep,
            boot_seconds=0,
            tail_seconds=0,
        )
        r["software"]["backend"] = backend
        runs.append(r)
    old = make_result("aws/p3.8xlarge", "resnet50", gpus_used=1, samples_per_second=120.0, repeat=4, hourly_usd=12.24)
    old["software"].pop("backend", None)  # results from before --backend: tensorflow
    table = priced(*runs, old)
    assert table["backend"].tolist() == ["tensorflow", "tensorflow", "jax", "tensorflow"]
    s = summary_of(table).set_index("backend")
    assert s.loc["tensorflow", "repeats"] == 3 and s.loc["jax", "repeats"] == 1
    assert s.loc["jax", "samples_per_second"] == 150.0 and s.loc["tensorflow", "samples_per_second"] == 110.0
