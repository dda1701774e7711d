"""Draw the report's charts on two cores: this process and a worker process
share them (matplotlib draws one figure at a time per process).

The worker is a fresh interpreter running analysis/report/chart_png.py,
started when the report starts so that its imports overlap the queries. It
inherits no thread and no lock of this process (a forked worker deadlocked
on a lock another thread held at the fork) and, unlike multiprocessing's
spawn and fork server, never re-imports the calling script.

Each finished figure is pickled into a queue; the worker takes the next one
as soon as it has drawn one, and this process, when the page needs a chart
the worker has not drawn yet, draws queued ones itself instead of waiting.
A worker that fails or takes longer than WORKER_TIMEOUT_S for one chart
leaves it to this process: the page is the same, only later. Outside
`parallel_charts()` (or on one core) every chart is drawn at once, here.
"""

from __future__ import annotations

import base64
import os
import pickle
import subprocess
import sys
import threading
from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager

from analysis.report import chart_png
from analysis.report.chart_png import png_bytes

MAX_WORKERS = 1  # with this process drawing too, one worker keeps two cores busy
WORKER_TIMEOUT_S = 60.0  # a chart takes about a second: past this the worker is stuck, draw it here
_pool: _Pool | None = None
drawn_by_workers = 0  # charts whose PNG came from a worker (how tests see the workers were used)


class _Job:
    """One chart: the figure (to draw it here if need be), its pickle (for a worker) and, once drawn, its PNG."""

    def __init__(self, fig, laid_out: bool, pickled: bytes):
        self.fig, self.laid_out, self.pickled = fig, laid_out, pickled
        self.worker: _Worker | None = None  # the worker drawing it
        self.png: bytes | None = None
        self.done = threading.Event()


