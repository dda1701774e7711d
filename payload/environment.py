"""Software and host facts for result.json; a framework's versions only when the run already imported it."""

from __future__ import annotations

import contextlib
import os
import platform
import sys

from payload import __version__

# result.software key -> the importable module whose installed distribution carries the version: what a
# built-in run imported, and what a workload's processes imported or installed (payload.workloads.imports)
FRAMEWORKS = {"torch": "torch", "tensorflow": "tensorflow", "keras": "keras", "jax": "jax", "jaxlib": "jaxlib"}


def _version(name: str) -> str | None:
    module = sys.modules.get(name)
    return getattr(module, "__version__", None) if module is not None else None


def software_facts(backend: str = "tensorflow") -> dict:
    """Versions of what ran."""
    facts = {
        "payload_version": __version__,
        "python": platform.python_version(),
        **{key: _version(module) for key, module in FRAMEWORKS.items()},
        "cuda_build": None,
        "cudnn_build": None,
        "nvml_cuda_driver": None,
        "image": os.environ.get("GPUBENCH_IMAGE") or None,
        "platform": platform.platform(),
        "backend": backend,
        "torch_cuda_build": None,
    }
    torch = sys.modules.get("torch")
    if torch is not None:
        facts["torch_cuda_build"] = getattr(getattr(torch, "version", None), "cuda", None)
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
