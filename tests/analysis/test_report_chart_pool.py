"""The report's chart worker draws the same PNG as the report's own process;
a worker that fails, dies or hangs leaves its chart to the report's process;
and the report finishes while other threads of its process hold locks (forked
workers used to deadlock there)."""

from __future__ import annotations

import logging
import threading
import time

import matplotlib.pyplot as plt
import pytest
from matplotlib.ticker import FuncFormatter

from analysis.report import Figure, chart_pool
from analysis.report.plots import log_if_wide

WAIT_S = 120  # a loaded machine: the worker's start-up (matplotlib's imports) can take long


def _figure():
    fig, ax = plt.subplots(figsize=(4, 2))
    ax.barh(["a", "b"], [1.0, 100.0])
    ax.set_title("a title wider than its axes, kept whole in the picture")
    log_if_wide(ax, [1.0, 100.0], "x")  # its tick formatter must pickle
    return fig


class _FailsInTheWorker:
    """Pickles here; unpickling it (in the worker) raises."""

    def __reduce__(self):
        return (int, ("not a number",))


class _HangsTheWorker:
    """Pickles here; unpickling it (in the worker) sleeps far past the timeout."""

    def __reduce__(self):
        return (time.sleep, (600,))


def _taken_by_the_worker(pending: chart_pool.PendingPng) -> None:
    """Wait until the worker has taken the chart (else the report's process would draw it itself)."""
    deadline = time.monotonic() + WAIT_S
    while pending._job.worker is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert pending._job.worker is not None, "the worker never took the chart"


@pytest.fixture
def two_cores(monkeypatch):
    monkeypatch.setattr(chart_pool.os, "sched_getaffinity", lambda _pid: {0, 1}, raising=False)
    monkeypatch.delenv(chart_pool.WORKERS_ENV, raising=False)  # the suite's default (no worker) lifted


def test_outside_the_pool_a_chart_is_drawn_at_once():
    assert chart_pool.rasterise(_figure()).startswith(b"\x89PNG")


def test_the_worker_draws_the_same_png_as_this_process(two_cores):
    here = chart_pool.rasterise(_figure())
    before = chart_pool.drawn_by_workers
    with chart_pool.parallel_charts():
        pending = chart_pool.rasterise(_figure())
        assert isinstance(pending, chart_pool.PendingPng)
        pending._job.done.wait(WAIT_S)
        assert pending.result() == here
        assert Figure.of("t", pending, "c").png.__html__() == Figure.of("t", here, "c").png
    assert chart_pool.drawn_by_workers == before + 1
    assert chart_pool._pool is None


def test_charts_nobody_took_are_drawn_here_while_waiting(two_cores):
    """Several charts queued at once: every one is drawn, whoever draws it, to the same PNG."""
    here = chart_pool.rasterise(_figure())
    with chart_pool.parallel_charts():
        pending = [chart_pool.rasterise(_figure()) for _ in range(4)]
        assert [p.result() for p in pending] == [here] * 4


def test_a_chart_the_worker_fails_on_is_drawn_here(two_cores):
    here = chart_pool.rasterise(_figure())
    before = chart_pool.drawn_by_workers
    with chart_pool.parallel_charts():
        fig = _figure()
        fig.fails_in_the_worker = _FailsInTheWorker()
        pending = chart_pool.rasterise(fig)
        _taken_by_the_worker(pending)
        assert pending.result() == here
    assert chart_pool.drawn_by_workers == before


def test_a_stuck_worker_is_stopped_and_its_chart_drawn_here(two_cores, monkeypatch):
    monkeypatch.setattr(chart_pool, "WORKER_TIMEOUT_S", 1.0)
    here = chart_pool.rasterise(_figure())
    with chart_pool.parallel_charts():
        fig = _figure()
        fig.hangs_the_worker = _HangsTheWorker()
        pending = chart_pool.rasterise(fig)
        _taken_by_the_worker(pending)
        worker = pending._job.worker
        start = time.monotonic()
        assert pending.result() == here
        assert time.monotonic() - start < 60
        assert worker.proc.poll() is not None  # stopped, not left sleeping


def test_an_unpicklable_figure_is_drawn_here(two_cores):
    fig = _figure()
    fig.axes[0].xaxis.set_major_formatter(FuncFormatter(lambda v, _: "x"))
    with chart_pool.parallel_charts():
        assert chart_pool.rasterise(fig).startswith(b"\x89PNG")


def test_on_one_core_there_is_no_worker(monkeypatch):
    monkeypatch.setattr(chart_pool.os, "sched_getaffinity", lambda _pid: {0}, raising=False)
    monkeypatch.delenv(chart_pool.WORKERS_ENV, raising=False)
    with chart_pool.parallel_charts():
        assert chart_pool._pool is None
        assert isinstance(chart_pool.rasterise(_figure()), bytes)


def _hold_locks(stop: threading.Event) -> None:
    """Hold, again and again, locks a forked child would need: logging's and one of our own
    (released longer than held, so that the report's own thread is not starved of them)."""
    mine = threading.Lock()
    while not stop.is_set():
        with logging._lock, mine:  # type: ignore[attr-defined]
            time.sleep(0.0005)
        time.sleep(0.002)


def test_the_report_finishes_while_other_threads_hold_locks(tmp_path, two_cores, monkeypatch):
    """Threads of the report's process holding locks while the worker starts (the full test suite's
    servers, DuckDB's own): forked workers deadlocked on such a lock. Here the report's process waits
    for the worker to draw every chart (it draws none itself), and the report must finish."""
    monkeypatch.setattr(chart_pool._Pool, "_to_draw_while_waiting", lambda _pool, _job: None)
    monkeypatch.setattr(chart_pool, "WORKER_TIMEOUT_S", WAIT_S)
    from synthetic_results import demo_like_results, result_bytes, result_key

    from analysis.collecting import collect_results
    from analysis.report.build import write_report
    from payload.storage import open_store

    store = open_store(str(tmp_path / "results"))
    for r in demo_like_results():
        store.put_bytes(result_key(r), result_bytes(r))
    collect_results([str(tmp_path / "results")], tmp_path / "report", spot_history="off")
    stop = threading.Event()
    threading.Thread(target=_hold_locks, args=(stop,), daemon=True).start()
    before, done = chart_pool.drawn_by_workers, []
    report = threading.Thread(target=lambda: done.append(write_report(tmp_path / "report")), daemon=True)
    try:
        report.start()
        report.join(timeout=300)
    finally:
        stop.set()
    assert done, "the report did not finish"
    page = (tmp_path / "report" / "index.html").read_text(encoding="utf-8")
    charts = page.count("data:image/png;base64,")
    assert charts >= 4
    assert chart_pool.drawn_by_workers == before + charts


@pytest.mark.parametrize(("value", "workers"), [("0", 0), ("1", 1), ("7", 1), ("many", 1)])
def test_the_environment_sets_the_workers(two_cores, monkeypatch, capsys, value, workers):
    monkeypatch.setenv(chart_pool.WORKERS_ENV, value)
    assert chart_pool._workers() == workers
    assert ("ignoring GPUBENCH_CHART_WORKERS='many'" in capsys.readouterr().err) == (value == "many")
