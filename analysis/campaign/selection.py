"""Which stacks a campaign runs: names and shell globs over the stack files that are the catalog's cloud
stacks (results stacks hold the buckets; SSH stacks run through `python -m infra ssh`)."""

from __future__ import annotations

import difflib
import fnmatch
from collections.abc import Sequence
from pathlib import Path

from infra.catalog import load_catalog
from infra.clouds import RESULTS_STACKS
from infra.stacks import stack_names

GLOB_CHARS = set("*?[")


class SelectionError(ValueError):
    """A name or glob that selects nothing; the message lists close names."""


def matrix(stacks_dir: Path) -> list[str]:
    cloud = load_catalog().cloud_stacks()
    return [n for n in stack_names(stacks_dir) if n not in RESULTS_STACKS and n in cloud]


def select(patterns: Sequence[str], stacks_dir: Path) -> list[str]:
    """Stacks matching any pattern, in the order first matched; every pattern must match."""
    if not patterns:
        raise SelectionError("name at least one stack or glob, e.g. `aws-p3-*` or `gcp-*-spot`")
    available = matrix(stacks_dir)
    chosen: dict[str, None] = {}
    for pattern in patterns:
        if pattern in RESULTS_STACKS:
            raise SelectionError(
                f"{pattern!r} is a results stack (it holds the bucket); campaigns launch benchmark stacks only"
            )
        hits = (
            fnmatch.filter(available, pattern) if GLOB_CHARS & set(pattern) else [n for n in available if n == pattern]
        )
        if not hits:
            close = difflib.get_close_matches(pattern, available, n=3, cutoff=0.5)
            hint = f" Did you mean: {', '.join(close)}?" if close else ""
            raise SelectionError(
                f"{pattern!r} matches no stack in {stacks_dir}.{hint} "
                f"List them with `ls {stacks_dir}` or regenerate with `python -m infra stacks`."
            )
        for name in sorted(hits):
            chosen.setdefault(name)
    return list(chosen)
