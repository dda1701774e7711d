"""The report's charts described by what they show instead of drawn: for the
report tests about the page's tables and text, where rasterising the charts
(layout, text, Agg, PNG: about a second of CPU each, eight a page) was most of
their cost.

`charts_described()` puts `content_png` in place of the report's rasteriser
(analysis.report.plots.to_png): each chart's figure is still built by
the report's own code, then reduced to a stand-in whose bytes are a digest of
its size, every axis (scale, limits, tick positions and labels, label) and
every artist's text, data, colours and visibility, numbers to six significant
digits (finer than a 90 dpi chart can show). Two pages that compare equal
therefore still show the same charts. The stand-in is no PNG: tests that decode
the images or measure them in a browser (tests/analysis/test_report.py's
every-chart test, tests/e2e/) keep the real rasteriser.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from contextlib import contextmanager

import numpy as np
import pytest

STAND_IN = b"chart-content:"

# what an artist shows, where it has it (a Text its text, a Line2D its points, a bar its rectangle, ...)
_SHOWN = (
    "get_text",
    "get_position",
    "get_xydata",
    "get_offsets",
    "get_segments",
    "get_xy",
    "get_width",
    "get_height",
    "get_sizes",
    "get_facecolor",
    "get_edgecolor",
    "get_color",
    "get_linestyle",
    "get_marker",
    "get_label",
    "get_visible",
)


def _number_text(value) -> str:
    """Numbers to six significant digits (sums taken in another order agree), anything else as repr."""
    try:
        floats = np.asarray(value, dtype=float)
    except (TypeError, ValueError):
        return repr(value)
    return np.array2string(floats, precision=6, floatmode="maxprec", threshold=np.inf, separator=",")


def _axis(axis) -> list[str]:
    """An axis by what it shows: scale, limits, label, and its ticks' places and texts from its
    locators and formatters (asking for the tick artists would build one per tick: most of the cost)."""
    out = [type(axis).__name__, axis.get_scale(), _number_text(axis.get_view_interval()), axis.label.get_text()]
    for ticker in (axis.major, axis.minor):
        places = ticker.locator()
        out += [_number_text(places), repr(ticker.formatter.format_ticks(places))]
    return out


def _artist(artist, out: list[str]) -> None:
    from matplotlib.axis import Axis

    if isinstance(artist, Axis):
        out += _axis(artist)
        return
    out.append(type(artist).__name__)
    for name in _SHOWN:
        getter = getattr(artist, name, None)
        if callable(getter):
            try:
                out.append(f"{name}={_number_text(getter())}")
            except (TypeError, ValueError, AttributeError, NotImplementedError):
                continue  # a getter that needs arguments or has nothing to give for this artist
    if hasattr(artist, "xy") and not callable(artist.xy):  # an annotation's point
        out.append(f"xy={_number_text(artist.xy)}")
    for child in artist.get_children():
        _artist(child, out)


def describe(fig) -> list[str]:
    """The figure as lines of text: its size, then every artist, depth first."""
    out = [f"size={_number_text(fig.get_size_inches())} dpi={fig.dpi}"]
    _artist(fig, out)
    return out


def content_png(fig, *_args, **_kwargs) -> bytes:
    """The chart's stand-in (same content, same bytes); closes the figure as the rasteriser does."""
    import matplotlib.pyplot as plt

    digest = hashlib.sha256("\n".join(describe(fig)).encode()).hexdigest().encode()
    plt.close(fig)
    return STAND_IN + digest


@contextmanager
def charts_described() -> Iterator[None]:
    """Within: the report's charts are described (`content_png`), not drawn."""
    import analysis.report.plots as plots

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(plots, "to_png", content_png)
        yield
