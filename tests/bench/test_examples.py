"""The shipped task files: every one validates, names GPUs the catalog can launch and a positive amount of
work; the study task files run real built-in jobs (`python -m payload.benchmarks`) whose progress lines
carry cumulative samples and seconds, as a probe reads them."""

from __future__ import annotations

import io
import os
import re
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from servers import require_module

from analysis.bench.candidates import cloud_candidates
from payload import exitcodes
from payload.benchmarks import REGISTRY
from payload.benchmarks.__main__ import _params, main, parser
from payload.benchmarks.progress import Progress
from payload.workloads.metrics import parse_json_line
from payload.workloads.spec import load_spec

REPO = Path(__file__).resolve().parents[2]
TASK_FILES = sorted((REPO / "examples").rglob("*.yaml"))
STUDIES = sorted((REPO / "examples" / "studies").glob("*.yaml"))


def test_the_examples_are_there():
    assert len(STUDIES) == 4 and {p.name[:7] for p in STUDIES} == {"seed000", "seed002", "seed003", "seed004"}
    assert {p.parent.name for p in TASK_FILES} >= {"keras-mnist", "pytorch-resnet", "studies", "keras-fit"}


@pytest.mark.parametrize("path", TASK_FILES, ids=lambda p: str(p.relative_to(REPO)))
def test_every_example_task_file_validates_with_work_and_launchable_gpus(path):
    spec = load_spec(path)
    assert spec.work is not None and (spec.work.total_samples() or 0) + (spec.work.epochs or 0) > 0
    assert spec.resources is not None and spec.resources.accelerators
    found, unmatched = cloud_candidates(spec)
    assert unmatched == [] and len(found) == len(spec.resources.accelerators)
    assert all(c.hourly_usd and c.hourly_usd > 0 for c in found)


def study_argv(spec) -> list[str]:
    """The study's `run:` as argv, its $VARS from the task's env (as bash would expand them)."""
    words = shlex.split(spec.run.replace("\n", " "))
    return [re.sub(r"\$(\w+)", lambda m: spec.env[m[1]], w) for w in words]


@pytest.mark.parametrize("path", STUDIES, ids=lambda p: p.stem)
def test_study_runs_a_built_in_benchmark_with_valid_flags(path):
    spec = load_spec(path)
    argv = study_argv(spec)
    assert argv[:3] == ["python", "-m", "payload.benchmarks"] and argv[3] in REGISTRY
    args = parser().parse_args(argv[3:])
    params = _params(REGISTRY[args.name], args)  # every flag and --param is one the benchmark takes
    assert args.data == "synthetic" or REGISTRY[args.name].kind == "throughput"  # offline by default
    assert params["batch_size"] == int(spec.env["BATCH_SIZE"])


@pytest.mark.parametrize(
    "argv, says",
    [
        (["nope"], "unknown benchmark 'nope'"),
        (["mnist-mlp", "--total-samples", "5"], "give --epochs"),
        (["mnist-mlp", "--param", "hidden"], "expected KEY=VALUE"),
        (["mnist-mlp", "--param", "colour=red"], "unknown parameter 'colour'"),
        (["mnist-mlp", "--epochs", "0"], "--epochs 0: must be at least 1"),
        (["mnist-mlp", "--steps", "0"], "--steps 0: must be at least 1"),  # the flag given, whatever it sets
        (["mnist-mlp", "--data", "/proc/no/such/dir"], "must be 'synthetic', 'download' or an existing directory"),
        (["resnet50", "--metrics-every", "-1"], "--metrics-every -1"),
    ],
)
def test_the_job_entry_point_refuses_bad_arguments_before_training(argv, says, capsys):
    assert main(argv) == exitcodes.USAGE
    err = capsys.readouterr().err
    assert says in err and "Traceback" not in err


def test_progress_counts_cumulative_samples_and_training_seconds_only():
    now = [0.0]
    out = io.StringIO()
    progress = Progress(global_batch=32, every_seconds=1.0, out=out, clock=lambda: now[0])
    progress.begin()
    for _ in range(4):  # steps of 0.5 s: a line once a second of training has passed
        progress.step()
        now[0] += 0.5
    progress.eval_begin()
    now[0] += 3.0  # validation: not training time
    progress.eval_end()
    progress.epoch_end({"loss": 0.5, "val_accuracy": 0.75, "accuracy": 0.5})
    progress.step()
    now[0] += 0.5
    progress.pause()
    now[0] += 10.0  # between fits (a recompile): not training time either
    last = progress.end({"val_accuracy": 0.8})
    lines = [parse_json_line(line) for line in out.getvalue().splitlines()]
    assert [(d["samples"], d["seconds"]) for d in lines] == [(64, 1.0), (128, 2.0), (160, 2.5)]
    assert lines[1]["eval_seconds"] == 3.0 and lines[1]["accuracy"] == 0.75 and lines[1]["epochs"] == 1
    assert last == lines[-1] and last["samples_per_second"] == round(160 / 2.5, 3) and last["accuracy"] == 0.8


def read_metrics(proc: subprocess.Popen, want: int, timeout: float) -> list[dict]:
    """Metrics lines from a running job until `want` have come (a probe's reading, in small)."""
    lines: list[dict] = []
    deadline = time.monotonic() + timeout
    for raw in proc.stdout:
        record = parse_json_line(raw)
        if record is not None:
            lines.append(record)
        if len(lines) >= want or time.monotonic() > deadline:
            break
    return lines


def test_a_study_job_prints_cumulative_progress_while_it_trains():
    require_module("tensorflow")
    spec = load_spec(REPO / "examples" / "studies" / "seed002-mnist-cnn.yaml")
    env = {**os.environ, **spec.env, "PYTHONPATH": str(REPO), "PYTHONUNBUFFERED": "1", "OMP_NUM_THREADS": "1"}
    argv = study_argv(spec)
    argv = [sys.executable, *argv[1:], "--metrics-every", "0.5"]  # the job's own command, lines twice a second
    proc = subprocess.Popen(
        argv,
        cwd=spec.cwd,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        start_new_session=True,
    )
    try:
        lines = read_metrics(proc, want=4, timeout=300)
    finally:
        os.killpg(proc.pid, signal.SIGTERM)  # stopped like a probe stops a steady job
        proc.wait(timeout=60)
    assert len(lines) >= 4, lines
    samples = [d["samples"] for d in lines]
    seconds = [d["seconds"] for d in lines]
    batch = int(spec.env["BATCH_SIZE"])
    assert all(s % batch == 0 for s in samples) and samples == sorted(samples) and samples[-1] > samples[0]
    assert seconds == sorted(seconds) and seconds[-1] > seconds[0] > 0
    assert all(d["steps"] * batch == d["samples"] for d in lines)
