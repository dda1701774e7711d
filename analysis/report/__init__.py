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
from analysis.output import USD

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
    s["throughput"] = [None if pd.isna(v) else f"{v:,.1f} {x}/s" for v, x in zip(s["samples_per_second"], u)]
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
    return scroll(f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>")


def scroll(table: str) -> str:
    """A table in a container that scrolls sideways if the table is ever wider than the page."""
    return f'<div class="scroll">{table}</div>'


class PriceNotes:
    """Price sources as numbered footnotes: a row shows "[2]", the list under
    the tables gives source, date, billing rule and note once."""

    def __init__(self):
        self.notes: dict[tuple, int] = {}

    def ref(self, r: dict) -> str:
        key = tuple(
            None if _cell(r.get(k), None)[0] == "&ndash;" else str(r.get(k))
            for k in ("price_source", "price_as_of", "billing", "price_note")
        )
        if not any(key):
            return None
        n = self.notes.setdefault(key, len(self.notes) + 1)
        return f"[{n}]"

    def cite(self, frame: pd.DataFrame) -> str:
        """A chart's caption for its prices: the numbers of their notes."""
        cols = [c for c in ("price_source", "price_as_of", "billing", "price_note") if c in frame.columns]
        refs = {self.ref(r) for r in frame[cols].to_dict("records")} - {None}
        if not refs:
            return "Prices: none recorded."
        listed = ", ".join(sorted(refs, key=lambda ref: int(ref.strip("[]"))))
        return f"Prices: {listed} in the price sources under the tables."

    def items(self) -> list[tuple[int, str]]:
        """(number, "source (as of date); billing: rule; note") in number order."""
        out = []
        for (src, as_of, billing, note), n in sorted(self.notes.items(), key=lambda kv: kv[1]):
            text = src or "no price source"
            if as_of:
                text += f" (as of {as_of})"
            if billing:
                text += f"; billing: {billing}"
            if note:
                text += f"; {note}"
            out.append((n, text))
        return out

    def html(self) -> str:
        if not self.notes:
            return ""
        items = "".join(f'<li value="{n}">{html.escape(text)}</li>' for n, text in self.items())
        return f'<h3>Price sources</h3><ol class="sources">{items}</ol>'


def breakable(ident: str) -> str:
    """An id that may wrap after "/", "+" and "-" (<wbr>), never inside a word."""
    out = html.escape(ident)
    for ch in "/+-":
        out = out.replace(ch, ch + "<wbr>")
    return out


def _has(frame: pd.DataFrame, col: str) -> bool:
    return col in frame.columns and pd.to_numeric(frame[col], errors="coerce").notna().any()


def _rel(v) -> str:
    from analysis.report.answer import _digits, _missing

    return "&ndash;" if _missing(v) else _digits(float(v))


def config_table(rows: pd.DataFrame, notes: PriceNotes) -> str:
    """One configuration's offerings: times in one unit (answer.time_unit of the
    longest), throughput in its sample unit, no empty column, no identical row."""
    from analysis.report.answer import in_unit, time_unit
    from analysis.report.plots import units

    unit = time_unit([float(h) for h in rows["train_hours"] if h == h])
    u = units(rows)
    cols = [
        ("offering", lambda r: breakable(str(r["offering_id"])), False),
        ("market", lambda r: html.escape(str(r["market"])), False),
        ("GPUs", lambda r: _cell(r.get("gpus_used"), "{:.0f}")[0], True),
        ("runs", lambda r: _cell(r.get("repeats"), "{:.0f}")[0], True),
        (f"time ({unit})", lambda r: in_unit(r["train_hours"], unit), True),
        ("spread", lambda r: _cell(r.get("train_hours_spread"), "{:.0%}")[0], True),
        ("price paid", lambda r: _cell(r.get("prices_paid"), None)[0], False),
        ("cost to train (USD)", lambda r: _cell(r.get("train_cost_usd"), USD)[0], True),
        ("billed (USD)", lambda r: _cell(r.get("billed_cost_usd"), USD)[0], True),
    ]
    if _has(rows, "samples_per_second"):
        cols.append((f"{u}/s", lambda r: _cell(r.get("samples_per_second"), "{:,.1f}")[0], True))
    if _has(rows, "samples_per_usd"):
        cols.append((f"{u} per USD", lambda r: _cell(r.get("samples_per_usd"), "{:,.0f}")[0], True))
    if _has(rows, "final_accuracy"):
        cols.append(("accuracy", lambda r: _cell(r.get("final_accuracy"), "{:.3f}")[0], True))
    if _has(rows, "gpu_utilization_mean"):
        cols.append(("GPU util. (mean %)", lambda r: _cell(r.get("gpu_utilization_mean"), "{:.0f}")[0], True))
    if _has(rows, "rel_time"):
        cols.append(("time vs base", lambda r: _rel(r.get("rel_time")), True))
        cols.append(("cost vs base", lambda r: _rel(r.get("rel_train_cost")), True))
    cols.append(("frontier", lambda r: "yes" if str(r.get("on_frontier")) == "True" else "", False))
    cols.append(("price", lambda r: notes.ref(r) or "&ndash;", False))
    seen, body = set(), []
    for r in rows.sort_values(["train_hours", "offering_id"], na_position="last").to_dict("records"):
        cells = tuple(f(r) for _, f, _ in cols)
        if cells in seen:  # identical once rounded: shown once
            continue
        seen.add(cells)
        body.append(
            "<tr>"
            + "".join(f'<td class="num">{c}</td>' if num else f"<td>{c}</td>" for c, (_, _, num) in zip(cells, cols))
            + "</tr>"
        )
    head = "".join(f"<th>{html.escape(h)}</th>" for h, _, _ in cols)
    missing = [
        what
        for col, what in (
            ("final_accuracy", "accuracy"),
            ("gpu_utilization_mean", "GPU utilisation"),
            ("samples_per_second", f"{u}/s"),
        )
        if not _has(rows, col)
    ]
    note = f'<p class="note">No run of this configuration recorded {", ".join(missing)}.</p>' if missing else ""
    return scroll(f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>") + note


def _figure(title: str, png: bytes | None, caption: str) -> str:
    if png is None:
        return f'<h3>{html.escape(title)}</h3><p class="empty">Not drawn: {html.escape(caption)}</p>'
    data = base64.b64encode(png).decode("ascii")
    return (
        f'<figure><h3>{html.escape(title)}</h3><img alt="{html.escape(title)}" '
        f'src="data:image/png;base64,{data}"><figcaption>{html.escape(caption)}</figcaption></figure>'
    )


def _charts(charts) -> str:
    """The charts that carry information; one line says which were left out and why."""
    drawn = "".join(_figure(t, png, cap) for t, (png, cap) in charts if png is not None)
    skipped = [f"{t} ({cap})" for t, (png, cap) in charts if png is None]
    note = f'<p class="note">Not drawn: {html.escape("; ".join(skipped))}.</p>' if skipped else ""
    return drawn + note


def _section(sid: str, title: str, body: str) -> str:
    return f'<section id="{sid}"><h2>{html.escape(title)}</h2>{body}</section>'


PRICE_NOTES = "<!-- price notes -->"


def render_html(runs: pd.DataFrame, tables: dict, opts: Options, source: str) -> str:
    from analysis.report import answer, plots, reference

    summary = tables["summary"]
    counts = (
        f"{len(runs)} runs in the table, {int((runs['status'] == 'completed').sum()) if len(runs) else 0} "
        f"completed; base offering {opts.base}; recommendations rank by "
        f"{'billed cost (launch to termination)' if opts.cost_basis == 'billed' else 'cost to train'}."
    )
    parts = [answer.section_html(tables["recommendations"], opts)]
    notes = PriceNotes()
    if summary.empty:
        parts.append(
            _section(
                "results",
                "Results",
                '<p class="empty">No completed runs to report. Run '
                "<code>python -m analysis collect</code> against your results bucket first; failed, "
                "interrupted and set-aside runs are listed by collect.</p>",
            )
        )
    else:
        body = [
            reference.assumed_price_note(summary),
            '<p class="note">One table per configuration; medians over repeated runs; spread = '
            "(max &minus; min) / median time. Cost to train prices the training time alone; billed prices "
            "instance launch to termination over every attempt, under each offering's billing rule. Times "
            "under an hour are in minutes, longer ones in hours (a column takes the unit of its longest "
            f"time). Relative columns divide by {html.escape(str(opts.base))}. Price sources are the "
            "numbered notes under the tables.</p>",
        ]
        for (_bench, _wl), rows in summary.groupby(["benchmark", "workload"], dropna=False, sort=True):
            body.append(f"<h3>{html.escape(answer.configuration(rows.iloc[0].to_dict()))}</h3>")
            body.append(config_table(rows, notes))
        body.append(PRICE_NOTES)
        parts.append(_section("results", "Per configuration", "".join(body)))
        cite = notes.cite  # captions cite the numbered price sources instead of repeating them
        charts = [
            ("Cost per run (seed 000, figure 1)", plots.cost_to_train(summary, cite)),
            ("Cost per hour vs time to train (seed 003)", plots.hourly_vs_time(summary, cite)),
            ("Samples per dollar, in each benchmark's unit (seed 004)", plots.samples_per_dollar(summary, cite)),
            (f"Time and cost relative to {opts.base} (seed 002)", plots.relative_to_base(summary, opts.base, cite)),
            ("Multi-GPU speed-up vs ideal (seed 000, figure 2)", plots.scaling(tables["scaling"])),
            (
                "On-prem break-even vs utilisation (seed 004, section 5.2)",
                plots.breakeven_vs_utilisation(tables["breakeven"], summary, cite=cite),
            ),
            (
                "ImageNet-scale training, extrapolated from measured images/s (seed 004, section 5.1)",
                plots.imagenet(summary, cite),
            ),
        ]
        parts.append(_section("charts", "Charts", _charts(charts)))
        if not tables["scaling"].empty:
            parts.append(
                _section(
                    "scaling",
                    "Multi-GPU scaling",
                    html_table(
                        tables["scaling"],
                        (
                            ("benchmark", "benchmark", None),
                            ("workload_label", "configuration", None),
                            ("gpu_model", "GPU", None),
                            ("offering_id", "offering", None),
                            ("gpus", "GPUs", "{:.0f}"),
                            ("speedup", "speed-up", "{:.2f}"),
                            ("efficiency", "efficiency", "{:.0%}"),
                            ("reference", "1-GPU reference", None),
                        ),
                    ),
                )
            )
        if not tables["breakeven"].empty:
            parts.append(
                _section(
                    "breakeven",
                    "On-prem break-even",
                    html_table(
                        tables["breakeven"],
                        (
                            ("benchmark", "benchmark", None),
                            ("workload_label", "configuration", None),
                            ("onprem", "on-prem box", None),
                            ("cloud", "cloud offering", None),
                            ("market", "market", None),
                            ("cloud_hourly_usd", "cloud USD/h", "{:.4f}"),
                            ("breakeven_days_per_month", "cheaper from (days/month)", "{:.1f}"),
                            ("twice_cheaper_days_per_month", "2x cheaper from (days/month)", "{:.1f}"),
                            ("note", "note", None),
                        ),
                    ),
                )
            )
        parts.append(f'<section id="reference">{reference.section(runs)}</section>')
    not_done = runs[runs["status"] != "completed"] if len(runs) else runs
    if len(not_done):
        nd = not_done.assign(price=[notes.ref(r) for r in not_done.to_dict("records")])
        parts.append(
            _section(
                "not-completed",
                "Runs that did not complete (billed, not timed)",
                html_table(
                    nd,
                    (
                        ("run_id", "run", None),
                        ("offering_id", "offering", None),
                        ("status", "status", None),
                        ("billed_cost_usd", "billed USD", USD),
                        ("price", "price", None),
                        ("error", "error", None),
                    ),
                ),
            )
        )
    body = "\n".join(parts)
    # the footnotes go under the tables, once every table has taken its numbers
    body = body.replace(PRICE_NOTES, notes.html(), 1) if PRICE_NOTES in body else body + notes.html()
    return Template(TEMPLATE.read_text()).substitute(
        generated=html.escape(datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")),
        table=html.escape(source),
        counts=html.escape(counts),
        body=body,
    )


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
