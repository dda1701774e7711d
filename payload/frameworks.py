"""The heavy libraries of the training paths, each imported at its first use: the payload lists benchmarks
and runs a workload without them, and Keras reads KERAS_BACKEND at import (training.select_backend sets it).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from types import ModuleType


def _on_first_use(name: str) -> Callable[[], ModuleType]:
    return lambda: importlib.import_module(name)


keras = _on_first_use("keras")  # heavy: seconds; reads KERAS_BACKEND at import
tensorflow = _on_first_use("tensorflow")  # heavy: seconds; the input pipeline of every backend
jax = _on_first_use("jax")  # heavy: the jax backend only
torch = _on_first_use("torch")  # heavy: the torch backend only
numpy = _on_first_use("numpy")  # heavy for a workload's image, which may lack it: built-ins' checkpoints only
