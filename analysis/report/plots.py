"""The report's charts, each the counterpart of one in the seed studies: (png bytes, caption), or None when the data
cannot compare anything (the page then leaves the chart out). Captions cite the page's numbered price notes. A chart
is laid out once, trimmed to what it draws and drawn once, at the page's DPI."""

from __future__ import annotations

import base64
import io
import math
import warnings
from collections.abc import Callable
from typing import NamedTuple

import matplotlib

matplotlib.use("Agg")
import matplotlib.image  # noqa: E402
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from matplotlib.backends.backend_agg import FigureCanvasAgg  # noqa: E402
from matplotlib.layout_engine import TightLayoutEngine  # noqa: E402
from matplotlib.lines import Line2D  # noqa: E402
from matplotlib.ticker import NullFormatter, StrMethodFormatter  # noqa: E402
from matplotlib.transforms import Affine2D, Bbox  # noqa: E402

from analysis.price.billed import onprem_hourly  # noqa: E402
from analysis.reference.studies import imagenet_schedules  # noqa: E402
from analysis.report.answer import PER_HOUR, per_samples_scale, time_unit  # noqa: E402
from infra.catalog import load_catalog  # noqa: E402
from payload.benchmarks.base import units_of  # noqa: E402

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


def to_png(fig, laid_out: bool = False) -> bytes:
    """The figure as PNG: laid out (unless `laid_out`), drawn once and trimmed to what is drawn; zlib level 1:
    a few per cent larger, noticeably cheaper to write. Tests that compare pages describe the chart instead."""
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


MAX_PANELS = 6


class Chart(NamedTuple):
    """A chart as the page shows it."""

    title: str
    png: str | None  # base64; None when not drawn, the caption then says why
    caption: str

    @classmethod
    def of(cls, title: str, png: bytes | None, caption: str) -> Chart:
        return cls(title, None if png is None else base64.b64encode(png).decode("ascii"), caption)


def label(r) -> str:
    """'aws/p3.8xlarge (1 of 4 GPUs, spot)': the offering plus how it was used."""
    extra = []
    if r.get("gpus_used") is not None and not pd.isna(r.get("gpus_used")):
        extra.append(f"{int(r['gpus_used'])} GPU" + ("s" if int(r["gpus_used"]) != 1 else ""))
    if r.get("market") == "spot":
        extra.append("spot")
    return f"{r['offering_id']} ({', '.join(extra)})" if extra else str(r["offering_id"])


Cite = Callable[[pd.DataFrame], str]


def _panels(n: int, height_per: float, width: float = 9.0):
    n = min(n, MAX_PANELS)
    fig, axes = figure(n, 1, (width, max(2.5, height_per) * n))
    return fig, [a[0] for a in axes]


def _compared(frame: pd.DataFrame) -> list[tuple[str, pd.DataFrame]]:
    """(panel title, rows) per configuration run on two offerings or more (one offering, or a single point,
    carries no information): one panel never mixes workloads."""
    out = []
    for _, d in frame.groupby(["benchmark", "workload"], dropna=False, sort=True):
        wl = d.iloc[0].get("workload_label")
        if d["offering_id"].nunique() > 1:
            out.append((str(d.iloc[0]["benchmark"]) + (f" ({wl})" if isinstance(wl, str) else ""), d))
    return out[:MAX_PANELS]


def units(d: pd.DataFrame) -> str:
    """Plural sample unit of a configuration's rows ("tweets"), "samples" when unknown."""
    u = d["sample_unit"].dropna() if "sample_unit" in d.columns else pd.Series(dtype=object)
    return units_of(str(u.iloc[0])) if len(u) else "samples"


def cost_to_train(summary: pd.DataFrame, cite: Cite):
    """Seed 000, figure 1: cost to train per offering, the billed cost (launch to termination) beside it."""
    s = summary[summary["train_cost_usd"].notna()]
    panels = _compared(s)
    if not panels:
        return None
    fig, axes = _panels(len(panels), 0.4 * max(len(d) for _, d in panels) + 1.2)
    for ax, (bench, d) in zip(axes, panels):
        d = d.sort_values("train_cost_usd")
        bars = (("train_cost_usd", "cost to train (training only)", {}),)
        bars += (("billed_cost_usd", "billed (launch to termination, all attempts)", {"alpha": 0.5}),)
        log = _paired_bars(ax, d, bars)
        ax.set_xlabel("USD" + (", log scale" if log else ""))
        ax.set_title(f"{bench}: cost per run")
        ax.legend(fontsize=7, loc="lower right")
    return to_png(fig), cite(s)


