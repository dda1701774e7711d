"""The heavy libraries of the training paths, each imported at its first use: the payload lists benchmarks
and runs a workload without them, and Keras reads KERAS_BACKEND at import (training.select_backend sets it).
"""

from __future__ import annotations

from types import ModuleType


def keras() -> ModuleType:
    import keras  # heavy: seconds; reads KERAS_BACKEND at import (training.select_backend sets it)

    return keras


def tensorflow() -> ModuleType:
    import tensorflow  # heavy: seconds; the input pipeline of every backend

    return tensorflow


def jax() -> ModuleType:
    import jax  # heavy: the jax backend only

    return jax


def torch() -> ModuleType:
    import torch  # heavy: the torch backend only

    return torch


def numpy() -> ModuleType:
    import numpy  # heavy for a workload's job, whose image may not hold it: checkpoints of built-ins only

    return numpy