class _Worker:
    """A chart worker process and the thread that hands it one chart at a time."""

    def __init__(self, pool: _Pool):
        self.pool = pool
        self.proc = subprocess.Popen(
            # isolated (-I: no script directory, no environment) but with this process's import path
            [sys.executable, "-I", chart_png.__file__, *filter(None, sys.path)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )
        self.thread = threading.Thread(target=self._serve, name="chart-worker", daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        """Until the pool closes: the next queued chart to the worker, its PNG back to the job."""
        job = None
        try:
            while (job := self.pool.take(self)) is not None:
                pickle.dump((job.pickled, job.laid_out), self.proc.stdin)
                self.proc.stdin.flush()
                ok, payload = pickle.load(self.proc.stdout)
                self.pool.finish(job, payload if ok else None)
        except Exception:  # the worker died or was stopped: its chart is drawn in the report's process
            if job is not None:
                self.pool.finish(job, None)
        finally:  # the pool's close ends and reaps the process
            for stream in (self.proc.stdin, self.proc.stdout):
                try:
                    stream.close()
                except OSError:
                    pass

    def stop(self) -> None:
        """End the process (its thread then ends too) and reap it."""
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()


class _Pool:
    """Queued charts shared by the workers and the report's own process."""

    def __init__(self, workers: int):
        self._lock = threading.Condition()
        self._queue: deque[_Job] = deque()
        self._closed = False
        self._workers: list[_Worker] = []
        try:
            for _ in range(workers):
                self._workers.append(_Worker(self))
        except Exception:
            self.close()
            raise

    def submit(self, fig, laid_out: bool) -> PendingPng:
        """Queue the figure (pickled now: the page goes on changing nothing of it)."""
        import matplotlib.pyplot as plt

        plt.close(fig)  # out of pyplot's list, and the worker's copy is not put back in its own
        job = _Job(fig, laid_out, pickle.dumps(fig))
        with self._lock:
            self._queue.append(job)
            self._lock.notify()
        return PendingPng(self, job)

    def take(self, worker: _Worker) -> _Job | None:
        """For a worker's thread: the oldest queued chart, waiting for one; None once closed."""
        with self._lock:
            while not self._queue and not self._closed:
                self._lock.wait()
            if self._closed:
                return None
            job = self._queue.popleft()
            job.worker = worker
            return job

    def finish(self, job: _Job, png: bytes | None) -> None:
        """A worker's answer (None: it failed, this process draws the chart)."""
        with self._lock:
            if not job.done.is_set():
                job.png = png
                job.done.set()

    def result(self, job: _Job) -> bytes:
        """The chart's PNG. While a worker draws it, this process draws the
        newest queued charts; a chart nobody has taken yet is drawn here; one a
        worker failed on, or held past WORKER_TIMEOUT_S, too."""
        global drawn_by_workers
        while (other := self._to_draw_while_waiting(job)) is not None:
            other.png, other.fig = png_bytes(other.fig, other.laid_out), None
            other.done.set()
        if not job.done.wait(WORKER_TIMEOUT_S) and job.worker is not None:
            job.worker.stop()  # stuck: its thread gives the job up
        with self._lock:
            png = job.png if job.done.is_set() else None
            job.done.set()  # a late answer of the worker is ignored
        if png is None:
            png = png_bytes(job.fig, job.laid_out)
        elif job.worker is not None:
            drawn_by_workers += 1
        job.png, job.fig = png, None
        return png

    def _to_draw_while_waiting(self, job: _Job) -> _Job | None:
        """The job itself while no worker has taken it, else the newest queued
        one while the job is not done, else None."""
        with self._lock:
            if job.done.is_set():
                return None
            if job.worker is None and job in self._queue:
                self._queue.remove(job)
                return job
            return self._queue.pop() if self._queue else None

    def close(self) -> None:
        """Stop taking charts and end the workers."""
        with self._lock:
            self._closed = True
            self._queue.clear()
            self._lock.notify_all()
            workers = list(self._workers)
        for worker in workers:  # it holds nothing to keep: ended at once, even mid-start
            worker.stop()
            worker.thread.join()


class PendingPng:
    """A chart in the pool; the page asks for it (as base64) only when the
    template writes it, by then it is usually drawn."""

    def __init__(self, pool: _Pool, job: _Job):
        self._pool, self._job, self._png = pool, job, None

    def result(self) -> bytes:
        if self._png is None:
            self._png = self._pool.result(self._job)
        return self._png

    def __str__(self) -> str:
        return base64.b64encode(self.result()).decode("ascii")

    def __html__(self) -> str:  # base64 is HTML-safe: the template writes it as it is
        return str(self)


def rasterise(fig, laid_out: bool = False) -> bytes | PendingPng:
    """The figure's PNG: queued inside `parallel_charts()`, else drawn now."""
    if _pool is None:
        return png_bytes(fig, laid_out)
    try:
        return _pool.submit(fig, laid_out)
    except Exception:  # an unpicklable figure: draw it here
        return png_bytes(fig, laid_out)


WORKERS_ENV = "GPUBENCH_CHART_WORKERS"  # 0: every chart drawn in the report's process (no worker started)


def _workers() -> int:
    """Workers beside this process: one per other core, up to MAX_WORKERS, or
    $GPUBENCH_CHART_WORKERS when set (0 starts none: a machine where a second
    interpreter costs more than it saves, or a test suite that renders many pages)."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    wanted = os.environ.get(WORKERS_ENV, "").strip()
    if wanted:
        if not wanted.isdigit():
            print(f"gpubench: ignoring {WORKERS_ENV}={wanted!r}: expected 0 or 1", file=sys.stderr)
        else:
            return min(MAX_WORKERS, int(wanted))
    return min(MAX_WORKERS, cores - 1)


def _start_pool(workers: int) -> _Pool | None:
    try:
        return _Pool(workers)
    except Exception:  # no interpreter to start (embedded Python, no fork or exec): charts are drawn here
        return None


@contextmanager
def parallel_charts() -> Iterator[None]:
    """Within it, `rasterise` queues figures for the workers and this process.
    Every PendingPng made inside must be read before it ends (the page is
    rendered inside); on one core, charts are drawn at once, here."""
    global _pool
    if _pool is not None or _workers() < 1 or not sys.executable:
        yield
        return
    _pool = _start_pool(_workers())
    try:
        yield
    finally:
        pool, _pool = _pool, None
        if pool is not None:
            pool.close()
