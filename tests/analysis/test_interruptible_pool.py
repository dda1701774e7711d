"""analysis.interruptible.InterruptiblePool: waits for its tasks when its block ends normally, and
for nothing when the block is abandoned (Ctrl-C, an error, a closed generator)."""

from __future__ import annotations

import threading
import time

import pytest

from analysis.interruptible import InterruptiblePool


def test_a_normal_end_waits_for_every_task_and_returns_their_results():
    with InterruptiblePool(3) as pool:
        futures = [pool.submit(lambda i: (time.sleep(0.01), i * i)[1], i) for i in range(10)]
    assert all(f.done() for f in futures)
    assert [f.result() for f in futures] == [i * i for i in range(10)]


def test_an_abandoned_block_cancels_pending_tasks_sets_stop_and_does_not_wait():
    release = threading.Event()
    ran = []

    def task(i):
        ran.append(i)
        release.wait(5)
        return i

    t0 = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        with InterruptiblePool(2) as pool:
            futures = [pool.submit(task, i) for i in range(6)]
            while len(ran) < 2:
                time.sleep(0.001)
            raise KeyboardInterrupt
    assert time.monotonic() - t0 < 1.0
    assert pool.stop.is_set()
    assert sum(f.cancelled() for f in futures) == 4 and sorted(ran) == [0, 1]
    release.set()
    assert [f.result(timeout=5) for f in futures[:2]] == [0, 1]
    with pytest.raises(RuntimeError, match="stopping"):
        pool.submit(task, 9)


def test_an_exception_in_a_task_reaches_its_future():
    with InterruptiblePool(1) as pool:
        future = pool.submit(lambda: 1 / 0)
    with pytest.raises(ZeroDivisionError):
        future.result()


def test_a_finished_task_and_its_result_are_not_held_by_the_pool():
    """A long-lived pool (collect's list-ahead, one listing per stack) must not keep every result
    it handed over: once the caller drops a finished task's future, its result is gone."""
    import gc
    import weakref

    class Listing:
        pass

    with InterruptiblePool(2) as pool:
        futures = [pool.submit(Listing) for _ in range(4)]
        results = [weakref.ref(f.result()) for f in futures]
        del futures
        both = threading.Barrier(2, timeout=5)  # each worker has taken a new task: done with its last one
        for f in [pool.submit(both.wait) for _ in range(2)]:
            f.result()
        gc.collect()
        assert [r() for r in results] == [None] * 4
        assert pool.submit(lambda: 7).result() == 7  # and the pool still works
