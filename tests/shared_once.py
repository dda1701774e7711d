"""Work done once per test session instead of once per xdist worker.

A session-scoped fixture runs once in each worker process: with three workers, an expensive one (every
stack rendered under mocks: about 12 s of CPU) is paid three times. `once_per_session` makes the first
worker that asks compute it and pickle it into the directory all workers' temp dirs share; a worker
asking later (or meanwhile: it waits on the lock) loads that copy. Without xdist it just computes.
Only for values that depend on nothing but the code and fixed inputs (same in every worker).
"""

from __future__ import annotations

import fcntl
import os
import pickle
from collections.abc import Callable
from typing import TypeVar

import pytest

T = TypeVar("T")


def once_per_session(tmp_path_factory: pytest.TempPathFactory, name: str, compute: Callable[[], T]) -> T:
    """`compute()`'s value, computed by one worker of this session and shared with the others as a pickle."""
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        return compute()
    shared = tmp_path_factory.getbasetemp().parent  # the session's base: each worker's temp dir is in it
    cache, lock = shared / f"{name}.pickle", shared / f"{name}.lock"
    with open(lock, "a") as held:
        fcntl.flock(held, fcntl.LOCK_EX)  # a second worker waits here while the first computes
        if cache.exists():
            return pickle.loads(cache.read_bytes())
        value = compute()
        partial = cache.with_suffix(".partial")
        partial.write_bytes(pickle.dumps(value))
        partial.replace(cache)
        return value
