"""Rasterise the report's charts on every core: matplotlib draws one figure
at a time in one process (it is not thread-safe), and rasterising (layout,
text, Agg, PNG) is most of a chart's cost, so the page hands each finished
figure, pickled, to a small process pool and embeds the PNG when the page
template is rendered.

Outside `parallel_charts()` (tests, a one-core machine, and for now always:
see MAX_WORKERS) or whenever the pool
or one chart fails, the figure is rasterised here, in this process: the page
is the same, only slower.
"""

from __future__ import annotations

import base64
import io
import os
import pickle
from collections.abc import Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from contextlib import contextmanager

# Off (1): forked workers deadlocked in the full test suite (a lock held by another thread of the
# parent, DuckDB's or the test servers', at the moment of the fork), and the page then waited on them.
# Workers that do not inherit the parent's threads (a fork server with no preload) are the way to
# turn this back on; until then every chart is drawn in this process.
MAX_WORKERS = 1
WORKER_TIMEOUT_S = 120.0  # a chart takes about a second: past this the worker is stuck, draw it here
_pool: ProcessPoolExecutor | None = None


def png_bytes(fig) -> bytes:
    """The figure as PNG, as the page shows it (90 dpi, trimmed to what is drawn);
    zlib level 1: a few per cent larger, noticeably cheaper to write."""
    import matplotlib.pyplot as plt

    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=90, bbox_inches="tight", pil_kwargs={"compress_level": 1})
    plt.close(fig)
    return buf.getvalue()


def _render_pickled(pickled: bytes) -> bytes:
    """In a worker: the pickled figure as PNG."""
    import matplotlib

    matplotlib.use("Agg")
    return png_bytes(pickle.loads(pickled))


class PendingPng:
    """A chart being rasterised in the pool; the page asks for it (as base64)
    only when the template writes it, by then the pool has usually drawn it."""

    def __init__(self, future: Future, pickled: bytes):
        self._future, self._pickled, self._png = future, pickled, None

    def result(self) -> bytes:
        """The PNG; drawn here from the pickled figure when the worker failed."""
        if self._png is None:
            try:
                self._png = self._future.result(timeout=WORKER_TIMEOUT_S)
            except Exception:  # a broken pool or one failed chart: draw it here
                self._png = _render_pickled(self._pickled)
            self._pickled = b""
        return self._png

    def __str__(self) -> str:
        return base64.b64encode(self.result()).decode("ascii")

    def __html__(self) -> str:  # base64 is HTML-safe: the template writes it as it is
        return str(self)


def rasterise(fig) -> bytes | PendingPng:
    """The figure's PNG: handed to the pool inside `parallel_charts()`, else drawn now."""
    if _pool is None:
        return png_bytes(fig)
    try:
        pickled = pickle.dumps(fig)
        future = _pool.submit(_render_pickled, pickled)
    except Exception:  # unpicklable figure or a pool that broke: draw it here
        return png_bytes(fig)
    import matplotlib.pyplot as plt

    plt.close(fig)
    return PendingPng(future, pickled)


def _workers() -> int:
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return min(MAX_WORKERS, cores)


def _start_pool(workers: int) -> ProcessPoolExecutor | None:
    """A pool of forked workers: matplotlib is already imported here, so they
    start at once, and unlike spawn or a fork server they never re-run the
    calling script (an unguarded script would otherwise report recursively)."""
    import multiprocessing

    try:
        return ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context("fork"))
    except Exception:  # no fork here: the charts are drawn in this process
        return None


@contextmanager
def parallel_charts() -> Iterator[None]:
    """Within it, `rasterise` sends figures to a pool of up to two processes.
    Every PendingPng made inside must be read before it ends (the page is
    rendered inside); on one core, charts are drawn in this process."""
    global _pool
    if _pool is not None or _workers() < 2:
        yield
        return
    _pool = _start_pool(_workers())
    try:
        yield
    finally:
        pool, _pool = _pool, None
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)
