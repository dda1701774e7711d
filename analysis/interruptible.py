"""A thread pool that never makes Ctrl-C wait. ThreadPoolExecutor joins its workers when its `with` block
ends, even on KeyboardInterrupt, and again at interpreter exit, so a `pulumi up` or a download in flight
holds Ctrl-C until it is done. Here workers are daemon threads: a block ended by an exception cancels the
tasks not started, sets `stop` for the running ones and returns at once (each task recovers on its own:
a campaign's stack stays `launching`, collect downloads again)."""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any


class InterruptiblePool:
    """`submit(fn, *args) -> Future` on up to `workers` daemon threads; `stop` is set when the block is abandoned."""

    def __init__(self, workers: int, name: str = "gpubench-pool"):
        if workers < 1:
            raise ValueError(f"a pool needs at least one worker, got {workers}")
        self.workers, self.name = workers, name
        self.stop = threading.Event()
        self._tasks: queue.SimpleQueue = queue.SimpleQueue()
        self._threads: list[threading.Thread] = []
        # the tasks not yet done (to cancel): a done one is dropped, with the result it holds
        self._futures: set[Future] = set()

    def submit(self, fn: Callable[..., Any], *args: Any) -> Future:
        if self.stop.is_set():
            raise RuntimeError(f"{self.name} is stopping: no new tasks")
        future: Future = Future()
        self._futures.add(future)
        future.add_done_callback(self._futures.discard)
        self._tasks.put((future, fn, args))
        if len(self._threads) < self.workers:
            thread = threading.Thread(target=self._work, name=f"{self.name}-{len(self._threads)}", daemon=True)
            self._threads.append(thread)
            thread.start()
        return future

    def _work(self) -> None:
        while True:
            task = self._tasks.get()
            if task is None:
                return
            self._run(*task)
            del task  # nor does the idle worker hold the last task's future (and its result)

    def _run(self, future: Future, fn: Callable[..., Any], args: tuple) -> None:
        if self.stop.is_set() or not future.set_running_or_notify_cancel():
            return
        try:
            future.set_result(fn(*args))
        except BaseException as exc:  # noqa: BLE001 - the caller sees it through the future
            future.set_exception(exc)

    def cancel(self) -> int:
        """Stop: cancel every task not started, tell running ones through `stop`; returns how many were cancelled."""
        self.stop.set()
        cancelled = sum(f.cancel() for f in list(self._futures))
        self._release()
        return cancelled

    def _release(self) -> None:
        for _ in self._threads:
            self._tasks.put(None)

    def __enter__(self) -> InterruptiblePool:
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is not None:
            self.cancel()  # Ctrl-C or an error: nobody waits for the workers
            return
        self._release()
        try:
            for thread in self._threads:
                thread.join()
        except BaseException:  # Ctrl-C while waiting for the last tasks
            self.cancel()
            raise
