"""The chart pool draws the same PNG as the process itself, and falls back to
drawing in the process when a worker or the pickling fails."""

from __future__ import annotations

import matplotlib.pyplot as plt
from matplotlib.ticker import FuncFormatter

from analysis.report import Figure, chart_pool
from analysis.report.plots import log_if_wide


def _figure():
    fig, ax = plt.subplots(figsize=(4, 2))
    ax.barh(["a", "b"], [1.0, 100.0])
    log_if_wide(ax, [1.0, 100.0], "x")  # its tick formatter must pickle
    return fig


def test_outside_the_pool_a_chart_is_drawn_at_once():
    assert chart_pool.rasterise(_figure()).startswith(b"\x89PNG")


def test_the_pool_draws_the_same_png_as_this_process():
    here = chart_pool.rasterise(_figure())
    with chart_pool.parallel_charts():
        pending = chart_pool.rasterise(_figure())
        assert isinstance(pending, chart_pool.PendingPng)
        figure = Figure.of("t", pending, "c")
        assert pending.result() == here
        assert str(figure.png) == Figure.of("t", here, "c").png


def test_a_failed_worker_falls_back_to_drawing_here(monkeypatch):
    def broken(_pickled):
        raise RuntimeError("worker died")

    here = chart_pool.rasterise(_figure())
    with chart_pool.parallel_charts():
        monkeypatch.setattr(
            chart_pool._pool, "submit", lambda fn, arg: chart_pool._pool.__class__.submit(chart_pool._pool, broken, arg)
        )
        pending = chart_pool.rasterise(_figure())
        assert pending.result() == here


def test_an_unpicklable_figure_is_drawn_here():
    fig = _figure()
    fig.axes[0].xaxis.set_major_formatter(FuncFormatter(lambda v, _: "x"))
    with chart_pool.parallel_charts():
        assert chart_pool.rasterise(fig).startswith(b"\x89PNG")
