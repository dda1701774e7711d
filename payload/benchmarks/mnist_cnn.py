"""mnist-cnn: Keras' mnist_cnn.py example (seed 002), two conv layers, Adadelta(lr=1.0)."""

from __future__ import annotations

from payload import frameworks
from payload.benchmarks import _common as c
from payload.benchmarks.base import Benchmark


def load_data(source, params, global_batch):
    x, y, xv, yv = c.mnist_arrays(source, params)
    chan = lambda a: a.reshape(len(a), 28, 28, 1)  # noqa: E731
    return c.make_data(chan(x), y, chan(xv), yv, params, source)


def build_model(params):
    keras = frameworks.keras()
    L = keras.layers
    model = keras.Sequential(
        [
            keras.Input((28, 28, 1)),
            L.Rescaling(1 / 255.0),
            L.Conv2D(32, 3, activation="relu"),
            L.Conv2D(64, 3, activation="relu"),
            L.MaxPooling2D(2),
            L.Dropout(0.25),
            L.Flatten(),
            L.Dense(128, activation="relu"),
            L.Dropout(0.5),
            c.output_layer(10, "softmax"),
        ]
    )
    # Keras 2's Adadelta default lr was 1.0; Keras 3's 0.001 would barely train
    return c.compiled(model, keras.optimizers.Adadelta(learning_rate=1.0))


BENCHMARK = Benchmark(
    name="mnist-cnn",
    description="MNIST convnet (Conv 32-64, max-pool, Dense 128, Adadelta)",
    study="seed 002 (Keras examples mnist_cnn.py)",
    dataset="MNIST 60k/10k, 28x28x1, 10 classes",
    sample_unit="image",
    defaults={"epochs": 12, "batch_size": 128},
    load_data=load_data,
    build_model=build_model,
)
