"""Benchmark registry: every built-in benchmark by name, from the modules that define them; nothing else
dispatches on names. The contract is payload.benchmarks.base."""

from __future__ import annotations

import difflib

from payload.benchmarks import catsdogs_resnet50, imagenet_models, keras_examples
from payload.benchmarks.base import Benchmark, Data, ParamError

__all__ = ["Benchmark", "Data", "ParamError", "REGISTRY", "UnknownBenchmark", "get"]

# seeds 000 and 002, then seed 004 (resnet50, inception3, vgg16), then seed 003
BENCHMARKS = (*keras_examples.BENCHMARKS, *imagenet_models.BENCHMARKS, catsdogs_resnet50.BENCHMARK)
REGISTRY: dict[str, Benchmark] = {b.name: b for b in BENCHMARKS}


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
