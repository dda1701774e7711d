"""inception3: Inception-v3 images/s on synthetic ImageNet-shaped data (seed 004, tf_cnn_benchmarks style)."""

from __future__ import annotations

from payload.benchmarks import _imagenet
from payload.benchmarks.base import Benchmark


def load_data(source, params, global_batch):
    return _imagenet.loader(params, global_batch)  # always synthetic, like the study


def build_model(params):
    return _imagenet.build("InceptionV3", params)


BENCHMARK = Benchmark(
    name="inception3",
    kind="throughput",
    description="Inception-v3 (keras.applications, weights=None) training throughput, images/s after warm-up",
    study="seed 004 (tf_cnn_benchmarks --model=inception3, batch 16/32/64 per GPU, fp16)",
    dataset="synthetic ImageNet-shaped batches, 299x299x3, 1000 classes",
    sample_unit="image",
    defaults=_imagenet.defaults(299),
    load_data=load_data,
    build_model=build_model,
    param_help=_imagenet.THROUGHPUT_HELP,
)
