"""mnist-mlp: Keras' mnist_mlp.py example (seed 002), two Dense 512 layers, RMSprop."""

from __future__ import annotations

from payload import frameworks
from payload.benchmarks import _common as c
from payload.benchmarks.base import Benchmark


def load_data(source, params, global_batch):
    x, y, xv, yv = c.mnist_arrays(source, params)
    flat = lambda a: a.reshape(len(a), 784)  # noqa: E731
    return c.make_data(flat(x), y, flat(xv), yv, params, source)


def build_model(params):
    keras = frameworks.keras()
    model = keras.Sequential(
        [
            keras.Input((784,)),
            keras.layers.Rescaling(1 / 255.0),
            keras.layers.Dense(params["hidden"], activation="relu"),
            keras.layers.Dropout(0.2),
            keras.layers.Dense(params["hidden"], activation="relu"),
            keras.layers.Dropout(0.2),
            c.output_layer(10, "softmax"),
        ]
    )
    return c.compiled(model, keras.optimizers.RMSprop())


BENCHMARK = Benchmark(
    name="mnist-mlp",
    description="MNIST multilayer perceptron (Dense 512-512, dropout 0.2, RMSprop)",
    study="seed 002 (Keras examples mnist_mlp.py)",
    dataset="MNIST 60k/10k, 28x28, 10 classes",
    sample_unit="image",
    defaults={"epochs": 20, "batch_size": 128, "hidden": 512},
    load_data=load_data,
    build_model=build_model,
)
