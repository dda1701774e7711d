"""The spec-ratio model and its calibration against cases worked by hand (the arithmetic is in each
test), and the shipped calibration tables' rows: sourced, licensed, of GPUs the catalog knows."""

from __future__ import annotations

import math
import re

import pytest

from analysis.predict import calibration as cal
from analysis.predict.calibration import NotPredictable, figures, fit_alpha, log_ratios, machine_factor, ratio
from analysis.predict.predict import Fit, Measured, gpu_specs, predict_rate
from infra.catalog import load_catalog


@pytest.fixture(scope="module")
def specs():
    return gpu_specs(load_catalog())


def calibration(efficiency=1.0, factor=1.5):
    return cal.Calibration(rows=(), priors={}, efficiency=efficiency, held=(), factor=factor)


def test_one_probe_scales_by_compute_and_bandwidth_weighted_by_alpha(specs):
    # T4: 65 TFLOPS FP16 tensor, 320 GB/s; A100 (40 GB): 312 TFLOPS, 1555 GB/s (catalog datasheet figures)
    # alpha 0.5: 410 * (312/65)**0.5 * (1555/320)**0.5 = 410 * sqrt(4.8 * 4.859375) = 410 * sqrt(23.325)
    #          = 410 * 4.829596 = 1980.1345 samples/s; interval x/1.5: 1320.09 .. 2970.20
    model = Fit(0.5, "hand", calibration(factor=1.5))
    rate, low, high = predict_rate("A100", 1, [Measured("T4", 1, 410.0)], specs, model, "mixed")
    assert rate == pytest.approx(1980.1345, rel=1e-6)
    assert low == pytest.approx(1980.1345 / 1.5, rel=1e-6) and high == pytest.approx(1980.1345 * 1.5, rel=1e-6)


def test_alpha_one_is_the_compute_ratio_and_zero_the_bandwidth_ratio(specs):
    # alpha 1: 100 * 312/65 = 480; alpha 0: 100 * 1555/320 = 485.9375
    for alpha, expected in ((1.0, 480.0), (0.0, 485.9375)):
        model = Fit(alpha, "hand", calibration())
        assert predict_rate("A100", 1, [Measured("T4", 1, 100.0)], specs, model, "mixed")[0] == pytest.approx(expected)


def test_fp32_uses_tf32_where_the_gpu_has_it_and_cuda_core_fp32_before(specs):
    # V100 -> A100 in fp32, alpha 1: A100's TF32 156 over V100's FP32 15.7 = 9.936306...
    assert figures(specs["A100"], "fp32") == (156.0, 1555.0)
    assert figures(specs["V100"], "fp32") == (15.7, 900.0)
    xc, xb = log_ratios(specs["V100"], specs["A100"], "fp32")
    assert math.exp(xc) == pytest.approx(156 / 15.7) and math.exp(xb) == pytest.approx(1555 / 900)


def test_machines_of_many_gpus_scale_by_the_doubling_efficiency(specs):
    # efficiency 0.9: 8 GPUs run 8 * 0.9**log2(8) = 8 * 0.729 = 5.832 times one GPU
    assert machine_factor(8, 0.9) == pytest.approx(5.832)
    assert machine_factor(1, 0.9) == 1.0
    # measured T4:1=410, alpha 0.5 -> one A100 1980.1345 (above) -> A100:8 = 1980.1345 * 5.832 = 11548.14
    model = Fit(0.5, "hand", calibration(efficiency=0.9))
    rate = predict_rate("A100", 8, [Measured("T4", 1, 410.0)], specs, model, "mixed")[0]
    assert rate == pytest.approx(1980.1345 * 5.832, rel=1e-6)
    # and a measured machine of 4 is brought to one GPU first: 4 * 0.9**2 = 3.24; 3240 / 3.24 = 1000 per T4
    rate = predict_rate("T4", 1, [Measured("T4", 4, 3240.0)], specs, model, "mixed")[0]
    assert rate == pytest.approx(1000.0)


def test_two_measured_gpus_are_averaged_geometrically(specs):
    # alpha 1 (compute only): T4=100 gives A100 100*312/65 = 480; L4=200 gives 200*312/121 = 515.70248;
    # the prediction is their geometric mean sqrt(480 * 515.70248) = sqrt(247537.19) = 497.5311
    model = Fit(1.0, "hand", calibration())
    measured = [Measured("T4", 1, 100.0), Measured("L4", 1, 200.0)]
    assert predict_rate("A100", 1, measured, specs, model, "mixed")[0] == pytest.approx(497.5311, rel=1e-6)


def test_fit_alpha_recovers_the_share_that_made_the_ratios_and_leans_on_the_prior():
    # T4 -> L4: x_c = ln(121/65) = 0.621403, x_b = ln(300/320) = -0.064539; a job 30 % compute-bound
    # has y = 0.3 x_c + 0.7 x_b. d = x_c - x_b = 0.685942, z = y - x_b = 0.3 d: alpha = (0.3 d^2)/(d^2) = 0.3
    xc, xb = math.log(121 / 65), math.log(300 / 320)
    y = 0.3 * xc + 0.7 * xb
    assert fit_alpha([(xc, xb, y)], prior=0.9, weight=0.0) == pytest.approx(0.3)
    # weight 0.05 toward 0.9: (0.3 * 0.470516 + 0.045) / (0.470516 + 0.05) = 0.186155 / 0.520516 = 0.357635
    assert fit_alpha([(xc, xb, y)], prior=0.9, weight=0.05) == pytest.approx(0.357635, rel=1e-5)
    # no information (x_c == x_b) keeps the prior; a fit beyond [0, 1] is clipped
    assert fit_alpha([(0.5, 0.5, 0.7)], prior=0.4, weight=0.0) == 0.4
    assert fit_alpha([(1.0, 0.0, 3.0)], prior=0.4, weight=0.0) == 1.0


