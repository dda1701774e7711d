"""Reference data the metrics need (ImageNet training schedules from the papers)."""

from __future__ import annotations

import tomllib
from functools import lru_cache
from pathlib import Path


@lru_cache(maxsize=1)
def imagenet_schedules() -> dict[str, dict]:
    """benchmark name -> {batch_size, iterations, samples, paper, source}."""
    data = tomllib.loads(Path(__file__).with_name("imagenet.toml").read_text())
    return {name: {**row, "samples": row["batch_size"] * row["iterations"]} for name, row in data["model"].items()}
