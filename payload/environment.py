"""Software and host facts for result.json; a framework's versions only when the run already imported it."""

from __future__ import annotations

import os
import platform
import sys

from payload import __version__


def _version(name: str) -> str | None:
    module = sys.modules.get(name)
    return getattr(module, "__version__", None) if module is not None else None


def software_facts(backend: str = "tensorflow") -> dict:
    """Versions of what ran; the backend's framework versions only when it was loaded."""
    facts = {
        "payload_version": __version__,
        "python": platform.python_version(),
        "tensorflow": None,
        "keras": None,
        "cuda_build": None,
        "cudnn_build": None,
        "nvml_cuda_driver": None,
        "image": os.environ.get("GPUBENCH_IMAGE") or None,
        "platform": platform.platform(),
        "backend": backend,
        "jax": _version("jax"),
        "jaxlib": _version("jaxlib"),
        "torch": _version("torch"),
        "torch_cuda_build": None,
    }
    torch = sys.modules.get("torch")
    if torch is not None:
        facts["torch_cuda_build"] = getattr(getattr(torch, "version", None), "cuda", None)
    tf = sys.modules.get("tensorflow")
    if tf is not None:
        facts["tensorflow"] = tf.__version__
        try:
            info = tf.sysconfig.get_build_info()
            facts["cuda_build"] = info.get("cuda_version") or None
            facts["cudnn_build"] = info.get("cudnn_version") or None
        except Exception:  # noqa: BLE001 - CPU builds lack some keys on some versions
            pass
    keras = sys.modules.get("keras")
    if keras is not None:
        facts["keras"] = getattr(keras, "__version__", None)
        try:
            facts["backend"] = keras.config.backend()  # what Keras actually runs on
        except Exception:  # noqa: BLE001 - a partially imported keras: keep the requested one
            pass
    return facts


def _cpu_model() -> str | None:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or None


def _memory_gb() -> float | None:
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemTotal:"):
                    return round(int(line.split()[1]) / 1024**2, 1)
    except (OSError, ValueError):
        pass
    return None


def host_facts() -> dict:
    return {"cpu_model": _cpu_model(), "cpu_count": os.cpu_count(), "memory_gb": _memory_gb()}
