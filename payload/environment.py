"""Software and host facts for result.json (what is needed to reproduce a run).

TensorFlow facts are read only when TensorFlow is already imported by the
training path; the rest is standard library.
"""

from __future__ import annotations

import os
import platform
import sys

from payload import __version__

__all__ = ["host_facts", "software_facts"]


def software_facts() -> dict:
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
    }
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
