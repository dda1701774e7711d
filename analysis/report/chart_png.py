"""A report chart to PNG: laid out once, trimmed to what it draws, drawn once.

Run as a script (`python -I chart_png.py [import path...]`), this file is the report's chart
worker: it reads (pickled figure, laid out) pairs from stdin and answers each
with (True, PNG bytes) or (False, why) on stdout until stdin closes. It
imports matplotlib and nothing of gpubench, so a worker starts in about a
second and never runs its caller's code (analysis/report/chart_pool.py).
"""

from __future__ import annotations

import io
import pickle
import sys

DPI = 90  # the page's resolution: figures are made, laid out and saved at it (one text metric per label)
TRIM_PAD_INCHES = 0.04  # white space kept around what a chart draws


def lay_out(fig) -> None:
    """Fit the axes to their labels, titles and legends in one measurement
    (matplotlib's tight layout, run once; no layout engine is left on the
    figure, so saving it draws it once, and later draws do not move its axes).
    Labels too long to fit leave matplotlib's default margins, silently: the
    PNG is cropped to what is drawn, so they are still shown whole."""
    import warnings

    from matplotlib.layout_engine import TightLayoutEngine

    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Tight layout not applied", category=UserWarning)
        TightLayoutEngine(pad=0.3, h_pad=1.0, w_pad=1.0).execute(fig)


def png_bytes(fig, laid_out: bool = False) -> bytes:
    """The figure as PNG, as the page shows it: laid out (unless `laid_out`),
    trimmed to what is drawn (a title wider than its axes included) and drawn
    once at the page's DPI; zlib level 1: a few per cent larger, noticeably
    cheaper to write."""
    import matplotlib.pyplot as plt
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    if not isinstance(fig.canvas, FigureCanvasAgg):  # closed or unpickled: a plain canvas, no renderer
        FigureCanvasAgg(fig)
    if not laid_out:
        lay_out(fig)
    # the drawn extent, measured without drawing; bbox_inches="tight" would draw the whole figure once more
    drawn = fig.get_tightbbox(fig.canvas.get_renderer()).padded(TRIM_PAD_INCHES)
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=DPI, bbox_inches=drawn, pil_kwargs={"compress_level": 1})
    plt.close(fig)
    return buf.getvalue()


def answer(pickled: bytes, laid_out: bool) -> tuple[bool, bytes | str]:
    """One request of the worker: (True, PNG) or (False, the error in words)."""
    try:
        return True, png_bytes(pickle.loads(pickled), laid_out)
    except Exception as exc:  # the caller draws this chart itself
        return False, f"{type(exc).__name__}: {exc}"


def serve(requests, replies) -> None:
    """Answer every request read from `requests` on `replies`, until end of input."""
    while True:
        try:
            pickled, laid_out = pickle.load(requests)
        except EOFError:
            return
        pickle.dump(answer(pickled, laid_out), replies)
        replies.flush()


if __name__ == "__main__":
    sys.path[:0] = sys.argv[1:]  # the caller's import path: the same matplotlib
    import matplotlib

    matplotlib.use("Agg")
    serve(sys.stdin.buffer, sys.stdout.buffer)
