"""catsdogs-resnet50: seed 003's transfer learning, timed the way the study summed it.

Seed 003 (KDnuggets, Nov 2018, after fast.ai's dogs_cats example) timed and summed three operations;
the Keras version: ResNet-50 (keras.applications, ImageNet weights, downloaded in ``build_model``
before any phase is timed, as the study timed a second run) with a new 2-class head and fast.ai's
augmentation reduced to flip / rotate / zoom; phase ``frozen`` (body frozen, one-cycle at ``max_lr``),
phase ``unfrozen`` (everything, one-cycle at ``unfrozen_max_lr``, ``pct_start`` 0.05: Keras has no
discriminative rates, so the top of fast.ai's ``slice(1e-5, 3e-4)``), phase ``tta`` (fast.ai v1's
test-time augmentation, beta 0.4: the run's final accuracy).

``--data``: fast.ai's dogscats layout (``{train,valid}/{cats,dogs}/*.jpg``, also under ``dogscats/``),
Kaggle's (``train/cat.N.jpg``: a seeded ``val_fraction`` held out), ``download`` (fast.ai's archive) or
``synthetic``; images are decoded in tf.data per batch. A phase changes which weights train, so an
interrupted run starts again from the beginning.
"""

from __future__ import annotations

import math
import os
import re
import time
from typing import TYPE_CHECKING

from payload import frameworks
from payload.benchmarks.base import Benchmark, Data, cap, compiled, n_synthetic, output_layer, rng_for

if TYPE_CHECKING:
    import numpy as np

# fast.ai's URLs.DOGS (fastai v1 datasets.py), fetched by untar_data as <URL>.tgz
DOGSCATS_URL = "https://files.fast.ai/data/examples/dogscats.tgz"
CLASSES = ("cat", "dog")
# --data synthetic: uint8 arrays in memory, so fewer images than the real 23,000 / 2,000
# (2,048 x 224 x 224 x 3 bytes = 308 MB); raise with --param samples=N for longer runs.
SYNTHETIC_TRAIN, SYNTHETIC_VALID = 2048, 512
_KAGGLE_NAME = re.compile(r"^(cat|dog)\.\d+\.jpe?g$", re.IGNORECASE)
_IMAGE = re.compile(r"\.jpe?g$", re.IGNORECASE)


class DataLayoutError(FileNotFoundError):
    """The --data directory is in no cats-vs-dogs layout this benchmark reads."""


def _fastai(root: str):
    """{train,valid}/{cats,dogs}/*.jpg -> (train paths, labels, valid paths, labels), or None."""
    out = []
    for part in ("train", "valid"):
        files, labels = [], []
        for label, name in enumerate(("cats", "dogs")):
            folder = os.path.join(root, part, name)
            if not os.path.isdir(folder):
                return None
            found = sorted(os.path.join(folder, f) for f in os.listdir(folder) if _IMAGE.search(f))
            files += found
            labels += [label] * len(found)
        out += [files, labels]
    return tuple(out)


def _kaggle(root: str, val_fraction: float, rng: np.random.Generator):
    """train/cat.N.jpg, train/dog.N.jpg (labels in the names); a seeded hold-out, or None."""
    np = frameworks.numpy()
    folder = os.path.join(root, "train")
    names = sorted(f for f in os.listdir(folder) if _KAGGLE_NAME.match(f)) if os.path.isdir(folder) else []
    if not names:
        return None
    files = np.array([os.path.join(folder, f) for f in names])
    labels = np.array([CLASSES.index(f.split(".", 1)[0].lower()) for f in names])
    idx = rng.permutation(len(files))
    cut = max(1, int(round(len(files) * val_fraction)))
    val, train = idx[:cut], idx[cut:]
    return list(files[train]), list(labels[train]), list(files[val]), list(labels[val])


def find_images(root: str, val_fraction: float = 0.08, seed: int = 1234):
    """(layout, train paths, train labels, valid paths, valid labels) for a dataset directory."""
    np = frameworks.numpy()
    rng = np.random.default_rng(seed)
    for base in (root, os.path.join(root, "dogscats")):
        found = _fastai(base)
        if found and found[0] and found[2]:
            return ("fastai-dogscats", *found)
        found = _kaggle(base, val_fraction, rng)
        if found:
            return ("kaggle-dogs-vs-cats", *found)
    raise DataLayoutError(
        f"--data {root}: no cats-vs-dogs images found. Expected fast.ai's dogscats layout "
        "(train/cats/*.jpg, train/dogs/*.jpg, valid/cats/*.jpg, valid/dogs/*.jpg) or Kaggle's "
        "dogs-vs-cats layout (train/cat.0.jpg, train/dog.0.jpg, ...), directly or under dogscats/"
    )


def _download() -> str:
    keras = frameworks.keras()
    try:
        path = keras.utils.get_file("dogscats.tgz", origin=DOGSCATS_URL, extract=True)
    except Exception as exc:  # noqa: BLE001 - network, moved archive: say what to do instead
        raise DataLayoutError(
            f"could not download {DOGSCATS_URL} ({exc}); download cats vs dogs yourself (fast.ai dogscats "
            "or Kaggle's dogs-vs-cats train.zip) and pass --data DIR"
        ) from None
    return path if os.path.isdir(path) else os.path.dirname(path)


