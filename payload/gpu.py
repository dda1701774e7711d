"""What the machine is, for result.json: GPU facts and sampling through NVML (nvidia-ml-py; without it every
field is None, "not measured", never 0), the host's CPU and memory, and the software versions that ran (a
framework's only when the run imported it).
"""

from __future__ import annotations

import contextlib
import os
import platform
import sys
import threading

from payload import __version__

_GIB = 1024**3
GPU_TOTALS = {"util_sum": 0.0, "util_n": 0, "mem_peak": None, "power_sum": 0.0, "power_n": 0}


def _nvml():
    import pynvml  # optional: nvidia-ml-py, the payload extra; without it nothing is measured

    return pynvml


def _text(v) -> str:
    return v.decode() if isinstance(v, bytes) else str(v)


def nvml_info() -> dict:
    facts = "gpu_model gpus_nvml gpu_memory_gb driver_version compute_capability nvml_cuda_driver nvml_error"
    info = {**dict.fromkeys(facts.split()), "gpus_nvml": 0}
    try:
        pynvml = _nvml()
        pynvml.nvmlInit()
    except Exception as exc:  # noqa: BLE001 - ImportError, NVMLError_LibraryNotFound, ...
        info["nvml_error"] = f"NVML unavailable: {exc}"
        return info
    try:
        count = pynvml.nvmlDeviceGetCount()
        info["gpus_nvml"] = count
        info["driver_version"] = _text(pynvml.nvmlSystemGetDriverVersion())
        with contextlib.suppress(Exception):
            v = pynvml.nvmlSystemGetCudaDriverVersion()
            info["nvml_cuda_driver"] = f"{v // 1000}.{(v % 1000) // 10}"
        if count:
            h = pynvml.nvmlDeviceGetHandleByIndex(0)
            info["gpu_model"] = _text(pynvml.nvmlDeviceGetName(h))
            info["gpu_memory_gb"] = round(pynvml.nvmlDeviceGetMemoryInfo(h).total / _GIB, 2)
            with contextlib.suppress(Exception):
                major, minor = pynvml.nvmlDeviceGetCudaComputeCapability(h)
                info["compute_capability"] = f"{major}.{minor}"
    finally:
        pynvml.nvmlShutdown()
    return info


class GpuSampler:
    """Utilisation, memory and power of every GPU every `interval` s while the window is open."""

    def __init__(self, interval: float = 1.0):
        self.interval = interval
        self.util: list[float] = []
        self.power_w: list[float] = []
        self.mem_peak_bytes: int | None = None
        self.available = False
        self.error: str | None = None
        self._active = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._handles = []

    def start(self) -> GpuSampler:
        try:
            pynvml = _nvml()
            pynvml.nvmlInit()
            self._handles = [pynvml.nvmlDeviceGetHandleByIndex(i) for i in range(pynvml.nvmlDeviceGetCount())]
            self.available = bool(self._handles)
        except Exception as exc:  # noqa: BLE001
            self.error = f"NVML unavailable: {exc}"
            return self
        if self.available:
            self._thread = threading.Thread(target=self._run, name="gpubench-nvml", daemon=True)
            self._thread.start()
        return self

    def begin_window(self) -> None:
        self._active.set()

    def end_window(self) -> None:
        self._active.clear()

    def _sample(self, pynvml) -> None:
        utils, power = [], []
        for h in self._handles:
            utils.append(float(pynvml.nvmlDeviceGetUtilizationRates(h).gpu))
            used = int(pynvml.nvmlDeviceGetMemoryInfo(h).used)
            self.mem_peak_bytes = max(self.mem_peak_bytes or 0, used)
            with contextlib.suppress(Exception):  # not every board reports power
                power.append(pynvml.nvmlDeviceGetPowerUsage(h) / 1000.0)
        self.util.append(sum(utils) / len(utils))
        if power:
            self.power_w.append(sum(power) / len(power))

    def _run(self) -> None:
        pynvml = _nvml()
        while not self._stop.is_set():
            if self._active.is_set():
                try:
                    self._sample(pynvml)
                except Exception as exc:  # noqa: BLE001
                    self.error = f"NVML sampling failed: {exc}"
            self._stop.wait(self.interval)

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
        if self.available:
            with contextlib.suppress(Exception):
                _nvml().nvmlShutdown()

    def add_to(self, totals: dict) -> dict:
        """Fold this attempt's samples into `totals` (GPU_TOTALS)."""
        totals["util_sum"] += sum(self.util)
        totals["util_n"] += len(self.util)
        totals["power_sum"] += sum(self.power_w)
        totals["power_n"] += len(self.power_w)
        if self.mem_peak_bytes:
            totals["mem_peak"] = max(totals["mem_peak"] or 0, self.mem_peak_bytes)
        return totals

    def summary(self, totals: dict | None = None) -> dict:
        """Metrics for result.json over `totals` (default: this sampler's own)."""
        h = totals if totals is not None else self.add_to(dict(GPU_TOTALS))
        return {
            "gpu_utilization_mean": round(h["util_sum"] / h["util_n"], 2) if h["util_n"] else None,
            "gpu_memory_peak_gb": round(h["mem_peak"] / _GIB, 3) if h["mem_peak"] else None,
            "gpu_power_mean_w": round(h["power_sum"] / h["power_n"], 1) if h["power_n"] else None,
            "gpu_samples": h["util_n"] if self.available or h["util_n"] else None,
        }


# result.software key -> the importable module whose installed distribution carries the version: what a
# built-in run imported, and what a workload's processes imported or installed (payload.workloads.imports)
FRAMEWORKS = {"torch": "torch", "tensorflow": "tensorflow", "keras": "keras", "jax": "jax", "jaxlib": "jaxlib"}


def software_facts(backend: str = "tensorflow") -> dict:
    """Versions of what ran."""
    facts = {
        "payload_version": __version__,
        "python": platform.python_version(),
        **{key: getattr(sys.modules.get(module), "__version__", None) for key, module in FRAMEWORKS.items()},
        "cuda_build": None,
        "cudnn_build": None,
        "nvml_cuda_driver": None,
        "image": os.environ.get("GPUBENCH_IMAGE") or None,
        "platform": platform.platform(),
        "backend": backend,
        "torch_cuda_build": getattr(getattr(sys.modules.get("torch"), "version", None), "cuda", None),
    }
    tf = sys.modules.get("tensorflow")
    if tf is not None:
        with contextlib.suppress(Exception):  # CPU builds lack some keys on some versions
            info = tf.sysconfig.get_build_info()
            facts["cuda_build"] = info.get("cuda_version") or None
            facts["cudnn_build"] = info.get("cudnn_version") or None
    keras = sys.modules.get("keras")
    if keras is not None:
        with contextlib.suppress(Exception):  # a partially imported keras: keep the requested one
            facts["backend"] = keras.config.backend()  # what Keras actually runs on
    return facts


def _proc_line(path: str, prefix: str) -> str | None:
    """The first line of a /proc file that starts with `prefix` (None without one, or off Linux)."""
    with contextlib.suppress(OSError), open(path) as f:
        return next((line for line in f if line.startswith(prefix)), None)
    return None


def host_facts() -> dict:
    cpu, memory = _proc_line("/proc/cpuinfo", "model name"), _proc_line("/proc/meminfo", "MemTotal:")
    return {
        "cpu_model": cpu.split(":", 1)[1].strip() if cpu else platform.processor() or None,
        "cpu_count": os.cpu_count(),
        "memory_gb": round(int(memory.split()[1]) / 1024**2, 1) if memory else None,
    }
