"""Shared pieces of the tf_cnn_benchmarks-style throughput runs (seed 004).

keras.applications models with ``weights=None`` on ImageNet-shaped synthetic
data (one random batch repeated, as tf_cnn_benchmarks' synthetic mode), SGD
with momentum. Defaults are full scale (224x224x3, 299x299x3 for
Inception v3, 1000 classes); tests shrink ``image_size`` and ``classes``.
Warm-up steps are excluded from images/s; the spread is over per-step rates.
"""

from __future__ import annotations

from payload.benchmarks import _common as c

THROUGHPUT_HELP = {
    "steps": "training steps in total, warm-up included (--steps)",
    "warmup_steps": "steps per attempt excluded from images/s",
    "batch_size": "per-GPU batch size; the study used 16, 32 and 64 (--batch-size)",
    "image_size": "square input size",
    "classes": "output classes",
}


def defaults(image_size: int) -> dict:
    # tf_cnn_benchmarks: 10 warm-up batches + 100 measured batches
    return {"steps": 110, "warmup_steps": 10, "batch_size": 32, "image_size": image_size, "classes": 1000}


def loader(params, global_batch):
    size = params["image_size"]
    return c.single_batch(params, global_batch, (size, size, 3), params["classes"])


def build(app_name: str, params: dict):
    import keras

    app = getattr(keras.applications, app_name)
    size = params["image_size"]
    base = app(weights=None, input_shape=(size, size, 3), classes=params["classes"], classifier_activation=None)
    # logits in the policy dtype, softmax in float32 (Keras mixed-precision guide)
    out = keras.layers.Activation("softmax", dtype="float32")(base.output)
    model = keras.Model(base.input, out, name=app_name.lower())
    model.compile(
        optimizer=keras.optimizers.SGD(learning_rate=0.01, momentum=0.9),
        loss="sparse_categorical_crossentropy",
        metrics=["accuracy"],
    )
    return model