def _decoder(size: int):
    """Batch of JPEG paths -> float32 images in [0, 255], size x size (inside tf.data)."""
    tf = frameworks.tensorflow()

    def one(path):
        img = tf.io.decode_jpeg(tf.io.read_file(path), channels=3)
        return tf.image.resize(img, (size, size))

    def transform(paths, labels):
        images = tf.map_fn(one, paths, fn_output_signature=tf.TensorSpec((size, size, 3), tf.float32))
        return images, labels

    return transform


def _to_float(images, labels):
    tf = frameworks.tensorflow()
    return tf.cast(images, tf.float32), labels


def load_data(source, params, global_batch):
    np = frameworks.numpy()
    size = params["image_size"]
    if source.mode == "synthetic":  # random pixels: timing only, accuracy means nothing
        rng = rng_for(params)
        n, nv = n_synthetic(params, SYNTHETIC_TRAIN), params.get("val_samples") or SYNTHETIC_VALID
        x = rng.integers(0, 256, (n, size, size, 3), dtype=np.uint8)
        xv = rng.integers(0, 256, (nv, size, size, 3), dtype=np.uint8)
        y, yv = rng.integers(0, 2, n).astype(np.int32), rng.integers(0, 2, nv).astype(np.int32)
        return Data(x, y, xv, yv, source="synthetic", transform=_to_float, info={"layout": "synthetic"})
    root = _download() if source.mode == "download" else source.path
    layout, xt, yt, xv, yv = find_images(root, params["val_fraction"], params.get("seed", 1234))
    # shuffle before capping so a small --param samples keeps both classes
    rng = rng_for(params)
    order = rng.permutation(len(xt))
    xt, yt = [xt[i] for i in order], [yt[i] for i in order]
    xt, yt = cap(xt, yt, params.get("samples"))
    xv, yv = cap(xv, yv, params.get("val_samples"))
    return Data(
        np.array(xt),
        np.array(yt, dtype=np.int32),
        np.array(xv),
        np.array(yv, dtype=np.int32),
        source=str(source),
        transform=_decoder(size),
        info={"layout": layout, "train_images": len(xt), "valid_images": len(xv)},
    )


def one_cycle_class():
    """fast.ai's one-cycle learning rate as a Keras schedule (built lazily: keras loads at run time)."""
    keras = frameworks.keras()
    ops = keras.ops

    @keras.saving.register_keras_serializable(package="gpubench")
    class OneCycle(keras.optimizers.schedules.LearningRateSchedule):
        """Cosine from max_lr/div to max_lr over pct_start of the steps, then cosine
        down to max_lr/(div*1e4): fast.ai v1 fit_one_cycle's defaults (div 25)."""

        def __init__(self, max_lr, total_steps, pct_start=0.3, div_factor=25.0, final_div=None):
            self.max_lr = float(max_lr)
            self.total_steps = max(1, int(total_steps))
            self.pct_start = float(pct_start)
            self.div_factor = float(div_factor)
            self.final_div = float(final_div) if final_div else self.div_factor * 1e4

        def __call__(self, step):
            step = ops.cast(step, "float32")
            up = max(1.0, math.floor(self.total_steps * self.pct_start))
            down = max(1.0, self.total_steps - up)
            low, high, end = self.max_lr / self.div_factor, self.max_lr, self.max_lr / self.final_div

            def cos(start, stop, frac):
                frac = ops.clip(frac, 0.0, 1.0)
                return stop + (start - stop) / 2.0 * (1.0 + ops.cos(math.pi * frac))

            return ops.where(step < up, cos(low, high, step / up), cos(high, end, (step - up) / down))

        def get_config(self):
            return {k: getattr(self, k) for k in ("max_lr", "total_steps", "pct_start", "div_factor", "final_div")}

    return OneCycle


def build_model(params):
    keras = frameworks.keras()
    L = keras.layers
    size = params["image_size"]
    weights = None if str(params["weights"]).lower() in ("none", "") else params["weights"]
    inputs = keras.Input((size, size, 3))
    augment = keras.Sequential(
        [L.RandomFlip("horizontal"), L.RandomRotation(10 / 360), L.RandomZoom((-0.1, 0.1))], name="augment"
    )
    x = augment(inputs)
    # caffe-style ImageNet preprocessing (RGB->BGR, mean subtraction), as keras.applications.resnet50 expects
    x = L.Lambda(keras.applications.resnet50.preprocess_input, name="preprocess")(x)
    body = keras.applications.ResNet50(weights=weights, include_top=False, input_shape=(size, size, 3))
    body.trainable = False
    x = body(x)
    x = L.GlobalAveragePooling2D()(x)
    x = L.Dense(512, activation="relu")(x)
    x = L.Dropout(0.5)(x)
    outputs = output_layer(len(CLASSES), "softmax")(x)
    model = keras.Model(inputs, outputs, name="catsdogs_resnet50")
    # steps per epoch are not known before the data: the phases compile again with the real count
    _compile(model, params["max_lr"], params["frozen_epochs"] * int(params.get("steps_per_epoch") or 1), 0.3)
    return model


