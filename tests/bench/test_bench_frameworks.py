"""`gpubench bench --local` of the unmodified framework examples (examples/keras-fit, ...): the job prints
only its framework's own progress, the probe reads it, and the whole job is extrapolated from the
task file's `work: {epochs: N}` with the steps per epoch the job printed.

Keras (TensorFlow) is in the suite's environment. The torch, Lightning and Hugging Face examples need
their frameworks in the job's environment: their full runs are rows of benchmarks/bench_accuracy.py
(`--only torch-tqdm ...`), and a probe of each here when GPUBENCH_TEST_FRAMEWORK_PYTHON names an
interpreter that has them (one environment, built once, reused by every run)."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import sys
from pathlib import Path

import pytest
import yaml
from servers import require_module

from analysis.cli import main
from payload import exitcodes
from payload.workloads import load_spec
from payload.workloads.conventions.work import progress_of, whole_job

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "payload"))
from test_payload_probe import only_result, payload_run  # noqa: E402 - the payload's own probe helpers

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_keras_model_fit_is_benched_as_published(tmp_path, capsys, monkeypatch, no_metadata):
    require_module("keras")
    # tiny: 100 steps of 64 per epoch, enough epochs that the probe, not the job, ends first
    for name, value in {"EPOCHS": "200", "SAMPLES": "6400", "BATCH_SIZE": "64"}.items():
        monkeypatch.setenv(name, value)
    # the job's environment sees the suite's Keras: its setup installs nothing (a new one would download TensorFlow)
    monkeypatch.setenv("GPUBENCH_JOB_SITE_PACKAGES", "1")
    task = REPO / "examples" / "keras-fit" / "workload.yaml"
    assert "GPUBENCH" not in (task.parent / "train.py").read_text()  # nothing written for gpubench
    results = tmp_path / "results"
    argv = ["bench", str(task), "--local", "--yes", "--json", "--probe-minutes", "0.5", "--results", str(results)]
    code = main([*argv, "--project-dir", str(tmp_path), "--hourly-usd", "0.5"])
    out, err = capsys.readouterr()
    assert code == exitcodes.OK, err
    (row,) = json.loads(out)["candidates"]
    assert row["status"] in ("measured", "not-steady") and row["est_hours"] > 0, row
    (path,) = (results / "runs" / row["name"]).glob("*/result.json")
    result = json.loads(path.read_text())
    workload = result["benchmark"]["workload"]
    assert workload["metrics_found"] == ["keras"]
    progress = workload["reported"]["progress"]
    assert progress["convention"] == "keras" and progress["unit"] == "steps"
    assert progress["steps_per_epoch"] == {"value": 100.0, "from": "the job's output (keras)"}
    assert progress["epochs"]["value"] == 200.0  # from `Epoch 1/200`
    work = row["work"]
    assert work["unit"] == "steps" and work["value"] == 20 * 100  # the task file's 20 epochs x 100 steps read
    assert work["figures"]["epochs"] == {"value": 20, "from": "the task file"}
    tail = (path.parent / "log-tail.txt").read_text() if (path.parent / "log-tail.txt").exists() else ""
    assert not tail or len(re.findall(r"/100 ", tail)) < 200  # the redrawn bar keeps its newest state


# The torch, Lightning and Hugging Face examples need an interpreter that has those frameworks: one
# environment, built once and reused by every run (a venv with `pip install torch lightning
# transformers accelerate tqdm`), named by this variable; without it these tests are skipped.
FRAMEWORK_PYTHON = "GPUBENCH_TEST_FRAMEWORK_PYTHON"
# example -> (convention read, what its task file's work is counted in, env for a tiny run)
TORCH_EXAMPLES = {
    "torch-tqdm": ("tqdm", "samples", {"EPOCHS": "50", "SAMPLES": "640", "BATCH_SIZE": "64"}),
    "lightning-fit": ("tqdm", "steps", {"EPOCHS": "50", "SAMPLES": "6400", "BATCH_SIZE": "64"}),
    "hf-trainer": ("tqdm", "steps", {"EPOCHS": "50", "SAMPLES": "320", "BATCH_SIZE": "16"}),
}


@pytest.mark.slow
@pytest.mark.parametrize("example", sorted(TORCH_EXAMPLES))
def test_torch_framework_examples_are_probed_as_published(example, tmp_path, monkeypatch, no_metadata):
    python = os.environ.get(FRAMEWORK_PYTHON)
    if not python:
        pytest.skip(f"set {FRAMEWORK_PYTHON} to an interpreter with torch, lightning, transformers, accelerate, tqdm")
    convention, unit, env = TORCH_EXAMPLES[example]
    wd = tmp_path / example
    shutil.copytree(REPO / "examples" / example, wd)
    assert "GPUBENCH" not in (wd / "train.py").read_text()
    doc = yaml.safe_load((wd / "workload.yaml").read_text())
    doc.update(setup="true", run=f"{shlex.quote(python)} train.py")
    doc["env"] = {**doc["env"], **env, "OMP_NUM_THREADS": "1"}
    (wd / "workload.yaml").write_text(yaml.safe_dump(doc))
    code, _ = payload_run(wd / "workload.yaml", tmp_path / "b", "--probe-seconds", "40", timeout=300)
    result, _ = only_result(tmp_path / "b")
    assert code == 0 and result["status"] == "completed", result.get("error")
    assert result["benchmark"]["workload"]["metrics_found"] == [convention]
    progress = progress_of(result)
    assert progress["unit"] == unit and result["probe"]["steady"] is not None
    work = whole_job(load_spec(wd / "workload.yaml").work, progress)
    assert work["value"] and work["unit"] == unit
