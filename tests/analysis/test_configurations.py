"""One configuration per row, each run at its own price, units per benchmark,
recommendations that name what they skipped, and no NaN getting in: each
checked against hand-computed values."""

from __future__ import annotations

import pandas as pd
import pytest
from queried import summary_of, tables_of
from synthetic_results import make_result

from analysis.dataset.row import COLUMNS, result_to_row
from analysis.metrics import Options, breakeven, default_base, recommend, relative_to_base
from analysis.price.runs import price_runs
from analysis.report.page import with_unit_columns
from payload.benchmarks import REGISTRY
from payload.benchmarks.base import units_of


def priced(*results) -> pd.DataFrame:
    rows = [result_to_row(r, source="mem", key=f"k{i}", etag="e", schema_version_read=1) for i, r in enumerate(results)]
    return price_runs(pd.DataFrame(rows, columns=list(COLUMNS)))


def mnist(offering="aws/p2.xlarge", *, epochs, samples, train_seconds, hourly=0.9, repeat=0, sps=1000.0, **kw):
    r = make_result(
        offering,
        "mnist-mlp",
        train_seconds=train_seconds,
        samples_per_second=sps,
        hourly_usd=hourly,
        repeat=repeat,
        boot_seconds=0,
        tail_seconds=0,
        **kw,
    )
    r["benchmark"].update(
        kind="epochs",
        per_gpu_batch_size=128,
        params={**REGISTRY["mnist-mlp"].defaults, "epochs": epochs, "samples": samples, "batch_size": 128},
    )
    return r


def test_two_workloads_never_share_a_row_and_each_is_named():
    """The issue's case: a 2-epoch 12,000-sample run and a 1-epoch 1,000-sample
    run of one benchmark on one offering are two rows, not one 199 % spread."""
    runs = priced(
        mnist(epochs=2, samples=12000, train_seconds=600, repeat=1),
        mnist(epochs=2, samples=12000, train_seconds=660, repeat=2),
        mnist(epochs=1, samples=1000, train_seconds=30, repeat=3),
    )
    assert runs["workload"].nunique() == 2
    s = summary_of(runs).set_index("workload_label")
    assert sorted(s.index) == ["1 ep x 1,000 samples, batch 128, fp32", "2 ep x 12,000 samples, batch 128, fp32"]
    big = s.loc["2 ep x 12,000 samples, batch 128, fp32"]
    assert big["repeats"] == 2
    assert big["train_hours"] == pytest.approx(630 / 3600)
    assert big["train_hours_spread"] == pytest.approx(60 / 630)
    small = s.loc["1 ep x 1,000 samples, batch 128, fp32"]
    assert small["repeats"] == 1 and small["train_hours"] == pytest.approx(30 / 3600)
    # recommendations are per configuration too
    recs = recommend(summary_of(runs), Options())
    assert sorted(r["workload_label"] for r in recs) == sorted(s.index)


def test_a_parameter_off_its_default_is_named_and_a_different_workload():
    a, b = mnist(epochs=1, samples=1000, train_seconds=30), mnist(epochs=1, samples=1000, train_seconds=30, repeat=1)
    b["benchmark"]["params"]["hidden"] = 256
    rows = priced(a, b)
    assert rows["workload"].nunique() == 2
    assert set(rows["workload_label"]) == {
        "1 ep x 1,000 samples, batch 128, fp32",
        "1 ep x 1,000 samples, batch 128, fp32, hidden 256",
    }


def test_remembered_workloads_are_never_shared_and_keep_the_published_key():
    """workload() remembers (key, label) per spec: specs that differ only in a
    value's type, a parameter, a missing field or the backend each keep their
    own, a remembered answer is the computed one, and the key is still the
    sha256 of the sorted JSON spec that rows cached in manifests carry."""
    import hashlib
    import json

    from analysis.dataset import row as table

    base = {"name": "mnist-mlp", "kind": "epochs", "precision": "fp32", "per_gpu_batch_size": 128}
    variants = [
        {"params": {"epochs": 1, "samples": 1000}},
        {"params": {"epochs": 1, "samples": 1000.0}},
        {"params": {"epochs": True, "samples": 1000}},
        {"params": {"epochs": 1, "samples": 1000, "hidden": 256}},
        {"params": {"epochs": 1, "samples": 1000}, "precision": None},
        {"params": {"epochs": 1, "samples": None}},  # orjson writes NaN as null too: the two must not meet
        {"params": {"epochs": 1, "samples": float("nan")}},
        {"params": {"epochs": 1, "samples": 2**70}},  # past orjson's integers
        {"params": {"epochs": 1, "samples": 1000}, "backend": "jax"},
        {"params": {}},  # results from v0: the completed epochs and steps stand in
    ]
    m = {"epochs_completed": 2, "steps_completed": 10}
    computed = []
    for v in variants:
        table._WORKLOADS.clear()
        computed.append(table.workload({**base, **v}, m))
    assert len({k for k, _ in computed}) == len({label for _, label in computed}) == len(variants)
    remembered = [table.workload({**base, **v}, m) for v in variants + variants[::-1]]
    assert remembered == computed + computed[::-1]
    spec = {"benchmark": "mnist-mlp", "params": {"epochs": 1, "samples": 1000}, "per_gpu_batch_size": 128}
    spec["precision"] = "fp32"
    assert computed[0] == (
        hashlib.sha256(json.dumps(spec, sort_keys=True, default=str).encode()).hexdigest()[:12],
        "1 ep x 1,000 samples, batch 128, fp32",
    )


