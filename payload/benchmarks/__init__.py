"""Benchmark registry: one module per benchmark, each exporting ``BENCHMARK``.

Adding a benchmark = adding a module and its name to ``MODULES``; nothing
else dispatches on names. See ``payload.benchmarks.base`` for the contract.
"""

from __future__ import annotations

import difflib
import importlib

from payload.benchmarks.base import Benchmark, Data, ParamError

__all__ = ["Benchmark", "Data", "MODULES", "ParamError", "REGISTRY", "UnknownBenchmark", "get"]

MODULES = (
    "bilstm_sentiment",  # seed 000
    "mnist_mlp",
    "mnist_cnn",
    "cifar10_cnn",
    "imdb_bilstm",
    "text_lstm",
    "imdb_fasttext",  # seed 002
    "resnet50",
    "inception3",
    "vgg16",  # seed 004
    "catsdogs_resnet50",  # seed 003
)

REGISTRY: dict[str, Benchmark] = {
    b.name: b for b in (importlib.import_module(f"{__name__}.{m}").BENCHMARK for m in MODULES)
}


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
