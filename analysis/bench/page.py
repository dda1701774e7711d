"""The bench answer as one self-contained, autoescaped HTML page: the sentence, the cost/time chart (an
embedded PNG), the ranked table, the probes' cost and earlier predictions beside the measurements.
"""

from __future__ import annotations

import base64
import io
import math
from datetime import datetime, timezone
from pathlib import Path

from analysis.bench.answer import interval
from analysis.bench.judge import line
from analysis.report.answer import duration, in_unit, time_unit, usd
from payload.money import usd_amount

PAGE = "index.html"
TEMPLATES = Path(__file__).with_name("templates")
DPI = 90
LABEL_POINTS = 9  # font size of the chart's numbers
# basis of each figure when a row does not say: the probe measures these, the rest is extrapolated
DEFAULT_BASIS = {"samples_per_second": "measured", "overhead_seconds": "measured"}
BARS = {"fmt": "o", "ecolor": "#bbbbbb", "elinewidth": 1, "capsize": 2, "zorder": 3}
MARKERS = {
    True: {"markersize": 7, "color": "#1f77b4", "mfc": "#1f77b4"},
    False: {"markersize": 6, "color": "#999999", "mfc": "white"},
}  # on the frontier or not


def write_page(doc: dict, out_dir: Path) -> Path:
    """Write out_dir/index.html for one bench run and return its path."""
    import jinja2  # heavy: loaded when a page is written, so `gpubench bench --help` stays light

    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(TEMPLATES), autoescape=True, undefined=jinja2.StrictUndefined
    )
    text = env.get_template("bench.html.j2").render(**page_context(doc))
    path = out_dir / PAGE
    path.write_text(text, encoding="utf-8")
    return path


def page_context(doc: dict) -> dict:
    """Everything the template shows, as display strings: the template only lays it out."""
    answer = doc.get("answer") or {}
    candidates = list(doc.get("candidates") or [])
    ordered = _in_rank_order(candidates, answer)
    frontier = {_key(f) for f in answer.get("frontier") or []}
    numbered = [r for r in ordered if _finite(r.get("est_hours")) and _finite(r.get("est_usd"))]
    numbers = {_key(r): i + 1 for i, r in enumerate(numbered)}
    chart, caption = frontier_chart([(numbers[_key(r)], r) for r in numbered], frontier_keys=frontier)
    probe_total = doc.get("probe_total_usd")
    return {
        "task": str(doc.get("task") or "-"),
        "work": f"{doc['work_samples']:,.0f} samples" if _finite(doc.get("work_samples")) else None,
        "generated": doc.get("generated") or datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "sentence": answer.get("sentence") or "No answer was computed.",
        "chart": chart,
        "chart_caption": caption,
        "rows": [_table_row(r, numbers.get(_key(r)), _key(r) in frontier) for r in ordered],
        "probes": [
            {"label": _label(r), "usd": _money(r.get("probe_usd")), "status": str(r.get("status") or "-")}
            for r in candidates
        ],
        "probe_total": _money(probe_total) if _finite(probe_total) else None,
        "unmeasured": [
            {"label": _label(u), "reason": str(u.get("reason") or "no estimate")}
            for u in answer.get("unmeasured") or []
        ],
        "unpriced": [_label(u) for u in answer.get("unpriced") or []],
        "probing": (doc.get("probing") or {}).get("sentence"),
        "checks": [line(c) for c in doc.get("prediction_checks") or []],
    }


def _key(r: dict) -> tuple:
    return (r.get("name"), r.get("offering"), r.get("market"))


