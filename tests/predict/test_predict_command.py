"""`gpubench predict`: measured rates in, every other candidate predicted with its interval, its whole job
billed as the bench bills it; bad rates and GPUs refused with the value and the fix; --json and --help."""

from __future__ import annotations

import contextlib
import io
import json
import math

import pytest
import yaml

from analysis.bench.candidates import cloud_candidates
from analysis.cli import main
from analysis.predict import calibration as cal
from analysis.predict.predict import PredictError, parse_measured, predict
from analysis.price.billed import billed
from infra.catalog import load_catalog
from payload.workloads.spec import parse_spec

WORK = 1_281_167 * 2  # two ImageNet epochs


@pytest.fixture(scope="module")
def catalog():
    return load_catalog()


def task(tmp_path, accelerators=("T4:1", "A100:1", "A10G:1"), work=True):
    doc = {"name": "job", "run": "python train.py", "resources": {"accelerators": list(accelerators)}}
    if work:
        doc["work"] = {"samples": WORK}
    return parse_spec(doc, tmp_path / "task.yaml", check_workdir=False)


def by_gpu(doc):
    return {f"{r['gpu']}:{r['gpu_count']}": r for r in doc["candidates"]}


def test_measured_stays_measured_and_the_rest_is_predicted_and_billed_as_bench_bills(tmp_path, catalog):
    doc = predict(task(tmp_path), ["T4=410"], catalog=catalog)
    rows = by_gpu(doc)
    assert rows["T4:1"]["basis"] == "measured" and rows["T4:1"]["samples_per_second"] == 410.0
    a100 = rows["A100:1"]
    assert a100["basis"] == "predicted"
    # the interval is the calibration's factor around the rate
    k = doc["model"]["interval_factor"]
    assert a100["samples_per_second_low"] == pytest.approx(a100["samples_per_second"] / k)
    assert a100["samples_per_second_high"] == pytest.approx(a100["samples_per_second"] * k)
    # the whole job: no overhead given, so WORK / rate seconds, billed under the offering's own rule
    (cand,) = [c for c in cloud_candidates(None, gpus="A100:1", catalog=catalog)[0]]
    seconds = WORK / a100["samples_per_second"]
    assert a100["est_hours"] == pytest.approx(seconds / 3600)
    assert a100["est_usd"] == pytest.approx(sum(billed(cand.terms, seconds, cand.hourly_usd)[1:]))
    assert a100["est_usd_low"] == pytest.approx(sum(billed(cand.terms, seconds / k, cand.hourly_usd)[1:]))
    assert any("--overhead-minutes" in n for n in a100["notes"])


def test_the_overhead_is_added_to_every_whole_job(tmp_path, catalog):
    # 10 minutes of overhead: the measured T4's job is 600 + WORK / 410 seconds
    doc = predict(task(tmp_path), ["T4=410"], overhead_seconds=600.0, catalog=catalog)
    assert by_gpu(doc)["T4:1"]["est_hours"] == pytest.approx((600 + WORK / 410) / 3600)


def test_a_gpu_without_datasheet_figures_is_not_predictable_with_the_reason(tmp_path, catalog):
    a10g = by_gpu(predict(task(tmp_path), ["T4=410"], catalog=catalog))["A10G:1"]
    assert a10g["basis"] == "not-predictable" and a10g["samples_per_second"] is None and a10g["est_usd"] is None
    assert "memory_bandwidth_gbs for A10G" in a10g["reason"]


def test_a_measured_gpu_without_figures_predicts_nothing_and_says_why(tmp_path, catalog):
    doc = predict(task(tmp_path), ["A10G=300"], catalog=catalog)
    rows = by_gpu(doc)
    assert rows["A10G:1"]["basis"] == "measured"
    assert rows["T4:1"]["basis"] == "not-predictable" and "no measured GPU has the figures" in rows["T4:1"]["reason"]


def test_two_measured_gpus_fit_alpha_and_one_uses_the_prior(tmp_path, catalog):
    one = predict(task(tmp_path), ["T4=410"], catalog=catalog, family="vision")["model"]
    assert "prior for vision, mixed" in one["alpha_basis"]
    two = predict(task(tmp_path), ["T4=410", "L4=800"], catalog=catalog)["model"]
    assert "fitted on the measured L4, T4" in two["alpha_basis"]
    assert one["alpha"] != two["alpha"]


def test_the_document_names_the_model_and_its_data(tmp_path, catalog):
    model = predict(task(tmp_path), ["T4=410"], catalog=catalog)["model"]
    (source,) = model["calibration"]["sources"]
    assert source["license"] == "Apache-2.0" and source["repository"].endswith("NVIDIA/DeepLearningExamples")
    assert model["calibration"]["rows"] == len(cal.load_rows()) and model["method"].startswith("docs/")


def test_without_work_the_rates_alone_are_predicted(tmp_path, catalog):
    a100 = by_gpu(predict(task(tmp_path, work=False), ["T4=410"], catalog=catalog))["A100:1"]
    assert a100["samples_per_second"] > 0 and a100["est_hours"] is None and "`work:`" in a100["reason"]


