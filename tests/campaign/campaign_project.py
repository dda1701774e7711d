"""Campaign test helpers: a throwaway project dir (Pulumi.yaml + stacks/) with tiny payload settings."""

from __future__ import annotations

import shutil
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[2]
# mnist-mlp on synthetic data, small enough that one run takes seconds on a CPU
TINY = {
    "gpubench:suite": ["mnist-mlp"],
    "gpubench:epochs": 1,
    "gpubench:batchSize": 32,
    "gpubench:data": "synthetic",
    "gpubench:params": "samples=256,val_samples=64,hidden=32",
    "gpubench:expectGpu": False,
    "gpubench:maxHours": 1,
}


def make_project(root: Path, stacks: dict[str, dict], results: str | None = None, tiny: bool = True) -> Path:
    """A project dir: the repo's Pulumi.yaml and stacks/<name> files = the checked-in file + `stacks[name]`."""
    from infra.stacks import load_config

    root.mkdir(parents=True, exist_ok=True)
    shutil.copy(REPO / "Pulumi.yaml", root / "Pulumi.yaml")
    (root / "stacks").mkdir(exist_ok=True)
    for name, extra in stacks.items():
        config = {**load_config(name), **(TINY if tiny else {}), **extra}
        if results:
            config["gpubench:results"] = results
        (root / "stacks" / f"Pulumi.{name}.yaml").write_text(yaml.safe_dump({"config": config}))
    return root
