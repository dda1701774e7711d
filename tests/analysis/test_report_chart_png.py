"""A chart's PNG is trimmed to what it draws, with the pad kept, and shows
whole what is drawn past the figure's edge (analysis/report/plots.py)."""

from __future__ import annotations

import io

import matplotlib

matplotlib.use("Agg")
import matplotlib.image  # noqa: E402
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from analysis.report import plots  # noqa: E402

PAD = round(plots.TRIM_PAD_INCHES * plots.DPI)


def _chart(note_size: float | None = None):
    """A small bar chart at the page's DPI; with `note_size`, a text in that font size
    that starts inside the axes and runs past the figure's right edge."""
    fig, ax = plt.subplots(figsize=(4, 3), dpi=plots.DPI)
    ax.barh(["a", "b"], [1, 2])
    ax.set_title("two bars")
    if note_size is not None:
        note = ax.annotate("a note past the edge", (0.9, 0.5), xycoords="axes fraction", fontsize=note_size)
        note.set_in_layout(False)  # the layout leaves it where it is: past the edge
    return fig


def _drawn(png: bytes) -> np.ndarray:
    """The image's pixels that are not its background (its corner), True where drawn."""
    pixels = matplotlib.image.imread(io.BytesIO(png), format="png")
    return (pixels != pixels[0, 0]).any(axis=2)


def _pad_each_side(drawn: np.ndarray) -> tuple[int, int, int, int]:
    """Blank rows or columns above, below, left and right of what is drawn."""
    rows, cols = np.flatnonzero(drawn.any(axis=1)), np.flatnonzero(drawn.any(axis=0))
    return rows[0], drawn.shape[0] - 1 - rows[-1], cols[0], drawn.shape[1] - 1 - cols[-1]


def test_a_chart_is_trimmed_to_what_it_draws_with_the_pad_kept():
    drawn = _drawn(plots.to_png(_chart()))
    assert _pad_each_side(drawn) == (PAD, PAD, PAD, PAD)


def test_it_is_the_chart_cropped_to_its_measured_extent():
    """The same picture as cropping to the artists' measured extent: at most a pixel or
    two of margin apart on each side (text boxes include some white around the glyphs)."""
    one_draw = _drawn(plots.to_png(_chart()))
    fig = _chart()
    plots.lay_out(fig)
    measured = _drawn(plots._trimmed_then_drawn(fig))
    plt.close(fig)
    assert abs(one_draw.shape[0] - measured.shape[0]) <= 4 and abs(one_draw.shape[1] - measured.shape[1]) <= 4
    assert abs(int(one_draw.sum()) - int(measured.sum())) / measured.sum() < 0.02  # as much drawn


def test_what_is_drawn_past_the_figures_edge_is_shown_whole():
    fig = _chart(note_size=10)
    figure_width = fig.get_figwidth() * plots.DPI
    drawn = _drawn(plots.to_png(fig))
    assert 50 < drawn.shape[1] - figure_width < plots.OVERFLOW_INCHES * plots.DPI  # widened by the note
    assert _pad_each_side(drawn) == (PAD, PAD, PAD, PAD)  # nothing cut at any edge


def test_a_drawing_past_even_the_overflow_canvas_is_cropped_to_its_measured_extent():
    fig = _chart(note_size=40)
    one_try = _drawn(plots.to_png(fig))
    fig = _chart(note_size=40)
    plots.lay_out(fig)
    assert plots._drawn_then_trimmed(fig) is None  # it reaches the canvas's edge
    assert one_try.shape == _drawn(plots._trimmed_then_drawn(fig)).shape
    plt.close(fig)


def test_a_figure_made_at_another_dpi_is_cropped_to_its_measured_extent():
    def chart():
        fig, ax = plt.subplots(figsize=(4, 3), dpi=50)
        ax.plot([0, 1], [0, 1])
        return fig

    measured = chart()
    plots.lay_out(measured)
    assert plots.to_png(chart()) == plots._trimmed_then_drawn(measured)
    plt.close(measured)


def test_the_layout_measured_once_places_the_axes_as_matplotlibs_tight_layout():
    """lay_out measures the axes' extents once; matplotlib's tight layout over the whole
    figure measures them twice: the same subplot parameters, to the last bit."""
    from matplotlib.layout_engine import TightLayoutEngine

    def panels():
        fig, axes = plt.subplots(2, 2, figsize=(6, 4), dpi=plots.DPI)
        for i, ax in enumerate(axes.flat):
            ax.barh([f"a long label {i}", "b"], [1, 10 ** (i + 1)])
            ax.set_xscale("log")
            ax.set_title(f"panel {i}")
        return fig

    def params(fig):
        sp = fig.subplotpars
        plt.close(fig)
        return (sp.left, sp.right, sp.bottom, sp.top, sp.wspace, sp.hspace)

    once, twice = panels(), panels()
    plots.lay_out(once)
    TightLayoutEngine(**plots.LAYOUT).execute(twice)
    assert params(once) == params(twice) != params(panels())  # and the layout moved the axes