@pytest.mark.parametrize(
    ("items", "words"),
    [
        (["T4=0"], ["T4=0", "above zero"]),
        (["T4=-3"], ["above zero"]),
        (["T4=nan"], ["finite"]),
        (["T4=inf"], ["finite"]),
        (["T4=fast"], ["'fast' is not a number", "T4:1=410"]),
        (["T4"], ["no '=RATE'"]),
        (["Q9000=10"], ["unknown GPU 'Q9000'", "known GPU models"]),
        (["T4=410", "T4:1=500"], ["T4:1 is given twice", "410", "500"]),
        ([], ["no --measured rate"]),
    ],
)
def test_bad_measurements_are_refused_naming_the_value_and_the_fix(catalog, items, words):
    with pytest.raises(PredictError) as caught:
        parse_measured(items, catalog)
    for word in words:
        assert word in str(caught.value)


def test_the_same_rate_twice_is_one_measurement(catalog):
    assert len(parse_measured(["T4=410", "T4:1=410"], catalog)) == 1


def test_an_unknown_candidate_gpu_names_where_it_was_written(tmp_path, catalog):
    with pytest.raises(PredictError, match=r"task.yaml: field 'resources.accelerators': unknown GPU 'Q9000'"):
        predict(task(tmp_path, accelerators=("Q9000:1",)), ["T4=410"], catalog=catalog)
    with pytest.raises(PredictError, match=r"--gpus: unknown GPU 'Q9000'"):
        predict(task(tmp_path), ["T4=410"], gpus="T4,Q9000", catalog=catalog)


# --- the command line --------------------------------------------------------------------------------------


def run_cli(argv):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(argv, prog="gpubench")
        except SystemExit as stop:
            code = int(stop.code or 0)
    return code, out.getvalue(), err.getvalue()


def write_task(tmp_path):
    path = tmp_path / "task.yaml"
    doc = {"name": "job", "run": "python train.py", "resources": {"accelerators": ["T4:1", "A100:1"]}}
    path.write_text(yaml.safe_dump(doc | {"work": {"samples": WORK}}))
    return path


def test_json_shape(tmp_path):
    code, out, _ = run_cli(["predict", str(write_task(tmp_path)), "--measured", "T4=410", "--json"])
    assert code == 0
    doc = json.loads(out)
    assert set(doc) == {"task", "market", "measured", "model", "candidates", "unmatched", "answer"}
    assert doc["measured"] == [{"gpu": "T4", "gpu_count": 1, "samples_per_second": 410.0}]
    row = by_gpu(doc)["A100:1"]
    assert row["basis"] == "predicted" and math.isfinite(row["est_usd_high"])
    assert {"samples_per_second_low", "samples_per_second_high", "est_hours_low", "price_source"} <= set(row)
    assert doc["answer"]["cheapest"]["offering"] in {r["offering"] for r in doc["candidates"]}


def test_the_table_labels_each_figure(tmp_path):
    code, out, _ = run_cli(["predict", str(write_task(tmp_path)), "--measured", "T4=410", "--gpus", "T4,A100,H100"])
    assert code == 0
    assert "measured" in out and "predicted" in out and "spec-ratio" in out and "leave-one-out" in out
    assert "outside the calibration data" in out and "1x H100" in out  # Hopper: no calibration table has it


@pytest.mark.parametrize(
    ("argv", "word"),
    [
        (["--measured", "T4=0"], "above zero"),
        (["--measured", "T4=410", "--measured", "T4=411"], "given twice"),
        (["--measured", "Q9000=1"], "unknown GPU"),
        (["--measured", "T4=410", "--family", "poetry"], "--family 'poetry' is not one of any"),
        (["--measured", "T4=410", "--overhead-minutes", "-1"], "zero or more minutes"),
    ],
)
def test_errors_exit_2_with_a_message_and_no_traceback(tmp_path, argv, word):
    code, out, err = run_cli(["predict", str(write_task(tmp_path)), *argv])
    assert code == 2 and word in err and "Traceback" not in err + out


def test_a_missing_task_file_is_named(tmp_path):
    code, _, err = run_cli(["predict", str(tmp_path / "nope.yaml"), "--measured", "T4=410"])
    assert code == 2 and "nope.yaml" in err


def test_help_has_examples_and_exit_codes():
    code, out, _ = run_cli(["predict", "--help"])
    assert code == 0 and "examples:" in out and "--measured T4=410" in out and "Exit codes" in out


def test_the_sentence_says_when_a_pick_is_predicted(tmp_path, catalog):
    # measured: A100 only; the T4 (about a fifth of the rate at a seventh of the price) is predicted cheapest
    doc = predict(task(tmp_path), ["A100=2000"], catalog=catalog)
    cheapest = doc["answer"]["cheapest"]["offering"]
    assert by_gpu(doc)["T4:1"]["offering"] == cheapest and by_gpu(doc)["T4:1"]["basis"] == "predicted"
    assert f"Predicted, not measured: the cheapest ({cheapest})" in doc["answer"]["sentence"]
    measured_only = predict(task(tmp_path, accelerators=("T4:1",)), ["T4=410"], catalog=catalog)
    assert "Predicted, not measured" not in measured_only["answer"]["sentence"]


@pytest.mark.parametrize(("kwargs", "message"), [({"precision": "bf16"}, "--precision 'bf16' is not one of mixed")])
def test_a_library_caller_gets_the_commands_refusal_not_a_key_error(tmp_path, catalog, kwargs, message):
    """predict() is called by more than the command (whose argparse `choices` refuse a precision first)."""
    with pytest.raises(PredictError, match=message):
        predict(task(tmp_path), ["T4=410"], catalog=catalog, **kwargs)
