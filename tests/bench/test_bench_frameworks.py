"""`gpubench bench --local` of the unmodified framework examples (examples/keras-fit, ...): the job prints
only its framework's own progress, the probe reads it, and the whole job is extrapolated from the
task file's `work: {epochs: N}` with the steps per epoch the job printed.

Keras (TensorFlow) is in the suite's environment. The torch, Lightning and Hugging Face examples need
their frameworks in the job's environment, which the suite does not install: they are probed and run
in full by benchmarks/bench_accuracy.py (`--only torch-tqdm --only lightning-fit --only hf-trainer
--framework-python PY`), and their output conventions are tested here on captured real output
(tests/payload/test_progress_conventions.py)."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

from servers import require_module

from analysis.cli import main
from payload import exitcodes

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "payload"))

REPO = Path(__file__).resolve().parents[2]


def test_keras_model_fit_is_benched_as_published(tmp_path, capsys, monkeypatch, no_metadata):
    require_module("keras")
    # tiny: 100 steps of 64 per epoch, enough epochs that the probe, not the job, ends first
    for name, value in {"EPOCHS": "200", "SAMPLES": "6400", "BATCH_SIZE": "64"}.items():
        monkeypatch.setenv(name, value)
    # the job's environment sees the suite's Keras: its setup installs nothing (a new one would download TensorFlow)
    monkeypatch.setenv("GPUBENCH_JOB_SITE_PACKAGES", "1")
    # one TensorFlow thread (tensorflow/core/common_runtime/process_util.cc reads these): the probe runs for a
    # fixed time, so what it costs the suite is its threads x that time
    for name in ("TF_NUM_INTRAOP_THREADS", "TF_NUM_INTEROP_THREADS", "OMP_NUM_THREADS"):
        monkeypatch.setenv(name, "1")
    task = REPO / "examples" / "keras-fit" / "workload.yaml"
    assert "GPUBENCH" not in (task.parent / "train.py").read_text()  # nothing written for gpubench
    results = tmp_path / "results"
    # 18 s at most: Keras prints its first steps 5 to 10 s in on this machine, and on a shared CPU its rate is rarely
    # steady to 3 %, so the probe runs to its limit (its whole cost) and answers not-steady
    argv = ["bench", str(task), "--local", "--yes", "--json", "--probe-minutes", "0.3", "--results", str(results)]
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