def _compile(model, max_lr: float, total_steps: int, pct_start: float) -> None:
    keras = frameworks.keras()
    schedule = one_cycle_class()(max_lr, total_steps, pct_start=pct_start)
    # fast.ai's one-cycle also cycles momentum 0.95 -> 0.85; Adam's beta_1 stays at 0.9 here
    compiled(model, keras.optimizers.Adam(learning_rate=schedule))


def _predict(model, x):
    return frameworks.keras().ops.convert_to_numpy(model.predict_on_batch(x))


def _tta_accuracy(model, val_ds, n: int, beta: float) -> float | None:
    """fast.ai v1 TTA: beta x plain prediction + (1 - beta) x mean of n augmented ones."""
    keras = frameworks.keras()
    augment = model.get_layer("augment")
    right = total = 0
    for x, y in val_ds:
        x = keras.ops.convert_to_numpy(x)
        plain = _predict(model, x)
        augmented = (
            sum(_predict(model, keras.ops.convert_to_numpy(augment(x, training=True))) for _ in range(n)) / n
            if n
            else plain
        )
        probs = beta * plain + (1 - beta) * augmented
        y = keras.ops.convert_to_numpy(y)
        right += int((probs.argmax(axis=-1) == y).sum())
        total += len(y)
    return right / total if total else None


def train(model, train_ds, val_ds, run) -> dict:
    """The study's three timed operations; ``run`` is payload.builtin's PhaseRun."""
    params = run.params
    frozen, total = params["frozen_epochs"], params["epochs"]
    if not 0 < frozen < total:
        raise ValueError(
            f"catsdogs-resnet50: frozen_epochs={frozen} must be between 1 and epochs-1 (epochs={total}); "
            "the study trained 6 frozen then 6 unfrozen epochs (epochs=12, frozen_epochs=6)"
        )
    spe, seconds = run.steps_per_epoch, {}

    def phase(name: str, epochs: int, initial: int, max_lr: float, pct_start: float) -> None:
        t0 = time.perf_counter()
        with run.scope():
            model.get_layer("resnet50").trainable = name == "unfrozen"
            _compile(model, max_lr, (epochs - initial) * spe, pct_start)
        run.fit(model, train_ds, val_ds, epochs=epochs, initial_epoch=initial)
        seconds[name] = round(time.perf_counter() - t0, 3)

    phase("frozen", frozen, 0, params["max_lr"], 0.3)
    phase("unfrozen", total, frozen, params["unfrozen_max_lr"], params["unfrozen_pct_start"])
    t0 = time.perf_counter()
    accuracy = _tta_accuracy(model, val_ds, params["tta_steps"], params["tta_beta"]) if val_ds is not None else None
    seconds["tta"] = round(time.perf_counter() - t0, 3)
    seconds["total"] = round(sum(seconds.values()), 3)
    return {"phase_seconds": seconds, "final_accuracy": accuracy}


BENCHMARK = Benchmark(
    name="catsdogs-resnet50",
    description=(
        "cats vs dogs transfer learning: ResNet-50 (ImageNet weights) frozen then unfrozen, one-cycle "
        "learning rate, test-time augmentation; time per phase and summed"
    ),
    study="seed 003 (fast.ai v1 dogs_cats: fit_one_cycle(6), unfreeze, fit_one_cycle(6, 3e-4), TTA)",
    dataset="cats vs dogs (fast.ai dogscats or Kaggle dogs-vs-cats), 224x224, 2 classes",
    defaults={
        "epochs": 12,
        "frozen_epochs": 6,
        "batch_size": 64,
        "image_size": 224,
        "weights": "imagenet",
        "max_lr": 3e-3,
        "unfrozen_max_lr": 3e-4,
        "unfrozen_pct_start": 0.05,
        "tta_steps": 8,
        "tta_beta": 0.4,
        "val_fraction": 0.08,
    },
    load_data=load_data,
    build_model=build_model,
    param_help={
        "epochs": "epochs in total, frozen and unfrozen (--epochs)",
        "frozen_epochs": "epochs with the ResNet-50 body frozen; the rest train everything",
        "image_size": "square input size (the study: 224)",
        "weights": "imagenet (downloaded by Keras) or none (random init, for tests)",
        "max_lr": "one-cycle peak learning rate, frozen phase (fast.ai default 3e-3)",
        "unfrozen_max_lr": "one-cycle peak learning rate, unfrozen phase (top of the study's slice(1e-5, 3e-4))",
        "unfrozen_pct_start": "fraction of the unfrozen phase spent warming up (the study: 0.05)",
        "tta_steps": "augmented prediction passes averaged for TTA (fast.ai v1: 8)",
        "tta_beta": "weight of the plain prediction in the TTA blend (fast.ai v1: 0.4)",
        "val_fraction": "Kaggle layout only: share of train/ held out (fast.ai's valid/ is 2,000 of 25,000)",
    },
    train=train,
    resumable=False,
)