def test_the_model_ratio_is_one_between_a_gpu_and_itself(specs):
    assert ratio(0.37, *log_ratios(specs["H100"], specs["H100"], "mixed")) == pytest.approx(1.0)


def test_a_gpu_without_datasheet_figures_is_named_with_what_it_lacks(specs):
    with pytest.raises(
        NotPredictable, match=r"no fp16_tensor_tflops or fp32_tflops and no memory_bandwidth_gbs for A10G"
    ):
        figures(specs["A10G"], "mixed")


def test_quantile_interpolates_between_order_statistics():
    # [1, 2, 3, 4]: the median sits halfway between 2 and 3; q 0.9 at 0.9 * 3 = 2.7 -> 3 + 0.7 * 1 = 3.7
    assert cal.quantile([4, 1, 3, 2], 0.5) == 2.5
    assert cal.quantile([4, 1, 3, 2], 0.9) == pytest.approx(3.7)


def test_the_interval_is_never_narrower_than_the_published_stacks_spread():
    # errors of 1 %: the quantile alone would give k = 1.01; the floor is sqrt(1200 / 833) = 1.200240
    held = [cal.Held("w", "mixed", "A100", "V100", 101.0, 100.0)] * 10
    assert cal.interval_factor(held) == pytest.approx(1.200240, rel=1e-6)
    # errors of 100 % (predicted twice the actual): k = 2
    held = [cal.Held("w", "mixed", "A100", "V100", 200.0, 100.0)] * 10
    assert cal.interval_factor(held) == pytest.approx(2.0)


def row(**kw):
    base = dict(
        workload="w", family="vision", precision="mixed", gpu="V100", gpu_count=1, throughput=100.0, column="c",
        source_url="u", commit="c", date="2024-04-04", license="Apache-2.0",
    )  # fmt: skip
    return cal.Row(**{**base, **kw})


def test_the_doubling_efficiency_comes_from_the_tables_own_many_gpu_rows():
    # 1 GPU 100/s, 8 GPUs 640/s: 640 / (8 * 100) = 0.8 over log2(8) = 3 doublings: 0.8 ** (1/3) = 0.928318
    rows = [row(), row(gpu_count=8, throughput=640.0)]
    assert cal.scaling_efficiency(rows) == pytest.approx(0.928318, rel=1e-6)


def test_leave_one_out_never_uses_the_held_out_workload(specs):
    # two workloads on V100 and A100; when "a" is held out, alpha comes from "b" alone, fitted to b's ratio
    rows = [
        row(workload="a", gpu="V100", throughput=100.0),
        row(workload="a", gpu="A100", throughput=200.0),
        row(workload="b", gpu="V100", throughput=100.0),
        row(workload="b", gpu="A100", throughput=400.0),
    ]
    held = {(h.workload, h.gpu): h for h in cal.leave_one_out(rows, specs)}
    xc, xb = log_ratios(specs["V100"], specs["A100"], "mixed")
    # b's pair in both directions; a family of fewer than MIN_FAMILY_WORKLOADS workloads takes every family's
    # alpha, fitted toward 0.5 (calibration.priors)
    pairs_b = [(xc, xb, math.log(4.0)), (-xc, -xb, -math.log(4.0))]
    alpha_b = fit_alpha(pairs_b, 0.5, cal.PRIOR_WEIGHT)
    assert held[("a", "A100")].predicted == pytest.approx(100.0 * ratio(alpha_b, xc, xb))


# --- the shipped tables ------------------------------------------------------------------------------------

ROWS = cal.load_rows()


def test_the_shipped_rows_are_sourced_dated_licensed_and_of_known_gpus(specs):
    assert len(ROWS) > 50
    for r in ROWS:
        assert r.gpu in specs, r
        assert r.precision in ("mixed", "fp32") and r.gpu_count >= 1 and r.throughput > 0, r
        assert r.license == "Apache-2.0" and re.fullmatch(r"\d{4}-\d{2}-\d{2}", r.date), r
        assert r.source_url.startswith(f"https://github.com/NVIDIA/DeepLearningExamples/blob/{r.commit}/"), r
        assert re.fullmatch(r"[0-9a-f]{40}", r.commit) and "#L" in r.source_url, r
        assert r.family in ("vision", "language", "recommendation", "speech", "graph", "tabular"), r


def test_every_shipped_table_compares_two_gpus_or_more():
    for key, rates in cal.tables(ROWS).items():
        assert len(rates) >= 2, key


def test_a_family_gets_its_own_prior_only_from_enough_workloads(specs):
    # three "language" workloads of one ratio and five "vision" ones of another: vision (5 >= 4) has its own
    # alpha, language (3 < 4) takes every family's, which both pull toward
    rows = [
        row(workload=f"{fam}{i}", family=fam, gpu=gpu, throughput=rate)
        for fam, n, speedup in (("language", 3, 4.0), ("vision", 5, 2.0))
        for i in range(n)
        for gpu, rate in (("V100", 100.0), ("A100", 100.0 * speedup))
    ]
    priors = cal.priors(rows, specs)
    assert ("vision", "mixed") in priors and ("language", "mixed") not in priors
    assert cal.prior_alpha(priors, "language", "mixed") == (priors[("any", "mixed")], "every family, mixed")
    assert cal.prior_alpha(priors, "vision", "mixed") == (priors[("vision", "mixed")], "vision, mixed")
