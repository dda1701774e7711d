"""Benchmark registry: modules exporting ``BENCHMARK`` or ``BENCHMARKS`` (a family from one table), named
in ``MODULES``; nothing else dispatches on names. The contract is payload.benchmarks.base.
"""

from __future__ import annotations

import difflib
import importlib

from payload.benchmarks.base import Benchmark, Data, ParamError

__all__ = ["Benchmark", "Data", "MODULES", "ParamError", "REGISTRY", "UnknownBenchmark", "get"]

MODULES = (
    "keras_examples",  # seeds 000 and 002: bilstm-sentiment, mnist-mlp, ..., imdb-fasttext
    "imagenet_models",  # seed 004: resnet50, inception3, vgg16
    "catsdogs_resnet50",  # seed 003
)


def _benchmarks_of(module_name: str) -> tuple[Benchmark, ...]:
    module = importlib.import_module(f"{__name__}.{module_name}")
    return getattr(module, "BENCHMARKS", None) or (module.BENCHMARK,)


REGISTRY: dict[str, Benchmark] = {b.name: b for m in MODULES for b in _benchmarks_of(m)}


class UnknownBenchmark(KeyError):
    def __str__(self) -> str:
        return self.args[0]


def get(name: str) -> Benchmark:
    try:
        return REGISTRY[name]
    except KeyError:
        close = difflib.get_close_matches(name, REGISTRY, n=3)
        hint = f"; did you mean {', '.join(close)}?" if close else ""
        raise UnknownBenchmark(f"unknown benchmark {name!r}{hint} (known: {', '.join(REGISTRY)})") from None
