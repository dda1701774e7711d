"""The MNIST MLP of Keras' examples (seed 002's first benchmark), as a gpubench workload.

Runs on any Keras 3 backend (KERAS_BACKEND=tensorflow|jax|torch, set in the
spec's env). Offline by default: DATA=synthetic (the spec's default) generates
digit-shaped random data, so accuracy is not MNIST's; DATA=download reads the
real MNIST through Keras' download (see README.md). Prints a
GPUBENCH_METRICS progress line every METRICS_EVERY seconds (default 2) with
the samples and training seconds so far, so `gpubench bench` can probe it,
and the totals at the end (docs/workloads.md).
"""

from __future__ import annotations

import json
import os
import time

import numpy as np

DATA_CHOICES = ("synthetic", "download")


def synthetic(samples: int):
    """Ten random 'digit' centres plus noise: MNIST's shapes, no network."""
    rng = np.random.default_rng(1234)
    centers = rng.normal(size=(10, 784)).astype("float32")
    y = rng.integers(0, 10, size=samples + samples // 5)
    x = centers[y] + rng.normal(scale=2.0, size=(len(y), 784)).astype("float32")
    return (x[:samples], y[:samples]), (x[samples:], y[samples:])


def download():
    """The real MNIST through Keras' download; a clear message (no traceback) when it cannot be fetched."""
    import keras

    try:
        return keras.datasets.mnist.load_data()
    except Exception as exc:  # noqa: BLE001 - any network or file error: say what to do instead
        raise SystemExit(
            f"keras-mnist: DATA=download could not fetch MNIST ({type(exc).__name__}: {exc}). "
            "Run offline with DATA=synthetic (the spec's default), or fetch it where the network allows."
        ) from None


def load(data: str, samples: int):
    if data not in DATA_CHOICES:
        raise SystemExit(f"keras-mnist: DATA={data!r} is not one of {', '.join(DATA_CHOICES)}")
    if data == "synthetic":
        return synthetic(samples)
    (x, y), (xt, yt) = download()
    x = x.reshape(-1, 784).astype("float32") / 255
    xt = xt.reshape(-1, 784).astype("float32") / 255
    return (x[:samples], y[:samples]), (xt, yt)


def progress(samples: int, seconds: float) -> None:
    """A progress line: cumulative training samples and seconds (what a probe reads)."""
    print("GPUBENCH_METRICS " + json.dumps({"samples": samples, "seconds": round(seconds, 3)}), flush=True)


class Timer:
    """Keras callback: training seconds without the per-epoch validation, and progress lines."""

    def __init__(self, samples_per_epoch: int, batch: int, every: float):
        import keras

        class _Cb(keras.callbacks.Callback):
            def on_epoch_begin(cb, epoch, logs=None):
                cb.t0 = time.perf_counter()

            def on_train_batch_end(cb, batch_index, logs=None):
                cb.last = time.perf_counter()
                if cb.last - self.printed >= every:
                    self.printed = cb.last
                    done = self.samples + min((batch_index + 1) * batch, samples_per_epoch)
                    progress(done, self.seconds + cb.last - cb.t0)

            def on_epoch_end(cb, epoch, logs=None):
                self.seconds += cb.last - cb.t0
                self.samples += samples_per_epoch
                progress(self.samples, self.seconds)

        self.seconds, self.samples, self.printed = 0.0, 0, time.perf_counter()
        self.callback = _Cb()


def main() -> None:
    import keras

    epochs = int(os.environ.get("EPOCHS", 20))
    batch = int(os.environ.get("BATCH_SIZE", 128))
    samples = int(os.environ.get("SAMPLES", 60000))
    data = os.environ.get("DATA", "synthetic")
    (x, y), (xv, yv) = load(data, samples)
    model = keras.Sequential(
        [
            keras.Input((784,)),
            keras.layers.Dense(512, activation="relu"),
            keras.layers.Dropout(0.2),
            keras.layers.Dense(512, activation="relu"),
            keras.layers.Dropout(0.2),
            keras.layers.Dense(10, activation="softmax"),
        ]
    )
    model.compile(optimizer=keras.optimizers.RMSprop(), loss="sparse_categorical_crossentropy", metrics=["accuracy"])
    timer = Timer(len(x), batch, float(os.environ.get("METRICS_EVERY", 2)))
    hist = model.fit(
        x, y, batch_size=batch, epochs=epochs, validation_data=(xv, yv), callbacks=[timer.callback], verbose=2
    )
    metrics = {
        "samples_per_second": round(len(x) * epochs / timer.seconds, 3),
        "samples": len(x) * epochs,
        "seconds": round(timer.seconds, 3),
        "accuracy": float(hist.history["val_accuracy"][-1]),
        "loss": float(hist.history["val_loss"][-1]),
        "epochs": epochs,
        "batch_size": batch,
        "keras": keras.__version__,
        "backend": keras.config.backend(),
        "data": data,  # accuracy on synthetic data says nothing about MNIST
    }
    print("GPUBENCH_METRICS " + json.dumps(metrics), flush=True)


if __name__ == "__main__":
    main()