def _paired_bars(ax, d: pd.DataFrame, bars) -> bool:
    """Two bars per row of `d`, each (column, legend label, bar options), labelled by offering;
    a log axis when they span decades (True then)."""
    y = range(len(d))
    for offset, (col, text, kw) in zip((0.2, -0.2), bars):
        ax.barh([i + offset for i in y], d[col], height=0.4, label=text, **kw)
    ax.set_yticks(list(y), [label(r) for r in d.to_dict("records")], fontsize=8)
    return log_if_wide(ax, [v for col, _, _ in bars for v in d[col]], "x")


def log_if_wide(ax, values, axis: str = "x") -> bool:
    """A log axis (True) when the values span over a decade: one slow or dear offering would squash the rest."""
    v = [float(x) for x in values if x is not None and not pd.isna(x) and float(x) > 0]
    wide = bool(v) and max(v) > 10 * min(v)
    if wide:
        (ax.set_xscale if axis == "x" else ax.set_yscale)("log")
        scale = ax.xaxis if axis == "x" else ax.yaxis
        # 0.1, 1, 10 rather than 10^-1, 10^0, 10^1; no labels on minor ticks (they crowd)
        scale.set_major_formatter(StrMethodFormatter("{x:,g}"))  # matplotlib's own: the figure pickles for a worker
        scale.set_minor_formatter(NullFormatter())
    return wide


# Where a number may go, in label heights from its point: nearest first, then a widening ring.
_OFFSETS = [
    (dx * r, dy * r)
    for r in (1.0, 1.8, 2.6, 3.6, 4.8, 6.2, 8.0)
    for dx, dy in ((1, 1), (1, -1), (-1, 1), (-1, -1), (1.4, 0), (-1.4, 0), (0, 1.3), (0, -1.3))
]


def place_numbers(ax, points, texts: list[str], fontsize: float, colours=None) -> list[tuple[float, ...]]:
    """Write each number at the first spot beside its point where it overlaps no other number and no point and
    stays inside the axes (nowhere free: the first spot), joined to it by a thin line when far. Boxes are
    estimated from the font size, so nothing is drawn to measure; the axes' limits and layout must be final.
    Returns the numbers' boxes in display pixels."""
    dpi = ax.figure.dpi
    height = fontsize * dpi / 72.0 + 2
    markers = [tuple(p) for p in ax.transData.transform(list(points))]
    frame = tuple(ax.bbox.extents)
    taken = [_box(mx, my, height, height) for mx, my in markers]
    placed = []
    for (x, y), (mx, my), text, colour in zip(points, markers, texts, colours or [None] * len(texts)):
        width = 0.62 * (height - 2) * len(text) + 4
        spots = [(dx * height, dy * height) for dx, dy in _OFFSETS]
        boxes = {o: _box(mx + o[0], my + o[1], width, height) for o in spots}
        free = (o for o in spots if _inside(boxes[o], frame) and not any(_overlap(boxes[o], t) for t in taken))
        ox, oy = next(free, spots[0])
        box = boxes[ox, oy]
        taken.append(box)
        placed.append(box)
        far = math.hypot(ox, oy) > 1.5 * height
        line = {"arrowstyle": "-", "color": "#888888", "linewidth": 0.6} if far else None
        ax.annotate(
            text,
            xy=(x, y),
            xytext=(ox * 72.0 / dpi, oy * 72.0 / dpi),
            textcoords="offset points",
            ha="center",
            va="center",
            fontsize=fontsize,
            color=colour,
            zorder=4,
            arrowprops=line,
        )
    return placed


def _box(cx: float, cy: float, w: float, h: float) -> tuple[float, float, float, float]:
    return (cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2)


def _overlap(a, b) -> bool:
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


def _inside(a, frame) -> bool:
    return frame[0] <= a[0] and a[2] <= frame[2] and frame[1] <= a[1] and a[3] <= frame[3]


def hourly_vs_time_figure(summary: pd.DataFrame):
    """The figure of hourly_vs_time (for tests that measure its labels), or None."""
    s = summary[summary["hourly_usd"].notna() & summary["train_hours"].notna()]
    panels = _compared(s)
    if not panels:
        return None
    fig, axes = _panels(len(panels), 4.0)
    numbered = []  # (axes, points, colours): numbered once the layout is final
    for ax, (bench, d) in zip(axes, panels):
        d = d.sort_values(["train_hours", "offering_id"])
        unit = time_unit(list(d["train_hours"]))
        x, y = d["train_hours"] * PER_HOUR[unit], d["hourly_usd"]
        on = d["on_hourly_frontier"].astype(bool)
        numbered.append((ax, list(zip(x, y)), ["tab:red" if f else "0.3" for f in on]))
        ax.scatter(x[~on], y[~on], color="tab:gray", s=14)
        ax.plot(x[on], y[on], "o-", color="tab:red", ms=4, label="efficient frontier")
        xlog, ylog = log_if_wide(ax, x, "x"), log_if_wide(ax, y, "y")
        ax.set_xlabel(f"time to train ({unit})" + (", log scale" if xlog else ""))
        ax.set_ylabel("cost per hour (USD)" + (", log scale" if ylog else ""))
        ax.set_title(f"{bench}: cost per hour vs time to train", fontsize=9)
        names = [f"{i}  {label(r)}" for i, r in enumerate(d.to_dict("records"), 1)]
        blank = [Line2D([], [], ls="none")] * len(names)
        frontier = [Line2D([], [], color="tab:red", marker="o", ms=4)]
        ax.legend(
            frontier + blank,
            ["efficient frontier", *names],
            fontsize=7,
            loc="upper left",
            bbox_to_anchor=(1.01, 1.0),
            borderaxespad=0,
            handlelength=1.2,
            frameon=False,
        )
        ax.margins(0.08)
    lay_out(fig)  # the layout is final: labels are placed against it
    for ax, pts, colours in numbered:
        place_numbers(ax, pts, [str(i) for i in range(1, len(pts) + 1)], 7, colours)
    return fig


