"""cifar10-cnn: Keras' cifar10_cnn.py example (seed 002); its ImageDataGenerator (10% shifts, flips)
becomes preprocessing layers in the model, on the GPU and active only while training."""

from __future__ import annotations

from payload import datasets, frameworks
from payload.benchmarks import _common as c
from payload.benchmarks.base import Benchmark


def load_data(source, params, global_batch):
    if source.mode == "synthetic":
        x, y, xv, yv = c.synthetic(datasets.synthetic_images, params, 50000, 10000, (32, 32, 3), 10)
    else:
        (x, y), (xv, yv) = datasets.read_cifar10(source)
    return c.make_data(x, y, xv, yv, params, source)


def build_model(params):
    keras = frameworks.keras()
    L = keras.layers
    aug = (
        [L.RandomTranslation(0.1, 0.1, fill_mode="nearest"), L.RandomFlip("horizontal")]
        if params["augmentation"]
        else []
    )
    model = keras.Sequential(
        [
            keras.Input((32, 32, 3)),
            L.Rescaling(1 / 255.0),
            *aug,
            L.Conv2D(32, 3, padding="same", activation="relu"),
            L.Conv2D(32, 3, activation="relu"),
            L.MaxPooling2D(2),
            L.Dropout(0.25),
            L.Conv2D(64, 3, padding="same", activation="relu"),
            L.Conv2D(64, 3, activation="relu"),
            L.MaxPooling2D(2),
            L.Dropout(0.25),
            L.Flatten(),
            L.Dense(512, activation="relu"),
            L.Dropout(0.5),
            c.output_layer(10, "softmax"),
        ]
    )
    opt = keras.optimizers.RMSprop(learning_rate=keras.optimizers.schedules.InverseTimeDecay(1e-4, 1, 1e-6))
    return c.compiled(model, opt)


BENCHMARK = Benchmark(
    name="cifar10-cnn",
    description="CIFAR-10 convnet (4 conv, Dense 512, RMSprop 1e-4) with shift/flip augmentation",
    study="seed 002 (Keras examples cifar10_cnn.py)",
    dataset="CIFAR-10 50k/10k, 32x32x3, 10 classes",
    sample_unit="image",
    defaults={"epochs": 20, "batch_size": 32, "augmentation": True},
    load_data=load_data,
    build_model=build_model,
    param_help={"augmentation": "random 10% shifts and horizontal flips while training"},
)
