"""Keras backends: the same built-in benchmark on tensorflow, jax and torch.

Keras reads KERAS_BACKEND once per process, so each run is its own
`python -m payload run` process. jax (CPU wheel) and torch (CPU wheel) come
with the `dev` extra.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys

import pytest
from payload_helpers import only_result
from servers import missing_tool

from payload.schema import validate_result

TINY = "samples=128,val_samples=32,hidden=16"


def _need(module: str) -> None:
    if importlib.util.find_spec(module) is None:
        missing_tool(f"{module} is not installed (pip install -e '.[dev]')")


def _run(tmp_path, stack: str, *extra: str) -> subprocess.CompletedProcess:
    return subprocess.run(
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
            stack,
            "--data",
            "synthetic",
            "--epochs",
            "1",
            "--batch-size",
            "16",
            "--param",
            TINY,
            *extra,
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )


# Each backend trains on as many devices as it can use: two logical CPUs stand in for two GPUs (XLA and
# TensorFlow split the host CPU), torch trains on one. One device differs from two only in the strategy
# payload.training builds (none set for jax), and the other payload tests train on one TensorFlow device.
# backend -> (--cpu-replicas, the strategy recorded)
DEVICES = {"tensorflow": (2, "MirroredStrategy"), "jax": (2, "DataParallel"), "torch": (1, "OneDeviceCPU")}


@pytest.mark.parametrize("backend", sorted(DEVICES))
def test_mnist_mlp_trains_on_each_backend_and_records_it(tmp_path, backend):
    """Keras's data parallelism keeps the per-replica batch: global batch = per-replica x replicas."""
    _need(backend)
    replicas, strategy = DEVICES[backend]
    out = _run(tmp_path, f"be-{backend}", "--backend", backend, "--cpu-replicas", str(replicas))
    assert out.returncode == 0, out.stderr[-3000:]
    _, result = only_result(tmp_path, f"be-{backend}")
    validate_result(result)
    sw = result["software"]
    assert sw["backend"] == backend
    assert sw["keras"]
    versions = {"tensorflow": sw["tensorflow"], "jax": sw["jax"], "torch": sw["torch"]}
    assert versions[backend], f"no {backend} version recorded: {sw}"
    if backend != "torch":
        assert sw["torch"] is None  # only what actually ran is recorded
    if backend == "tensorflow":
        assert sw["jax"] is None  # tf.lite imports jax when installed; the payload stops it under tensorflow
    assert result["status"] == "completed"
    b = result["benchmark"]
    assert b["strategy"] == strategy and b["replicas"] == replicas
    assert b["per_gpu_batch_size"] == 16 and b["global_batch_size"] == 16 * replicas
    if backend == "jax":
        assert b["all_reduce"] is None  # an all-reduce choice is TensorFlow's
    assert result["metrics"]["steps_completed"] == 128 // (16 * replicas)
    assert 0.0 <= result["metrics"]["final_accuracy"] <= 1.0


@pytest.mark.parametrize("choice", ["hierarchical", "one-device"])
def test_tensorflow_all_reduce_choice_is_used_and_recorded(tmp_path, choice):
    """The all-reduce choice applies to MirroredStrategy over GPUs; on logical CPUs
    the strategy is built through the same table, so check the table itself."""
    import tensorflow as tf

    from payload.training import _strategy_for

    strategy, name = _strategy_for(tf, gpus_used=2, cpu_replicas=1, all_reduce=choice)
    expected = {
        "hierarchical": tf.distribute.HierarchicalCopyAllReduce,
        "one-device": tf.distribute.ReductionToOneDevice,
    }
    assert name == choice
    assert isinstance(strategy.extended._cross_device_ops, expected[choice])


def test_torch_on_several_devices_is_refused_with_a_clear_message(tmp_path):
    _need("torch")
    out = _run(tmp_path, "be-torch-dp", "--backend", "torch", "--cpu-replicas", "2")
    assert out.returncode != 0
    _, result = only_result(tmp_path, "be-torch-dp")
    assert result["status"] == "failed"
    assert "no multi-device" in result["error"] and "--backend tensorflow / jax" in result["error"]
    assert "Traceback" not in out.stderr


def test_bad_backend_names_the_choices(tmp_path):
    out = _run(tmp_path, "be-bad", "--backend", "cntk")
    assert out.returncode != 0
    assert "--backend='cntk'" in out.stderr and "tensorflow, jax, torch" in out.stderr


@pytest.mark.parametrize(("gpus", "cpu_replicas"), [(None, 2), (2, 1), (4, 3)])
def test_torch_on_several_devices_is_refused_before_torch_is_imported(monkeypatch, gpus, cpu_replicas):
    """The refusal follows from the options: no seconds spent importing torch (blocked here) to give it."""
    from payload import training

    monkeypatch.setitem(sys.modules, "torch", None)
    with pytest.raises(training.DeviceError, match=f"torch on {max(gpus or 0, cpu_replicas)} devices"):
        training._torch_devices(gpus, False, cpu_replicas)  # as setup_devices calls it (after choosing the backend)