def hourly_vs_time(summary: pd.DataFrame, cite: Cite):
    """Seed 003: cost per hour against time to train, the efficient frontier joined, points numbered."""
    s = summary[summary["hourly_usd"].notna() & summary["train_hours"].notna()]
    fig = hourly_vs_time_figure(summary)
    if fig is None:
        return None
    return to_png(fig, laid_out=True), cite(s)  # laid out once: the numbers stay where placed


def samples_per_dollar(summary: pd.DataFrame, cite: Cite):
    """Seed 004: the cost of a fixed number of samples (hourly price / (throughput x 3600), each run at its own
    price), per 1,000 or per million as reads best, in the benchmark's unit."""
    s = summary[summary["samples_per_usd"].notna() & (summary["samples_per_usd"] > 0)]
    panels = _compared(s)
    if not panels:
        return None
    fig, axes = _panels(len(panels), 0.35 * max(len(d) for _, d in panels) + 1.2)
    for ax, (bench, d) in zip(axes, panels):
        count, words = per_samples_scale(list(1 / d["samples_per_usd"]))
        d = d.assign(cost=count / d["samples_per_usd"]).sort_values("cost", ascending=False)
        ax.barh([label(r) for r in d.to_dict("records")], d["cost"], color="tab:green")
        log = log_if_wide(ax, d["cost"], "x")
        ax.set_xlabel(f"USD per {words} {units(d)}" + (", log scale" if log else "") + " (shorter is cheaper)")
        ax.set_title(f"{bench}: cost per {words} {units(d)}")
        ax.tick_params(axis="y", labelsize=8)
    return to_png(fig), cite(s)


def relative_to_base(summary: pd.DataFrame, base: str, cite: Cite):
    """Seed 002: training time and cost relative to the base offering."""
    s = summary[summary["rel_time"].notna()] if "rel_time" in summary else summary.iloc[0:0]
    panels = _compared(s)
    if not panels:
        return None
    fig, axes = _panels(len(panels), 0.45 * max(len(d) for _, d in panels) + 1.2)
    for ax, (bench, d) in zip(axes, panels):
        d = d.sort_values("rel_time")
        log = _paired_bars(ax, d, (("rel_time", "time to train", {}), ("rel_train_cost", "cost to train", {})))
        ax.axvline(1.0, color="black", lw=0.8)
        ax.set_xlabel(f"relative to {base} (= 1)" + (", log scale" if log else ""))
        ax.set_title(f"{bench}: relative to the base")
        ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    return to_png(fig), cite(s)


def scaling(scale: pd.DataFrame):
    """Seed 000, figure 2: multi-GPU speed-up against the ideal (linear)."""
    if scale.empty or scale["offering_id"].nunique() < 2:  # one offering's speed-up is in the scaling table
        return None
    fig, ((ax,),) = figure(1, 1, (9, 0.5 * len(scale) + 1.5))
    names = [f"{r['benchmark']}: {r['offering_id']} x{r['gpus']}" for r in scale.to_dict("records")]
    y = range(len(scale))
    ax.barh([i + 0.2 for i in y], scale["ideal"], height=0.4, color="lightgray", label="ideal (linear)")
    ax.barh([i - 0.2 for i in y], scale["speedup"], height=0.4, color="tab:blue", label="measured speed-up")
    for i, e in zip(y, scale["efficiency"]):
        ax.annotate(f"{e:.0%}", (0, i - 0.2), xytext=(3, -3), textcoords="offset points", fontsize=7, color="white")
    ax.set_yticks(list(y), names, fontsize=8)
    ax.set_xlabel("speed-up over 1 GPU of the same model")
    ax.legend(fontsize=7)
    return to_png(fig), "Speed-up = throughput with n GPUs / throughput with 1; efficiency = speed-up / n."


