"""Harness mechanics that need a real process or a custom benchmark:
throughput checkpoints every N steps + resume, SIGTERM (several devices: test_payload_backends.py)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time

from payload_helpers import only_result, run_payload

from payload import exitcodes
from payload.benchmarks import REGISTRY
from payload.benchmarks.base import Benchmark, single_batch
from payload.layout import newest_versions
from payload.schema import validate_result


def _tiny_cnn(params):
    import keras

    model = keras.Sequential(
        [
            keras.Input((params["image_size"], params["image_size"], 3)),
            keras.layers.Conv2D(4, 3, activation="relu"),
            keras.layers.GlobalAveragePooling2D(),
            keras.layers.Dense(params["classes"], activation="softmax", dtype="float32"),
        ]
    )
    model.compile(
        optimizer=keras.optimizers.SGD(0.01, momentum=0.9), loss="sparse_categorical_crossentropy", metrics=["accuracy"]
    )
    return model


TINY_THROUGHPUT = Benchmark(
    name="tiny-throughput",
    kind="throughput",
    description="test-only throughput model",
    study="tests",
    dataset="synthetic 32x32x3",
    defaults={"steps": 1000, "warmup_steps": 5, "batch_size": 8, "image_size": 32, "classes": 4},
    load_data=lambda source, params, gb: single_batch(
        params, gb, (params["image_size"],) * 2 + (3,), params["classes"]
    ),
    build_model=_tiny_cnn,
)


def test_throughput_checkpoints_every_n_steps_and_resumes_to_the_exact_step(tmp_path, metadata_server, monkeypatch):
    monkeypatch.setitem(REGISTRY, "tiny-throughput", TINY_THROUGHPUT)
    monkeypatch.setenv("GPUBENCH_WATCH_INTERVAL", "0.02")
    args = ["--benchmark", "tiny-throughput", "--results", str(tmp_path), "--stack", "tp", "--checkpoint-every", "50"]

    def notice_after_first_checkpoint():
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if list(tmp_path.glob("runs/tp/*/checkpoints/state.json")):
                metadata_server.spot_action = {"action": "terminate", "time": "soon"}
                return
            time.sleep(0.01)

    threading.Thread(target=notice_after_first_checkpoint, daemon=True).start()
    assert run_payload(*args) == exitcodes.INTERRUPTED
    run_dir, first = only_result(tmp_path, "tp")
    validate_result(first)
    done = first["metrics"]["steps_completed"]
    assert first["status"] == "interrupted" and 50 <= done < 1000
    states = [p.relative_to(run_dir).as_posix() for p in (run_dir / "checkpoints").glob("state*.json")]
    state = json.loads((run_dir / newest_versions(states)["checkpoints/state.json"]).read_text())  # the newest
    assert state["steps_completed"] == done and (tmp_path / state["model_key"]).exists()

    metadata_server.spot_action = None
    assert run_payload(*args) == 0
    run_dir2, final = only_result(tmp_path, "tp")
    assert run_dir2 == run_dir
    validate_result(final)
    m = final["metrics"]
    assert final["status"] == "completed" and m["steps_completed"] == 1000
    assert [a["steps_completed"] for a in final["attempts"]] == [done, 1000]
    assert m["samples_trained"] == 1000 * 8 and m["samples_per_second"] > 0
    # warm-up excluded in each attempt: rates cover the steps after it
    assert m["samples_per_second_spread"]["n"] == 1000 - 2 * 5
    assert [e for e in final["timeline"] if e["event"] == "resume"][0]["steps_completed"] == done


def test_sigterm_checkpoints_and_exits_75(tmp_path):
    """docker stop / ACPI shutdown send SIGTERM: treated like a preemption notice."""
    env = {**os.environ, "GPUBENCH_WATCH_INTERVAL": "0.05"}
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "payload",
            "run",
            "--benchmark",
            "mnist-mlp",
            "--results",
            str(tmp_path),
            "--stack",
            "term",
            "--data",
            "synthetic",
            "--epochs",
            "50",
            "--batch-size",
            "16",
            "--param",
            "samples=256,val_samples=16,hidden=16,steps_per_epoch=40",
        ],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 120
        while not list(tmp_path.glob("runs/term/*/checkpoints/state.json")):
            assert proc.poll() is None, proc.stderr.read()[-2000:]
            assert time.monotonic() < deadline, "no checkpoint within 120 s"
            time.sleep(0.05)
        proc.send_signal(signal.SIGTERM)
        rc = proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert rc == exitcodes.INTERRUPTED
    _, result = only_result(tmp_path, "term")
    validate_result(result)
    assert result["status"] == "interrupted" and "SIGTERM" in result["error"]
    assert 1 <= result["metrics"]["epochs_completed"] < 50
