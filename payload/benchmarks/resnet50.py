"""resnet50: ResNet-50 images/s on synthetic ImageNet-shaped data (seed 004, tf_cnn_benchmarks style)."""

from __future__ import annotations

from payload.benchmarks import _imagenet
from payload.benchmarks.base import Benchmark


def load_data(source, params, global_batch):
    return _imagenet.loader(params, global_batch)  # always synthetic, like the study


def build_model(params):
    return _imagenet.build("ResNet50", params)


BENCHMARK = Benchmark(
    name="resnet50",
    kind="throughput",
    description="ResNet-50 (keras.applications, weights=None) training throughput, images/s after warm-up",
    study="seed 004 (tf_cnn_benchmarks --model=resnet50, batch 16/32/64 per GPU, fp16)",
    dataset="synthetic ImageNet-shaped batches, 224x224x3, 1000 classes",
    sample_unit="image",
    defaults=_imagenet.defaults(224),
    load_data=load_data,
    build_model=build_model,
    param_help=_imagenet.THROUGHPUT_HELP,
)
