"""resnet50, inception3, vgg16: ImageNet-model images/s on synthetic data (seed 004).

One table (``MODELS``) of keras.applications models with ``weights=None`` on one random ImageNet-shaped
batch repeated (tf_cnn_benchmarks' synthetic mode), SGD with momentum; defaults are full scale, tests
shrink ``image_size`` and ``classes``.
"""

from __future__ import annotations

from functools import partial
from typing import NamedTuple

from payload import frameworks
from payload.benchmarks.base import Benchmark, compiled, single_batch

THROUGHPUT_HELP = {
    "steps": "training steps in total, warm-up included (--steps)",
    "warmup_steps": "steps per attempt excluded from images/s",
    "batch_size": "per-GPU batch size; the study used 16, 32 and 64 (--batch-size)",
    "image_size": "square input size",
    "classes": "output classes",
}


class Model(NamedTuple):
    name: str  # the benchmark's name, also tf_cnn_benchmarks' --model
    app: str  # the keras.applications constructor
    title: str  # how the model is written in prose
    image_size: int  # the model's default square input


MODELS = (
    Model("resnet50", "ResNet50", "ResNet-50", 224),
    Model("inception3", "InceptionV3", "Inception-v3", 299),
    Model("vgg16", "VGG16", "VGG-16", 224),
)


def load_data(source, params, global_batch):
    """Always synthetic, like the study: one batch of the model's input shape."""
    size = params["image_size"]
    return single_batch(params, global_batch, (size, size, 3), params["classes"])


def build_model(app_name: str, params: dict):
    keras = frameworks.keras()
    app = getattr(keras.applications, app_name)
    size = params["image_size"]
    base = app(weights=None, input_shape=(size, size, 3), classes=params["classes"], classifier_activation=None)
    # logits in the policy dtype, softmax in float32 (Keras mixed-precision guide)
    out = keras.layers.Activation("softmax", dtype="float32")(base.output)
    model = keras.Model(base.input, out, name=app_name.lower())
    return compiled(model, keras.optimizers.SGD(learning_rate=0.01, momentum=0.9))


def benchmark(m: Model) -> Benchmark:
    """One model's row of the table as a registered benchmark."""
    return Benchmark(
        name=m.name,
        kind="throughput",
        description=f"{m.title} (keras.applications, weights=None) training throughput, images/s after warm-up",
        study=f"seed 004 (tf_cnn_benchmarks --model={m.name}, batch 16/32/64 per GPU, fp16)",
        dataset=f"synthetic ImageNet-shaped batches, {m.image_size}x{m.image_size}x3, 1000 classes",
        sample_unit="image",
        # tf_cnn_benchmarks: 10 warm-up batches + 100 measured batches
        defaults={"steps": 110, "warmup_steps": 10, "batch_size": 32, "image_size": m.image_size, "classes": 1000},
        load_data=load_data,
        build_model=partial(build_model, m.app),
        param_help=THROUGHPUT_HELP,
    )


BENCHMARKS = tuple(benchmark(m) for m in MODELS)
