"""The framework side of a built-in run: devices, strategy, precision, input pipeline, the harness callback.

GPUs get memory growth, so NVML's peak is what the model used; ``--expect-gpu`` without one fails before any
data (tensorflow/benchmarks #497: a container that silently trained on the CPU); tf.data feeds every backend.
"""

from __future__ import annotations

import contextlib
import math
import os
import sys
import time
from dataclasses import dataclass, field

from payload import frameworks
from payload.events import mllog

_DEVICES_CACHE: dict = {}

# --all-reduce -> tf.distribute's cross-device ops. Seed 004's tf_cnn_benchmarks configs: B (replicated,
# NCCL) ~ nccl; C (replicated, parameters on GPU) ~ hierarchical; A (parameters on the CPU) ~ one-device.
ALL_REDUCE_OPS = {
    "nccl": "NcclAllReduce",
    "hierarchical": "HierarchicalCopyAllReduce",
    "one-device": "ReductionToOneDevice",
}


# epochs.csv column -> the Keras log key it reads
LOG_COLUMNS = {"loss": "loss", "acc": "accuracy", "val_loss": "val_loss", "val_acc": "val_accuracy"}


class NoGpuError(RuntimeError):
    """--expect-gpu, but the framework sees no GPU."""


class DeviceError(RuntimeError):
    """The requested devices do not exist."""


class Interrupted(Exception):
    """Raised inside fit when a preemption notice arrives (aborts without validation)."""


@dataclass
class Devices:
    strategy: object
    replicas: int
    gpus_visible: int
    gpus_used: int
    all_reduce: str | None
    gpu_details: dict = field(default_factory=dict)

    @property
    def device(self) -> str:
        return "GPU" if self.gpus_used else "CPU"

    @property
    def strategy_name(self) -> str:
        return getattr(self.strategy, "name", None) or type(self.strategy).__name__


class KerasDistribution:
    """The jax/torch stand-in for a tf.distribute strategy (on several devices, a global DataParallel)."""

    def __init__(self, name: str, replicas: int, distribution=None):
        self.name = name
        self.num_replicas_in_sync = replicas
        self.distribution = distribution

    def scope(self):
        return self.distribution.scope() if self.distribution is not None else contextlib.nullcontext()


def select_backend(backend: str, cpu_replicas: int = 1) -> None:
    """Point Keras at `backend` before it is imported; refuse a switch after (Keras cannot)."""
    keras = sys.modules.get("keras")
    if keras is not None:
        current = keras.config.backend()
        if current != backend:
            raise DeviceError(
                f"--backend {backend}: keras is already loaded with the {current} backend in this process; "
                "run one backend per process (python -m payload run --backend ...)"
            )
        return
    os.environ["KERAS_BACKEND"] = backend
    if backend == "tensorflow" and "jax" not in sys.modules and "tensorflow" not in sys.modules:
        # TensorFlow's tf.lite tries `from jax import jit` at import when jax is installed: seconds of start-up
        # the tensorflow backend never uses. Blocked only while TensorFlow imports: a later `import jax` works.
        sys.modules["jax"] = None
        try:
            with contextlib.suppress(ImportError):  # not installed here: the benchmark's own import says so
                frameworks.tensorflow()
        finally:
            if sys.modules.get("jax", 0) is None:
                del sys.modules["jax"]
    if backend == "jax" and cpu_replicas > 1 and "jax" not in sys.modules:
        # testing aid, like TF's logical CPUs: XLA splits the host into N devices
        flags = os.environ.get("XLA_FLAGS", "")
        os.environ["XLA_FLAGS"] = f"{flags} --xla_force_host_platform_device_count={cpu_replicas}".strip()


def _strategy_for(tf, gpus_used: int, cpu_replicas: int, all_reduce: str = "nccl"):
    if gpus_used > 1:
        devices = [f"/gpu:{i}" for i in range(gpus_used)]
        ops = getattr(tf.distribute, ALL_REDUCE_OPS[all_reduce])()
        return tf.distribute.MirroredStrategy(devices=devices, cross_device_ops=ops), all_reduce
    if gpus_used == 1:
        return tf.distribute.OneDeviceStrategy("/gpu:0"), None
    if cpu_replicas > 1:
        devices = [f"/cpu:{i}" for i in range(cpu_replicas)]
        ops = tf.distribute.ReductionToOneDevice()
        return tf.distribute.MirroredStrategy(devices=devices, cross_device_ops=ops), "reduction-to-one-device"
    # one CPU: as one GPU, a one-device strategy (under the default one, Keras creates the optimizer's
    # and metrics' variables inside the first trace of a train step, and traces it a second time)
    return tf.distribute.OneDeviceStrategy("/cpu:0"), None


def setup_devices(
    gpus: int | None, expect_gpu: bool, cpu_replicas: int = 1, backend: str = "tensorflow", all_reduce: str = "nccl"
) -> Devices:
    """Configure the backend's devices once per process."""
    select_backend(backend, cpu_replicas)
    key = (backend, gpus, cpu_replicas, all_reduce)
    if key not in _DEVICES_CACHE:
        _DEVICES_CACHE[key] = _DEVICE_MAKERS[backend](gpus, expect_gpu, cpu_replicas, all_reduce)
    devices = _DEVICES_CACHE[key]
    if expect_gpu and not devices.gpus_used:
        raise NoGpuError("--expect-gpu is set but no GPU is used (--gpus 0?)")
    return devices


