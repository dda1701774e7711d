"""A report chart to PNG: laid out once, trimmed to what it draws, drawn once."""

from __future__ import annotations

import io
import warnings

import matplotlib

matplotlib.use("Agg")
import matplotlib.image  # noqa: E402
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from matplotlib.backends.backend_agg import FigureCanvasAgg  # noqa: E402
from matplotlib.layout_engine import TightLayoutEngine  # noqa: E402
from matplotlib.transforms import Affine2D, Bbox  # noqa: E402

DPI = 90  # the page's resolution: figures are made, laid out and saved at it (one text metric per label)
TRIM_PAD_INCHES = 0.04  # white space kept around what a chart draws
LAYOUT = {"pad": 0.3, "h_pad": 1.0, "w_pad": 1.0}  # matplotlib's tight layout, in font sizes
OVERFLOW_INCHES = 2.0  # drawn past the figure's edge by up to this much, a chart is still trimmed from one draw


def figure(rows: int, cols: int, figsize: tuple[float, float], **kwargs):
    """A figure of rows x cols axes (a 2-D array) at the page's DPI, with no layout engine (it would lay the
    figure out again on every draw): `lay_out` places its axes once."""
    return plt.subplots(rows, cols, figsize=figsize, squeeze=False, dpi=DPI, **kwargs)


def lay_out(fig) -> None:
    """Fit the axes to their labels, titles and legends with one measurement (matplotlib's tight layout, run once).
    Labels too long to fit leave the default margins, silently: the PNG is cropped to what is drawn."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Tight layout not applied", category=UserWarning)
        # rect=None: one measurement of the axes' extents. The default rect, the whole figure, measures
        # them a second time to fit them into the first pass's margins: the same numbers again.
        TightLayoutEngine(**LAYOUT, rect=None).execute(fig)


def png_bytes(fig, laid_out: bool = False) -> bytes:
    """The figure as PNG: laid out (unless `laid_out`), drawn once and trimmed to what is drawn; zlib level 1:
    a few per cent larger, noticeably cheaper to write."""
    if not isinstance(fig.canvas, FigureCanvasAgg):  # closed or unpickled: a plain canvas, no renderer
        FigureCanvasAgg(fig)
    if not laid_out:
        lay_out(fig)
    try:
        trimmed = _drawn_then_trimmed(fig) if fig.dpi == DPI else None
        return trimmed if trimmed is not None else _trimmed_then_drawn(fig)
    finally:
        plt.close(fig)


def _drawn_then_trimmed(fig) -> bytes | None:
    """Draw once on a canvas OVERFLOW_INCHES larger on every side and keep the pixels around what is drawn: one
    pass fewer than measuring every artist first. None when something reaches the canvas's edge."""
    width, height = fig.get_size_inches()
    canvas = Bbox.from_extents(-OVERFLOW_INCHES, -OVERFLOW_INCHES, width + OVERFLOW_INCHES, height + OVERFLOW_INCHES)
    raw = io.BytesIO()
    fig.savefig(raw, format="rgba", dpi=DPI, bbox_inches=canvas)
    pixels_wide, pixels_high = Bbox.from_bounds(0, 0, *canvas.size).transformed(Affine2D().scale(DPI)).size
    shape = (int(pixels_high), int(pixels_wide), 4)  # the canvas savefig drew on, as Agg sizes it
    if raw.tell() != shape[0] * shape[1] * 4:
        return None
    pixels = np.frombuffer(raw.getbuffer(), dtype=np.uint8).reshape(shape)
    as_words = pixels.view(np.uint32)[..., 0]  # one comparison per pixel, not one per channel
    drawn = as_words != as_words[0, 0]  # the corner is background: nothing reaches it (checked below)
    rows, cols = np.flatnonzero(drawn.any(axis=1)), np.flatnonzero(drawn.any(axis=0))
    if not len(rows) or rows[0] == 0 or cols[0] == 0 or rows[-1] == shape[0] - 1 or cols[-1] == shape[1] - 1:
        return None
    pad = round(TRIM_PAD_INCHES * DPI)
    kept = pixels[max(0, rows[0] - pad) : rows[-1] + pad + 1, max(0, cols[0] - pad) : cols[-1] + pad + 1]
    png = io.BytesIO()
    matplotlib.image.imsave(png, kept, format="png", dpi=DPI, pil_kwargs={"compress_level": 1})
    return png.getvalue()


def _trimmed_then_drawn(fig) -> bytes:
    """Cropped to its artists' extent, measured without drawing (bbox_inches="tight" would draw it once more)."""
    drawn = fig.get_tightbbox(fig.canvas.get_renderer()).padded(TRIM_PAD_INCHES)
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=DPI, bbox_inches=drawn, pil_kwargs={"compress_level": 1})
    return buf.getvalue()
