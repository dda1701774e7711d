"""The HTML report and terminal summary built from the table `collect` wrote.

`build_report(runs, out_dir, opts)` writes out_dir/index.html: one file,
plots embedded as base64 PNG, no external resource of any kind, so it can be
mailed or archived as is. Every price shown carries its source and date.
"""
from __future__ import annotations

import base64
import html
import math
from datetime import datetime, timezone
from pathlib import Path
from string import Template

import pandas as pd

from analysis.metrics import Options, analyse
from analysis.output import USD, usd_amount

TEMPLATE = Path(__file__).with_name("template.html")

# (column, header, format) for the summary table; format None = text
SUMMARY_COLUMNS = (
    ("benchmark", "benchmark", None),
    ("workload_label", "configuration", None),
    ("offering_id", "offering", None),
    ("market", "market", None),
    ("gpus_used", "GPUs used", "{:.0f}"),
    ("repeats", "runs", "{:.0f}"),
    ("train_hours", "time to train (h, median)", "{:.3f}"),
    ("train_hours_spread", "time spread", "{:.1%}"),
    ("prices_paid", "price paid", None),
    ("train_cost_usd", "cost to train (USD, training only)", USD),
    ("billed_cost_usd", "billed cost (USD, launch to termination)", USD),
    ("throughput", "throughput", None),
    ("per_usd", "per USD", None),
    ("imagenet_hours", "ImageNet-equivalent h", "{:,.1f}"),
    ("imagenet_cost_usd", "ImageNet-equivalent USD", "{:,.0f}"),
    ("rel_time", "time vs base", "{:.2f}"),
    ("rel_train_cost", "cost vs base", "{:.2f}"),
    ("on_frontier", "on frontier", None),
    ("price_source", "price source", None),
    ("price_as_of", "price as of", None),
    ("billing", "billing rule", None),
    ("price_note", "price note", None),
)


def with_unit_columns(summary: pd.DataFrame) -> pd.DataFrame:
    """Throughput and per-dollar figures as text in each benchmark's unit
    ("1,234.5 tweets/s", "4,100,000 images"): one table mixes benchmarks."""
    from analysis.report.plots import units

    s = summary.copy()
    u = [units(s.loc[[i]]) for i in s.index]
    s["throughput"] = [
        None if pd.isna(v) else f"{v:,.1f} {x}/s" for v, x in zip(s["samples_per_second"], u)
    ]
    s["per_usd"] = [None if pd.isna(v) else f"{v:,.0f} {x}" for v, x in zip(s["samples_per_usd"], u)]
    return s


def _cell(value, fmt) -> tuple[str, bool]:
    if value is None or (isinstance(value, float) and math.isnan(value)) or value is pd.NA:
        return "&ndash;", False
    if fmt is not None:
        try:
            return html.escape(fmt.format(value)), True
        except (ValueError, TypeError):
            pass
    if isinstance(value, (bool,)) or str(value) in ("True", "False"):
        return ("yes" if str(value) == "True" else ""), False
    return html.escape(str(value)), False


def html_table(frame: pd.DataFrame, columns) -> str:
    cols = [c for c in columns if c[0] in frame.columns]
    head = "".join(f"<th>{html.escape(h)}</th>" for _, h, _ in cols)
    body = []
    for r in frame.to_dict("records"):
        cells = []
        for c, _, fmt in cols:
            text, num = _cell(r.get(c), fmt)
            cells.append(f'<td class="num">{text}</td>' if num else f"<td>{text}</td>")
        body.append("<tr>" + "".join(cells) + "</tr>")
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"


def _figure(title: str, png: bytes | None, caption: str) -> str:
    if png is None:
        return f"<h3>{html.escape(title)}</h3><p class=\"empty\">Not drawn: {html.escape(caption)}</p>"
    data = base64.b64encode(png).decode("ascii")
    return (f"<figure><h3>{html.escape(title)}</h3><img alt=\"{html.escape(title)}\" "
            f"src=\"data:image/png;base64,{data}\"><figcaption>{html.escape(caption)}</figcaption></figure>")