def _hide_gpus_from_tf() -> None:
    """tf.data runs on the host for jax/torch: keep TensorFlow off the GPUs they train on."""
    with contextlib.suppress(RuntimeError):  # already initialised; Keras set TF_FORCE_GPU_ALLOW_GROWTH anyway
        frameworks.tensorflow().config.set_visible_devices([], "GPU")


def _used(gpus: int | None, visible: int, expect_gpu: bool, framework: str, probe: str) -> int:
    """The GPUs to use of those `framework` sees (`probe`: how it looked)."""
    if expect_gpu and not visible:
        raise NoGpuError(
            f"--expect-gpu is set but {framework} sees no GPU ({probe}): check the NVIDIA driver, the container "
            "runtime (--gpus all) and that the image's CUDA matches the GPU; refusing to benchmark the CPU"
        )
    used = visible if gpus is None else gpus
    if used > visible:
        raise DeviceError(f"--gpus {used}: only {visible} GPU(s) visible to {framework}")
    return used


def _jax_devices(gpus: int | None, expect_gpu: bool, cpu_replicas: int, all_reduce: str = "") -> Devices:
    jax, keras = frameworks.jax(), frameworks.keras()
    _hide_gpus_from_tf()
    try:
        physical = jax.devices("gpu")
    except RuntimeError:  # no GPU platform in this jaxlib (the CPU wheel) or no driver
        physical = []
    visible = len(physical)
    used = _used(gpus, visible, expect_gpu, "JAX", "jax.devices('gpu') is empty")
    if used:
        names, device_type = [f"gpu:{i}" for i in range(used)], "GPU"
    else:
        names, device_type = [f"cpu:{i}" for i in range(min(cpu_replicas, len(jax.devices("cpu"))))], "CPU"
    if len(names) > 1:
        dp = keras.distribution.DataParallel(devices=names)
        keras.distribution.set_distribution(dp)
        strategy = KerasDistribution("DataParallel", len(names), dp)
    else:
        strategy = KerasDistribution(f"OneDevice{device_type}", 1)
    details = {"device_name": getattr(physical[0], "device_kind", None)} if used else {}
    return Devices(strategy, strategy.num_replicas_in_sync, visible, used, None, details)


def _refuse_torch_on_several(devices: int) -> None:
    if devices > 1:
        raise DeviceError(
            f"--backend torch on {devices} devices: released Keras (3.x up to 3.15) has no multi-device "
            "distribution for the torch backend (it needs torchrun and Keras >= 3.16). "
            "Use --gpus 1 with torch, or --backend tensorflow / jax for several GPUs"
        )


def _torch_devices(gpus: int | None, expect_gpu: bool, cpu_replicas: int, all_reduce: str = "") -> Devices:
    if not expect_gpu:  # refused from the options alone, before seconds of importing torch and TensorFlow
        _refuse_torch_on_several(max(gpus or 0, cpu_replicas))  # (--expect-gpu first checks for a GPU: exit 3)
    torch = frameworks.torch()
    _hide_gpus_from_tf()
    visible = torch.cuda.device_count() if torch.cuda.is_available() else 0
    used = _used(gpus, visible, expect_gpu, "PyTorch", "torch.cuda.is_available() is False")
    _refuse_torch_on_several(used if used > 1 else cpu_replicas)
    details = {}
    if used:
        cc = torch.cuda.get_device_capability(0)
        details = {"device_name": torch.cuda.get_device_name(0), "compute_capability": cc}
    strategy = KerasDistribution("OneDeviceGPU" if used else "OneDeviceCPU", 1)
    return Devices(strategy, 1, visible, used, None, details)


def _tf_devices(gpus: int | None, expect_gpu: bool, cpu_replicas: int, all_reduce: str) -> Devices:
    tf = frameworks.tensorflow()
    physical = tf.config.list_physical_devices("GPU")
    visible = len(physical)
    used = _used(gpus, visible, expect_gpu, "TensorFlow", "tf.config.list_physical_devices('GPU') is empty")
    try:
        if physical:
            tf.config.set_visible_devices(physical[:used], "GPU")
        for g in physical[:used]:
            tf.config.experimental.set_memory_growth(g, True)
        if cpu_replicas > 1 and not used:
            cpu = tf.config.list_physical_devices("CPU")[0]
            tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * cpu_replicas)
    except RuntimeError as exc:  # already initialised in this process
        raise DeviceError(f"cannot reconfigure TensorFlow devices after initialisation: {exc}") from None
    details = {}
    if used:
        with contextlib.suppress(Exception):
            details = tf.config.experimental.get_device_details(physical[0])
    strategy, reduce_name = _strategy_for(tf, used, cpu_replicas, all_reduce)
    return Devices(strategy, strategy.num_replicas_in_sync, visible, used, reduce_name, details)


