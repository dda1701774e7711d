"""The demo's first sentence compares like with like: a run that did the study's work (its precision, batch
and input shape) is set against the study's figures as a ratio; one that did other work says how in the
same sentence and draws no ratio."""

from __future__ import annotations

from analysis.reference.studies import reference_figures, work_differences
from analysis.report.answer import versus_lines
from analysis.report.reference import Versus


def figure(benchmark: str, batch: int | None = None):
    return next(f for f in reference_figures() if f.benchmark == benchmark and f.batch_size == batch)


def test_the_studys_own_configuration_differs_in_nothing():
    f = figure("resnet50", 16)  # seed 004: tf_cnn_benchmarks, batch 16, fp16, synthetic full-size images
    assert work_differences(f, "mixed", 16, "synthetic") == []
    assert work_differences(f, "fp32", 32, "synthetic") == [
        "fp32 here, fp16 in the study",
        "batch 32 here, 16 in the study",
    ]


def test_a_synthetic_bilstm_run_is_other_work_than_seed_000():
    f = figure("bilstm-sentiment")
    found = work_differences(f, "fp32", 32, "synthetic")
    assert found == [
        "the study does not print its batch size",
        "synthetic 40-token tweets here, real tweets padded to the corpus' longest (length not printed) in the study",
    ]


def versus(differs=()) -> Versus:
    refs = tuple(f for f in reference_figures() if f.benchmark == "resnet50" and f.batch_size == 16)
    return Versus(
        "resnet50",
        "images/s",
        10.0,
        "CPU",
        refs,
        "seed 004's ImageNet training of resnet50 (1,000 images)",
        1000,
        1000 / 10 / 3600,
        None,
        None,
        ((r.label, 1.0, None) for r in refs),
        False,
        tuple(differs),
    )


def test_only_the_same_work_gets_a_ratio():
    same, _ = versus_lines(versus()._replace(there=(("1080 Ti", 0.01, None),)))
    assert "times as fast" in same and "other work" not in same
    other, full = versus_lines(versus(["fp32 here, fp16 in the study"])._replace(there=(("1080 Ti", 0.01, None),)))
    assert "times as fast" not in other
    assert other.startswith(
        "resnet50: this machine (CPU) 10.0 images/s on other work than the studies' (fp32 here, fp16 in the study), so not set against their"
    )
    assert "here about" in full and "at that rate, on that other work" in full
