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


def test_the_pool_is_off_and_the_page_draws_every_chart_here():
    """Forked workers deadlocked under the full suite (MAX_WORKERS): inside parallel_charts() a chart
    is still drawn at once, in this process, to the same PNG."""
    here = chart_pool.rasterise(_figure())
    with chart_pool.parallel_charts():
        assert chart_pool._pool is None
        drawn = chart_pool.rasterise(_figure())
        assert drawn == here and Figure.of("t", drawn, "c").png == Figure.of("t", here, "c").png


def test_an_unpicklable_figure_is_drawn_here():
    fig = _figure()
    fig.axes[0].xaxis.set_major_formatter(FuncFormatter(lambda v, _: "x"))
    with chart_pool.parallel_charts():
        assert chart_pool.rasterise(fig).startswith(b"\x89PNG")