_DEVICE_MAKERS = {"tensorflow": _tf_devices, "jax": _jax_devices, "torch": _torch_devices}


@contextlib.contextmanager
def precision_policy(precision: str):
    """The Keras global dtype policy for `precision` (fp32, mixed) within."""
    policies = frameworks.keras().mixed_precision
    old = policies.global_policy().name
    policies.set_global_policy({"fp32": "float32", "mixed": "mixed_float16"}[precision])
    try:
        yield
    finally:
        policies.set_global_policy(old)


@dataclass
class FitPlan:
    epochs: int  # value for fit(epochs=...)
    initial_epoch: int
    steps_per_epoch: int | None
    total_steps: int | None  # throughput: stop exactly here


def fit_plan(kind: str, params: dict, epochs_done: int, steps_done: int, chunk: int) -> FitPlan:
    """How to call fit so the run ends at the requested total across attempts."""
    if kind == "throughput":
        total = params["steps"]
        chunk = max(1, min(chunk, total))
        first = steps_done // chunk
        remaining_chunks = math.ceil((total - steps_done) / chunk)
        return FitPlan(first + remaining_chunks, first, chunk, total)
    return FitPlan(params["epochs"], epochs_done, params.get("steps_per_epoch") or None, None)


def make_datasets(data, global_batch: int, seed: int, steps_per_epoch: int | None):
    """tf.data pipelines: shuffled full batches (exact samples/s) for training, batched held-out data."""
    tf = frameworks.tensorflow()
    if data.repeat_single_batch:
        return tf.data.Dataset.from_tensors((data.x_train, data.y_train)).repeat(), None
    if data.train_samples < global_batch:
        raise ValueError(
            f"{data.train_samples} training samples < global batch {global_batch}; "
            "lower --batch-size or raise the 'samples' parameter"
        )
    train = tf.data.Dataset.from_tensor_slices((data.x_train, data.y_train))
    train = train.shuffle(min(data.train_samples, 50_000), seed=seed, reshuffle_each_iteration=True)
    if steps_per_epoch:
        train = train.repeat()
    train = train.batch(global_batch, drop_remainder=True)
    val = None
    if data.x_val is not None and len(data.x_val):
        val = tf.data.Dataset.from_tensor_slices((data.x_val, data.y_val)).batch(global_batch)
    if data.transform is not None:
        train = train.map(data.transform, num_parallel_calls=tf.data.AUTOTUNE)
        val = val.map(data.transform, num_parallel_calls=tf.data.AUTOTUNE) if val is not None else None
    return train.prefetch(tf.data.AUTOTUNE), (val.prefetch(tf.data.AUTOTUNE) if val is not None else None)


def finite(value) -> float | None:
    """`value` as a finite float, else None (a loss may be NaN, a log may hold anything)."""
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None


def make_callback_class():
    """The callback class, built when keras may load."""

    class HarnessCallback(frameworks.keras().callbacks.Callback):
        """Timing, epoch rows, MLLOG and stop checks with minimal per-step work."""

        def __init__(self, *, notice, total_steps, steps_done, epoch_offset, on_epoch_done, time_last_step=False):
            super().__init__()
            self.time_last_step = time_last_step  # no validation pass between last step and epoch end
            self.notice = notice
            self.total_steps = total_steps
            self.steps_done = steps_done  # before this attempt
            self.epoch_offset = epoch_offset  # rows already written by earlier attempts
            self.on_epoch_done = on_epoch_done
            self.step_times: list[float] = []
            self.steps = 0
            self.rows: list[dict] = []
            self._t_last = self._t_epoch = 0.0

        def on_epoch_begin(self, epoch, logs=None):
            mllog("epoch_start", metadata={"epoch_num": self.epoch_offset + len(self.rows) + 1})
            self._t_epoch = time.perf_counter()
            self._t_last = None

        def on_train_batch_begin(self, batch, logs=None):
            # Only *begin* is hooked: overriding on_train_batch_end would make Keras convert the logs to Python
            # floats after every step (a device sync) and turn off its async callback dispatch.
            now = time.perf_counter()
            if self._t_last is not None:
                self.step_times.append(now - self._t_last)  # duration of the previous step
            self._t_last = now
            if self.notice.is_set():
                raise Interrupted()  # before this step starts: self.steps steps are complete
            self.steps += 1
            if self.total_steps is not None and self.steps_done + self.steps >= self.total_steps:
                self.model.stop_training = True  # this is the last step

        def on_epoch_end(self, epoch, logs=None):
            now = time.perf_counter()
            elapsed = now - self._t_epoch
            if self.time_last_step and self._t_last is not None:
                self.step_times.append(now - self._t_last)
            logs = logs or {}
            n = self.epoch_offset + len(self.rows) + 1
            row = {"epoch": n, "elapsed": round(elapsed, 4), **{c: finite(logs.get(k)) for c, k in LOG_COLUMNS.items()}}
            self.rows.append(row)
            mllog("epoch_stop", metadata={"epoch_num": n})
            if row["val_acc"] is not None:
                mllog("eval_accuracy", row["val_acc"], metadata={"epoch_num": n})
            self.on_epoch_done(self, row)

    return HarnessCallback