def _finite(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _label(r: dict) -> str:
    """The answer's label when it gave one ('aws/g5.xlarge (spot)'), else the offering."""
    if r.get("label"):
        return str(r["label"])
    return str(r.get("offering") or r.get("name") or "?") + (" (spot)" if r.get("market") == "spot" else "")


def _in_rank_order(candidates: list[dict], answer: dict) -> list[dict]:
    """Candidates in the answer's rank order; those it did not rank follow in their own order."""
    rank = {_key(r): i for i, r in enumerate(answer.get("ranked") or [])}
    labels = {_key(r): r.get("label") for r in answer.get("ranked") or []}
    ordered = sorted(candidates, key=lambda r: rank.get(_key(r), len(rank)))
    return [r | ({"label": labels[_key(r)]} if labels.get(_key(r)) else {}) for r in ordered]


def _money(value) -> str:
    return usd(value) if _finite(value) else "-"


def _interval(value, low, high, fmt) -> str | None:
    """'3.20 (2.90-3.60)'; an absent upper bound reads 'or more'; None without a value."""
    if not _finite(value):
        return None
    return f"{fmt(value)} ({interval(low, high, fmt)})" if _finite(low) else fmt(value)


def _triple(r: dict, field: str) -> list:
    return [r.get(field + s) for s in ("", "_low", "_high")]


def _basis(r: dict, field: str) -> str:
    return (r.get("basis") or {}).get(field) or DEFAULT_BASIS.get(field, "extrapolated")


def _table_row(r: dict, number: int | None, on_frontier: bool) -> dict:
    """One table row: each figure with its interval and whether the probe measured it."""
    hours = _triple(r, "est_hours")
    unit = time_unit([h for h in hours if _finite(h)])
    overhead = r.get("overhead_seconds")
    cells = [
        ("samples_per_second", _interval(*_triple(r, "samples_per_second"), _rate)),
        ("overhead_seconds", duration(overhead / 3600) if _finite(overhead) else None),
        ("est_hours", _interval(*hours, lambda v: in_unit(v, unit)) + f" {unit}" if _finite(hours[0]) else None),
        ("est_usd", _interval(*_triple(r, "est_usd"), usd_amount)),
    ]
    return {
        "number": number,
        "label": _label(r),
        "kind": str(r.get("kind") or "-"),
        "market": str(r.get("market") or "-"),
        "status": str(r.get("status") or "-"),
        "frontier": on_frontier,
        "cells": [{"text": text or "-", "basis": _basis(r, field) if text else None} for field, text in cells],
        "probe_usd": _money(r.get("probe_usd")),
        "notes": [str(n) for n in r.get("notes") or []] + ([str(r["reason"])] if r.get("reason") else []),
    }


def _rate(v: float) -> str:
    return f"{v:,.1f}" if v >= 10 else f"{v:.3g}"


def frontier_chart(points: list[tuple[int, dict]], *, frontier_keys: set) -> tuple[str | None, str]:
    """(base64 PNG, caption) of estimated cost against time, or (None, why not)."""
    if not points:
        return None, "no candidate has both an estimated time and a price"
    from matplotlib.figure import Figure  # heavy: as jinja2 above

    from analysis.report.plots import place_numbers  # heavy: matplotlib and pandas, as jinja2 above

    fig = Figure(figsize=(8.0, 5.2), dpi=DPI)
    ax = fig.subplots()
    for _, r in points:
        on = _key(r) in frontier_keys
        x, y = r["est_hours"], r["est_usd"]
        (xl, xh), (yl, yh) = _span(r, "est_hours"), _span(r, "est_usd")
        ax.errorbar(x, y, xerr=[[x - xl], [xh - x]], yerr=[[y - yl], [yh - y]], **BARS, **MARKERS[on])
    front = sorted((r["est_hours"], r["est_usd"]) for _, r in points if _key(r) in frontier_keys)
    if len(front) > 1:
        ax.plot(*zip(*front), color="#1f77b4", linewidth=1, zorder=2, label="cost/time frontier")
        ax.legend(loc="best", fontsize=8)
    log_x = _set_axis(ax, "x", [v for _, r in points for v in _span(r, "est_hours")])
    log_y = _set_axis(ax, "y", [v for _, r in points for v in _span(r, "est_usd")])
    ax.set_xlabel("estimated time for the whole job (h)" + (", log scale" if log_x else ""))
    ax.set_ylabel("estimated billed cost (USD)" + (", log scale" if log_y else ""))
    ax.grid(True, which="both", alpha=0.3)
    place_numbers(ax, [(r["est_hours"], r["est_usd"]) for _, r in points], [str(n) for n, _ in points], LABEL_POINTS)
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=DPI, bbox_inches="tight")
    caption = (
        "Each number is a candidate in the table below; bars are 95% intervals, filled markers the frontier "
        "(no other candidate is both faster and cheaper)."
    )
    return base64.b64encode(buf.getvalue()).decode("ascii"), caption


def _span(r: dict, field: str) -> tuple[float, float]:
    """The interval as drawn: an end that is absent, unbounded or on the wrong side is the estimate itself."""
    value, low, high = _triple(r, field)
    return (low if _finite(low) and 0 < low <= value else value), (high if _finite(high) and high >= value else value)


def spans_decades(values: list[float]) -> bool:
    """True when positive values span more than a decade: such an axis is drawn on a log scale."""
    lo, hi = min(values), max(values)
    return lo > 0 and hi / lo > 10


def _set_axis(ax, which: str, values: list[float]) -> bool:
    """Log scale when the values span more than a decade; limits with a margin. True when log."""
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter  # heavy: as in frontier_chart

    lo, hi = min(values), max(values)
    log = spans_decades(values)
    if log:
        limits = (lo / 1.4, hi * 1.4)
    else:
        pad = (hi - lo) * 0.12 or abs(hi) * 0.2 or 1.0
        limits = (max(0.0, lo - pad) if lo >= 0 else lo - pad, hi + pad)
    axis = ax.xaxis if which == "x" else ax.yaxis
    (ax.set_xscale if which == "x" else ax.set_yscale)("log" if log else "linear")
    (ax.set_xlim if which == "x" else ax.set_ylim)(*limits)
    if log:  # plain numbers at 1, 2, 5 x 10^k: '20', not '2 x 10^1'
        axis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
        axis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
        axis.set_minor_formatter(NullFormatter())
    return log