def test_runs_at_two_prices_are_two_rows_never_one_invented_rate():
    """USD 0.10/h and 0.25/h on one offering, one hour of training each: two
    rows costing 0.10 and 0.25, never one row at 0.175."""
    runs = priced(
        mnist(epochs=1, samples=1000, train_seconds=3600, hourly=0.10, repeat=1),
        mnist(epochs=1, samples=1000, train_seconds=3600, hourly=0.25, repeat=2),
    )
    s = summary_of(runs).sort_values("hourly_usd")
    assert s["hourly_usd"].tolist() == pytest.approx([0.10, 0.25])
    assert s["train_cost_usd"].tolist() == pytest.approx([0.10, 0.25])
    assert s["prices_paid"].tolist() == ["USD 0.1/h", "USD 0.25/h"]
    assert s["repeats"].tolist() == [1, 1]
    # samples per dollar: 1000 samples/s x 3600 s / price, each at its own price
    assert s["samples_per_usd"].tolist() == pytest.approx([36_000_000, 14_400_000])
    assert not (s["hourly_usd"] == pytest.approx(0.175)).any()


def test_spot_runs_share_a_row_and_list_the_prices_they_paid():
    spot = [
        make_result(
            "aws/p2.xlarge",
            "resnet50",
            market="spot",
            spot_hourly_usd=p,
            train_seconds=3600,
            boot_seconds=0,
            tail_seconds=0,
            repeat=i,
        )
        for i, p in enumerate((0.27, 0.31))
    ]
    (row,) = summary_of(priced(*spot)).to_dict("records")
    assert row["repeats"] == 2
    assert row["prices_paid"] == "USD 0.27-0.31/h (spot, 2 prices, each run at its own)"
    # the cost is the median of per-run costs, each at its own price
    assert row["train_cost_usd"] == pytest.approx((0.27 + 0.31) / 2)


def test_each_benchmark_declares_its_unit_and_the_report_uses_it():
    units = {name: b.sample_unit for name, b in REGISTRY.items()}
    assert units["bilstm-sentiment"] == "tweet"
    assert units["imdb-bilstm"] == units["imdb-fasttext"] == "review"
    assert units["text-lstm"] == "character window"
    assert units["resnet50"] == units["mnist-cnn"] == "image"
    assert units_of(REGISTRY["text-lstm"].sample_unit) == "character windows"
    r = make_result("aws/p2.xlarge", "bilstm-sentiment", samples_per_second=1234.5, hourly_usd=0.9)
    runs = priced(r)
    assert runs["sample_unit"].tolist() == ["tweet"]
    text = with_unit_columns(summary_of(runs)).iloc[0]
    assert text["throughput"] == "1,234.5 tweets/s"
    assert text["per_usd"] == f"{1234.5 * 3600 / 0.9:,.0f} tweets"


def test_fastest_needs_no_price_and_unpriced_offerings_are_listed_with_how_to_price():
    fast_unpriced = make_result(
        "aws/g5.xlarge", "resnet50", train_seconds=600, hourly_usd=None, boot_seconds=0, tail_seconds=0
    )  # no snapshot prices g5 on the synthetic launch date
    slow_priced = make_result(
        "aws/p2.xlarge", "resnet50", train_seconds=3600, hourly_usd=0.9, boot_seconds=0, tail_seconds=0, repeat=1
    )
    (rec,) = recommend(summary_of(priced(fast_unpriced, slow_priced)), Options())
    assert rec["fastest"]["offering_id"] == "aws/g5.xlarge" and rec["fastest"]["cost_usd"] is None
    assert rec["cheapest"]["offering_id"] == "aws/p2.xlarge"
    (u,) = rec["unpriced"]
    assert u["offering_id"] == "aws/g5.xlarge" and u["hours"] == pytest.approx(600 / 3600)
    assert "infra/catalog/data/prices/" in u["how_to_price"] and "GPUBENCH_HOURLY_USD" in u["how_to_price"]


