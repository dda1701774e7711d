"""Helpers shared by the benchmark modules (numpy only at import time)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from payload import datasets, frameworks
from payload.benchmarks.base import Data

if TYPE_CHECKING:
    import numpy as np


def rng_for(params: dict) -> np.random.Generator:
    np = frameworks.numpy()
    return np.random.default_rng(params.get("seed", 1234))


def cap(x, y, n):
    return (x, y) if not n else (x[:n], y[:n])


def holdout(x, y, fraction: float, rng: np.random.Generator):
    """Shuffle, then keep the last ``fraction`` as held-out data (seed 000: 90/10)."""
    idx = rng.permutation(len(y))
    x, y = x[idx], y[idx]
    cut = max(1, int(round(len(y) * fraction)))
    return x[:-cut], y[:-cut], x[-cut:], y[-cut:]


def make_data(x_train, y_train, x_val, y_val, params, source, **kw) -> Data:
    x_train, y_train = cap(x_train, y_train, params.get("samples"))
    x_val, y_val = cap(x_val, y_val, params.get("val_samples"))
    return Data(x_train, y_train, x_val, y_val, source=str(source), **kw)


def n_synthetic(params: dict, full: int) -> int:
    return int(params.get("samples") or full)


def synthetic(make, params: dict, full: int, val: int, *shape) -> tuple:
    """(x, y, x_val, y_val) from `make` (datasets.synthetic_images / _sequences) at the study's sizes, or
    the `samples` / `val_samples` caps."""
    rng = rng_for(params)
    x, y = make(rng, n_synthetic(params, full), *shape)
    return (x, y, *make(rng, params.get("val_samples") or val, *shape))


def output_layer(units: int, activation: str):
    """Final Dense in float32: softmax/sigmoid stay stable under mixed_float16."""
    return frameworks.keras().layers.Dense(units, activation=activation, dtype="float32")


def compiled(model, optimizer, loss: str = "sparse_categorical_crossentropy"):
    """The model compiled with the `accuracy` metric every benchmark reports."""
    model.compile(optimizer=optimizer, loss=loss, metrics=["accuracy"])
    return model


def mnist_arrays(source, params):
    """MNIST (x, y, x_val, y_val) as 28x28 images: mnist.npz / Keras download,
    or synthetic of the same shapes and 10 classes. mnist-mlp and mnist-cnn
    differ only in how they reshape them."""
    if source.mode == "synthetic":
        return synthetic(datasets.synthetic_images, params, 60000, 10000, (28, 28), 10)
    (x, y), (xv, yv) = datasets.read_mnist(source)
    return x, y, xv, yv


def bilstm_classifier(maxlen: int, vocabulary: int):
    """Embedding 128 -> bidirectional LSTM 64 -> dropout 0.5 -> sigmoid, adam:
    the model of seed 000 and of Keras' imdb_bidirectional_lstm.py (seed 002).
    Keras 3's LSTM runs on cuDNN by itself on a GPU with these defaults."""
    keras = frameworks.keras()
    L = keras.layers
    model = keras.Sequential(
        [
            keras.Input((maxlen,), dtype="int32"),
            L.Embedding(vocabulary, 128),
            L.Bidirectional(L.LSTM(64)),
            L.Dropout(0.5),
            output_layer(1, "sigmoid"),
        ]
    )
    return compiled(model, "adam", "binary_crossentropy")


def single_batch(params: dict, global_batch: int, shape: tuple, classes: int) -> Data:
    """tf_cnn_benchmarks-style synthetic input: one batch, repeated forever."""
    np = frameworks.numpy()
    rng = rng_for(params)
    x = rng.random((global_batch, *shape), dtype=np.float32)
    y = rng.integers(0, classes, size=global_batch).astype(np.int32)
    return Data(x, y, source="synthetic", repeat_single_batch=True)