def breakeven_vs_utilisation(be: pd.DataFrame, summary: pd.DataFrame, cite: Cite, top: int = 3):
    """Seed 004, section 5.2: the on-prem box per sample against the best cloud offerings, by days of use."""
    if be.empty:
        return None
    catalog = load_catalog()
    days = [d / 2 for d in range(2, 63)]
    groups = list(be.groupby(["benchmark", "workload", "onprem"], dropna=False))[:MAX_PANELS]
    fig, axes = _panels(len(groups), 4.0)
    for ax, ((bench, _wl, box), d) in zip(axes, groups):
        spec = catalog.get(box).onprem
        tp_box = float(d["onprem_throughput"].iloc[0])
        d = d.assign(per_sample=d["cloud_hourly_usd"] / d["cloud_throughput"]).sort_values("per_sample").head(top)
        for r in d.to_dict("records"):
            gain = [r["per_sample"] / (onprem_hourly(spec, x) / tp_box) for x in days]
            (line,) = ax.plot(days, gain, label=f"vs {r['cloud']}" + (" (spot)" if r["market"] == "spot" else ""))
            # marks on the crossings: 1x (break-even) and 2x (seed 004's "twice as cheap")
            for col, level in (("breakeven_days_per_month", 1.0), ("twice_cheaper_days_per_month", 2.0)):
                x = r.get(col)
                if x is not None and not pd.isna(x) and days[0] <= x <= days[-1]:
                    ax.plot([x], [level], "o", color=line.get_color())
                    ax.annotate(f"{x:.1f} d", (x, level), xytext=(4, -10), textcoords="offset points", fontsize=7)
        ax.axhline(1.0, color="black", lw=0.8)
        ax.axhline(2.0, color="gray", lw=0.6, ls="--")
        ax.set_xlabel("days of use per month (24 h a day)")
        ax.set_ylabel("cloud cost / on-prem cost")
        wl = d["workload_label"].iloc[0]
        ax.set_title(f"{bench} ({wl}): {box} vs the {len(d)} cheapest per sample", fontsize=9)
        ax.legend(fontsize=7)
    src = catalog.get(groups[0][0][2]).specs_source
    return to_png(fig), f"On-prem: {src}. Cloud " + cite(summary[summary["offering_id"].isin(be["cloud"])])


def imagenet(summary: pd.DataFrame, cite: Cite):
    """Seed 004, section 5.1: time and cost of an ImageNet-scale training, from each offering's measured images/s."""
    sched = imagenet_schedules()
    s = summary[summary["benchmark"].isin(sched) & (summary["imagenet_hours"] > 0)]
    panels = _compared(s)
    if not panels:
        return None
    rows = max(len(d) for _, d in panels)
    fig, axes = figure(len(panels), 2, (11, max(2.5, 0.35 * rows + 1.2) * len(panels)))  # at most MAX_PANELS
    for (ax_t, ax_c), (name, d) in zip(axes, panels):
        d = d.sort_values("imagenet_hours")
        names = [label(r) for r in d.to_dict("records")]
        ax_t.barh(names, d["imagenet_hours"], color="tab:blue")
        # one slow machine would flatten every other bar
        log = log_if_wide(ax_t, d["imagenet_hours"], "x")
        log_cost = log_if_wide(ax_c, d["imagenet_cost_usd"], "x")
        ax_t.set_xlabel("hours (extrapolated)" + (", log scale" if log else ""))
        ax_t.set_title(f"{name}: time", fontsize=9)
        ax_t.tick_params(axis="y", labelsize=8)
        priced = d["imagenet_cost_usd"].notna()
        ax_c.barh([x for x, p in zip(names, priced) if p], d.loc[priced, "imagenet_cost_usd"], color="tab:purple")
        ax_c.set_xlabel("USD (extrapolated, at the price paid per hour)" + (", log scale" if log_cost else ""))
        ax_c.set_title(f"{name}: cost" + ("" if priced.all() else " (unpriced offerings left out)"), fontsize=9)
        ax_c.tick_params(axis="y", labelsize=8)
    used = sorted(set(s["benchmark"]))
    work = "; ".join(
        f"{b}: {sched[b]['samples']:,} images (batch {sched[b]['batch_size']} x "
        f"{sched[b]['iterations']:,} iterations, {sched[b]['paper']})"
        for b in used
    )
    caption = (
        f"Extrapolation, not a measurement. Training as in each model's paper ({work}; seed 004, section "
        "5.1) divided by the median images/s measured here. Assumes the measured steady-state throughput "
        "holds for the whole run (no data loading from disk, evaluation, checkpoints or interruptions), "
        "at the batch size and precision measured, and at the price paid per hour. " + cite(s)
    )
    return to_png(fig), caption