def test_the_default_base_is_an_offering_in_the_data():
    a = make_result("aws/p3.2xlarge", "resnet50", hourly_usd=3.06, train_seconds=900, repeat=1)
    b = make_result("aws/p3.2xlarge", "vgg16", hourly_usd=3.06, train_seconds=900, repeat=2)
    c = make_result("gcp/n1-standard-4+1xp100", "resnet50", hourly_usd=1.5, train_seconds=1800, repeat=3)
    s = summary_of(priced(a, b, c))
    assert default_base(s) == "aws/p3.2xlarge"  # two configurations beat one
    rel = relative_to_base(s).set_index(["benchmark", "offering_id"])
    assert rel.loc[("resnet50", "gcp/n1-standard-4+1xp100"), "rel_time"] == pytest.approx(2.0)
    # a K80 in the data is preferred (seed 002's base)
    k80 = make_result("gcp/n1-standard-4+1xk80", "resnet50", hourly_usd=0.49, train_seconds=3600, repeat=4)
    s = summary_of(priced(a, b, c, k80))
    assert default_base(s) == "gcp/n1-standard-4+1xk80"
    opts = Options()
    tables_of(priced(a, b, c, k80), opts)
    assert opts.base == "gcp/n1-standard-4+1xk80"


def test_breakeven_is_per_workload_with_the_twice_cheaper_crossing():
    """Seed 004's box: $6,500 over 30 months (A = 216.67 $/month), 1 kW at
    $0.20/kWh. Box 1000 samples/s against a cloud at 500 samples/s and
    $3.06/h: cheaper from A / (24 (1000 x 3.06 / 500 - 0.2)) = 1.525 days,
    twice as cheap from A / (24 (1000 x 3.06 / 1000 - 0.2)) = 3.157 days."""

    def run(o, batch, sps, hourly, rep):
        r = make_result(o, "vgg16", samples_per_second=sps, train_seconds=3600, hourly_usd=hourly, repeat=rep)
        r["benchmark"]["per_gpu_batch_size"] = batch
        r["benchmark"]["params"] = {"steps": 1000, "batch_size": batch}
        return r

    runs = priced(
        run("onprem/parkopedia-4x1080ti", 64, 1000.0, None, 1),
        run("aws/p3.2xlarge", 64, 500.0, 3.06, 2),
        run("aws/p3.2xlarge", 32, 50.0, 3.06, 3),  # another workload: no pair with the box
    )
    be = breakeven(summary_of(runs))
    (row,) = be.to_dict("records")
    assert row["workload_label"] == "1,000 steps, batch 64, fp32"
    a = 6500 / 30
    assert row["breakeven_days_per_month"] == pytest.approx(a / (24 * (1000 * 3.06 / 500 - 0.2)))
    assert row["breakeven_days_per_month"] == pytest.approx(1.5250, abs=1e-4)
    assert row["twice_cheaper_days_per_month"] == pytest.approx(a / (24 * (1000 * 3.06 / 1000 - 0.2)))
    assert row["twice_cheaper_days_per_month"] == pytest.approx(3.1566, abs=1e-4)


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), float("-inf")])
def test_nan_and_infinity_are_refused_where_they_enter(bad):
    from payload.config import _nonneg_float, _positive_float
    from payload.schema import ResultValidationError, validate_result

    r = make_result("aws/p2.xlarge", hourly_usd=0.9)
    r["metrics"]["samples_per_second"] = bad
    with pytest.raises(ResultValidationError, match=r"metrics/samples_per_second: .* is not a number"):
        validate_result(r)  # result writing validates with this
    with pytest.raises(ValueError, match=r"invalid: metrics/samples_per_second"):
        result_to_row(r, source="mem", key="k", etag="e", schema_version_read=1)  # collect
    for parse in (_nonneg_float, _positive_float):  # payload price options
        with pytest.raises(ValueError, match="finite"):
            parse(str(bad))


def test_collect_sets_a_nan_result_aside_with_the_reason():
    import json

    from analysis.collect.validation import parse

    r = make_result("aws/p2.xlarge", hourly_usd=0.9)
    r["metrics"]["train_seconds"] = float("nan")
    with pytest.raises(ValueError, match="metrics/train_seconds"):
        parse(json.dumps(r).encode(), source="mem", key="k", etag="e")