def _recommendation_html(recs: list[dict]) -> str:
    rows = []
    for rec in recs:
        for what in ("cheapest", "fastest", "under_deadline", "under_budget"):
            if what not in rec:
                continue
            r = rec[what]
            label = what.replace("_", " ")
            if what == "under_deadline":
                label += f" ({rec['deadline_hours']:g} h)"
            if what == "under_budget":
                label += f" (USD {rec['budget_usd']:g})"
            config = f"{rec['benchmark']} ({rec.get('workload_label') or 'default'})"
            if r["offering_id"] is None:
                rows.append((config, label, r["why"], "", "", ""))
            else:
                cost = "unpriced" if r["cost_usd"] is None else usd_amount(r["cost_usd"])
                price = ("no price: see below" if r["price_source"] is None
                         else f"{r.get('prices_paid') or ''} {r['price_source']} (as of {r['price_as_of']})")
                rows.append((config, label, f"{r['offering_id']} ({r['market']})", f"{r['hours']:.3f}", cost, price))
        for u in rec.get("unpriced", []):
            rows.append((f"{rec['benchmark']} ({rec.get('workload_label') or 'default'})", "not ranked by cost",
                         f"{u['offering_id']} ({u['market']})", f"{u['hours']:.3f}", "unpriced",
                         f"{u['why']}. To price it: {u['how_to_price']}"))
    head = "".join(f"<th>{h}</th>" for h in ("configuration", "pick", "offering", "hours", "USD", "price"))
    body = "".join("<tr>" + "".join(f"<td>{html.escape(str(c))}</td>" for c in row) + "</tr>" for row in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def render_html(runs: pd.DataFrame, tables: dict, opts: Options, source: str) -> str:
    from analysis.report import plots, reference

    summary = tables["summary"]
    counts = (f"{len(runs)} runs in the table, {int((runs['status'] == 'completed').sum()) if len(runs) else 0} "
              f"completed; base offering {opts.base}; recommendations rank by "
              f"{'billed cost (launch to termination)' if opts.cost_basis == 'billed' else 'cost to train'}.")
    parts = []
    if summary.empty:
        parts.append('<p class="empty">No completed runs to report. Run <code>python -m analysis collect</code> '
                     "against your results bucket first; failed, interrupted and set-aside runs are listed by "
                     "collect.</p>")
    else:
        parts.append(reference.assumed_price_note(summary))
        parts.append("<h2>Recommendations</h2>" + _recommendation_html(tables["recommendations"]))
        parts.append("<h2>Per offering and benchmark</h2><p class=\"note\">Medians over repeated runs; spread = "
                     "(max &minus; min) / median. Cost to train prices the training time alone; billed cost prices "
                     "instance launch to termination over every attempt, under each offering's billing rule.</p>")
        parts.append(html_table(with_unit_columns(summary), SUMMARY_COLUMNS))
        charts = [
            ("Cost per run (seed 000, figure 1)", plots.cost_to_train(summary)),
            ("Cost per hour vs time to train (seed 003)", plots.hourly_vs_time(summary)),
            ("Samples per dollar, in each benchmark's unit (seed 004)", plots.samples_per_dollar(summary)),
            (f"Time and cost relative to {opts.base} (seed 002)", plots.relative_to_base(summary, opts.base)),
            ("Multi-GPU speed-up vs ideal (seed 000, figure 2)", plots.scaling(tables["scaling"])),
            ("On-prem break-even vs utilisation (seed 004, section 5.2)",
             plots.breakeven_vs_utilisation(tables["breakeven"], summary)),
        ]
        parts.append(reference.section(runs))
        parts.append("<h2>Charts</h2>" + "".join(_figure(t, png, cap) for t, (png, cap) in charts))
        if not tables["scaling"].empty:
            parts.append("<h2>Multi-GPU scaling</h2>" + html_table(tables["scaling"], (
                ("benchmark", "benchmark", None), ("workload_label", "configuration", None),
                ("gpu_model", "GPU", None), ("offering_id", "offering", None),
                ("gpus", "GPUs", "{:.0f}"), ("speedup", "speed-up", "{:.2f}"), ("efficiency", "efficiency", "{:.0%}"),
                ("reference", "1-GPU reference", None))))
        if not tables["breakeven"].empty:
            parts.append("<h2>On-prem break-even</h2>" + html_table(tables["breakeven"], (
                ("benchmark", "benchmark", None), ("workload_label", "configuration", None),
                ("onprem", "on-prem box", None), ("cloud", "cloud offering", None),
                ("market", "market", None), ("cloud_hourly_usd", "cloud USD/h", "{:.4f}"),
                ("breakeven_days_per_month", "cheaper from (days/month)", "{:.1f}"),
                ("twice_cheaper_days_per_month", "2x cheaper from (days/month)", "{:.1f}"),
                ("note", "note", None))))
    not_done = runs[runs["status"] != "completed"] if len(runs) else runs
    if len(not_done):
        parts.append("<h2>Runs that did not complete (billed, not timed)</h2>" + html_table(not_done, (
            ("run_id", "run", None), ("offering_id", "offering", None), ("status", "status", None),
            ("billed_cost_usd", "billed USD", USD), ("price_source", "price source", None),
            ("price_as_of", "price as of", None), ("error", "error", None))))
    return Template(TEMPLATE.read_text()).substitute(
        generated=html.escape(datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")),
        table=html.escape(source), counts=html.escape(counts), body="\n".join(parts))


def build_report(runs: pd.DataFrame, out_dir: str | Path, opts: Options, source: str = "") -> tuple[Path, dict]:
    """Write out_dir/index.html; return its path and the metrics tables."""
    tables = analyse(runs, opts)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    path = out / "index.html"
    tmp = out / ".index.html.tmp"
    tmp.write_text(render_html(runs, tables, opts, source or str(out)), encoding="utf-8")
    tmp.replace(path)
    if not tables["summary"].empty:
        tables["summary"].to_csv(out / "summary.csv", index=False)
    return path, tables
