"""The HTML report and terminal summary built from the table `collect` wrote.

`build_report(runs, out_dir, opts)` writes out_dir/index.html: one file,
plots embedded as base64 PNG, no external resource of any kind, so it can be
mailed or archived as is. Every price shown carries its source and date.

The page's structure is in templates/*.html.j2 (Jinja2, autoescaped: a value
from the data is always text, never markup); this module computes what they
show. Probe runs (the table's `probe` column: short runs of a job) are kept
apart from full runs: left out of every table, answer and chart, and counted
in one line.
"""

from __future__ import annotations

import base64
import math
from datetime import datetime, timezone
from functools import lru_cache
from pathlib import Path
from typing import NamedTuple

import pandas as pd
from jinja2 import Environment, FileSystemLoader, StrictUndefined
from markupsafe import Markup, escape

from analysis.metrics import Options, analyse
from analysis.output import USD
from analysis.report.facts import RunFacts

TEMPLATES = Path(__file__).with_name("templates")


@lru_cache(maxsize=1)
def _environment() -> Environment:
    """Autoescaped: every value from the data reaches the page as text, never as markup."""
    return Environment(
        loader=FileSystemLoader(TEMPLATES),
        autoescape=True,
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )


def render(template: str, **context) -> str:
    """One of templates/*.html.j2 with `context`."""
    return _environment().get_template(template).render(**context)


class Cell(NamedTuple):
    text: str | None  # None: a missing value, shown as a dash
    num: bool = False  # right-aligned, tabular figures


class Row(NamedTuple):
    cells: tuple[Cell, ...]
    css: str | None = None


class Table(NamedTuple):
    head: tuple[str, ...]
    rows: tuple[Row, ...]
    css: str | None = None


class Figure(NamedTuple):
    title: str
    png: str | None  # base64; None when not drawn, the caption then says why
    caption: str

    @classmethod
    def of(cls, title: str, png: bytes | None, caption: str) -> Figure:
        return cls(title, None if png is None else base64.b64encode(png).decode("ascii"), caption)


def with_unit_columns(summary: pd.DataFrame) -> pd.DataFrame:
    """Throughput and per-dollar figures as text in each benchmark's unit
    ("1,234.5 tweets/s", "4,100,000 images"): one table mixes benchmarks."""
    from analysis.report.plots import units

    s = summary.copy()
    u = [units(s.loc[[i]]) for i in s.index]
    s["throughput"] = [None if pd.isna(v) else f"{v:,.1f} {x}/s" for v, x in zip(s["samples_per_second"], u)]
    s["per_usd"] = [None if pd.isna(v) else f"{v:,.0f} {x}" for v, x in zip(s["samples_per_usd"], u)]
    return s


def _cell(value, fmt) -> Cell:
    """A value as a table cell: formatted numbers right-aligned, booleans as "yes"."""
    if value is None or (isinstance(value, float) and math.isnan(value)) or value is pd.NA:
        return Cell(None)
    if fmt is not None:
        try:
            return Cell(fmt.format(value), True)
        except (ValueError, TypeError):
            pass
    if isinstance(value, (bool,)) or str(value) in ("True", "False"):
        return Cell("yes" if str(value) == "True" else "")
    return Cell(str(value))


def frame_table(frame: pd.DataFrame, columns) -> Table:
    """A table of `frame`'s (column, header, format) columns that it has; format None = text."""
    cols = [c for c in columns if c[0] in frame.columns]
    rows = tuple(Row(tuple(_cell(r.get(c), fmt) for c, _, fmt in cols)) for r in frame.to_dict("records"))
    return Table(tuple(h for _, h, _ in cols), rows)


class PriceNotes:
    """Price sources as numbered footnotes: a row shows "[2]", the list under
    the tables gives source, date, billing rule and note once."""

    def __init__(self):
        self.notes: dict[tuple, int] = {}

    def ref(self, r: dict) -> str:
        key = tuple(
            None if _cell(r.get(k), None).text is None else str(r.get(k))
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


def breakable(ident: str) -> Markup:
    """An id that may wrap after "/", "+" and "-" (<wbr>), never inside a word; escaped."""
    out = str(escape(ident))
    for ch in "/+-":
        out = out.replace(ch, ch + "<wbr>")
    return Markup(out)


def _has(frame: pd.DataFrame, col: str) -> bool:
    return col in frame.columns and pd.to_numeric(frame[col], errors="coerce").notna().any()


def _rel(v) -> str | None:
    from analysis.report.answer import _digits, _missing

    return None if _missing(v) else _digits(float(v))


def _config_columns(rows: pd.DataFrame, notes: PriceNotes) -> list[tuple[str, object, bool]]:
    """(header, row -> cell text, numeric) for one configuration's table: times
    in one unit (answer.time_unit of the longest), throughput in its sample
    unit, and only the optional columns some run recorded."""
    from analysis.report.answer import in_unit, time_unit
    from analysis.report.plots import units

    unit = time_unit([float(h) for h in rows["train_hours"] if h == h])
    u = units(rows)
    text = lambda col, fmt: lambda r: _cell(r.get(col), fmt).text
    cols = [
        ("offering", lambda r: breakable(str(r["offering_id"])), False),
        ("market", lambda r: str(r["market"]), False),
        ("GPUs", text("gpus_used", "{:.0f}"), True),
        ("runs", text("repeats", "{:.0f}"), True),
        (f"time ({unit})", lambda r: in_unit(r["train_hours"], unit), True),
        ("spread", text("train_hours_spread", "{:.0%}"), True),
        ("price paid", text("prices_paid", None), False),
        ("cost to train (USD)", text("train_cost_usd", USD), True),
        ("billed (USD)", text("billed_cost_usd", USD), True),
    ]
    optional = (
        ("samples_per_second", f"{u}/s", "{:,.1f}"),
        ("samples_per_usd", f"{u} per USD", "{:,.0f}"),
        ("final_accuracy", "accuracy", "{:.3f}"),
        ("gpu_utilization_mean", "GPU util. (mean %)", "{:.0f}"),
    )
    cols += [(head, text(col, fmt), True) for col, head, fmt in optional if _has(rows, col)]
    if _has(rows, "rel_time"):
        cols.append(("time vs base", lambda r: _rel(r.get("rel_time")), True))
        cols.append(("cost vs base", lambda r: _rel(r.get("rel_train_cost")), True))
    cols.append(("frontier", lambda r: "yes" if str(r.get("on_frontier")) == "True" else "", False))
    cols.append(("price", lambda r: notes.ref(r), False))
    return cols


def config_table(rows: pd.DataFrame, notes: PriceNotes) -> dict:
    """One configuration's offerings, no empty column, no identical row; and
    which optional figures no run of it recorded ("" when none is missing)."""
    from analysis.report.plots import units

    cols = _config_columns(rows, notes)
    seen, body = set(), []
    for r in rows.sort_values(["train_hours", "offering_id"], na_position="last").to_dict("records"):
        cells = tuple(Cell(f(r), num) for _, f, num in cols)
        if cells in seen:  # identical once rounded: shown once
            continue
        seen.add(cells)
        body.append(Row(cells))
    missing = [
        what
        for col, what in (
            ("final_accuracy", "accuracy"),
            ("gpu_utilization_mean", "GPU utilisation"),
            ("samples_per_second", f"{units(rows)}/s"),
        )
        if not _has(rows, col)
    ]
    return {"table": Table(tuple(h for h, _, _ in cols), tuple(body)), "missing": ", ".join(missing)}


def _charts(summary: pd.DataFrame, tables: dict, opts: Options, cite) -> dict:
    """The charts that carry information, and one line naming those left out and why.
    Captions cite the numbered price sources (`cite`) instead of repeating them."""
    from analysis.report import plots

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
    return {
        "drawn": [Figure.of(t, png, cap) for t, (png, cap) in charts if png is not None],
        "skipped": "; ".join(f"{t} ({cap})" for t, (png, cap) in charts if png is None),
    }


SCALING_COLUMNS = (
    ("benchmark", "benchmark", None),
    ("workload_label", "configuration", None),
    ("gpu_model", "GPU", None),
    ("offering_id", "offering", None),
    ("gpus", "GPUs", "{:.0f}"),
    ("speedup", "speed-up", "{:.2f}"),
    ("efficiency", "efficiency", "{:.0%}"),
    ("reference", "1-GPU reference", None),
)
BREAKEVEN_COLUMNS = (
    ("benchmark", "benchmark", None),
    ("workload_label", "configuration", None),
    ("onprem", "on-prem box", None),
    ("cloud", "cloud offering", None),
    ("market", "market", None),
    ("cloud_hourly_usd", "cloud USD/h", "{:.4f}"),
    ("breakeven_days_per_month", "cheaper from (days/month)", "{:.1f}"),
    ("twice_cheaper_days_per_month", "2x cheaper from (days/month)", "{:.1f}"),
    ("note", "note", None),
)
NOT_DONE_COLUMNS = (
    ("run_id", "run", None),
    ("offering_id", "offering", None),
    ("status", "status", None),
    ("billed_cost_usd", "billed USD", USD),
    ("price", "price", None),
    ("error", "error", None),
)


def _results(facts: RunFacts, tables: dict, opts: Options, notes: PriceNotes) -> dict:
    """The sections over completed runs: tables per configuration, charts,
    scaling, break-even and the reference section. Numbers price notes in page order."""
    from analysis.report import answer, reference

    summary = tables["summary"]
    configs = [
        {"title": answer.configuration(rows.iloc[0].to_dict()), **config_table(rows, notes)}
        for _, rows in summary.groupby(["benchmark", "workload"], dropna=False, sort=True)
    ]
    extra = (
        ("scaling", "Multi-GPU scaling", tables["scaling"], SCALING_COLUMNS),
        ("breakeven", "On-prem break-even", tables["breakeven"], BREAKEVEN_COLUMNS),
    )
    return {
        "results": {"assumed": reference.assumed_rates(summary), "base": str(opts.base), "configs": configs},
        "charts": _charts(summary, tables, opts, notes.cite),
        "tables": [
            {"sid": sid, "title": title, "table": frame_table(frame, cols)}
            for sid, title, frame, cols in extra
            if not frame.empty
        ],
        "ref": reference.context_of(facts.measured),
    }


def _counts(facts: RunFacts, opts: Options) -> str:
    basis = "billed cost (launch to termination)" if opts.cost_basis == "billed" else "cost to train"
    return (
        f"{facts.total} runs in the table, {facts.completed} completed; base offering {opts.base}; "
        f"recommendations rank by {basis}."
    )


def page_context(runs: pd.DataFrame | RunFacts, tables: dict, opts: Options, source: str, probes: int = 0) -> dict:
    """Everything templates/report.html.j2 shows, computed in page order so the
    price notes are numbered in the order a reader meets them. `runs`: the full
    runs, or their facts as a query over the results dataset computed them."""
    from analysis.report import answer

    facts = runs if isinstance(runs, RunFacts) else RunFacts.of(runs)
    ctx = {
        "generated": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "source": source,
        "counts": _counts(facts, opts),
        "probes": probes,
        "answer": {
            "sentences": [
                {"configuration": answer.configuration(r), "rest": answer.sentence(r)[len(answer.configuration(r)) :]}
                for r in tables["recommendations"]
            ],
            "basis": answer.basis_line(opts),
        },
        "results": None,
        "not_done": None,
    }
    notes = PriceNotes()
    if not tables["summary"].empty:
        ctx.update(_results(facts, tables, opts, notes))
    not_done = facts.not_done
    if len(not_done):
        nd = not_done.assign(price=[notes.ref(r) for r in not_done.to_dict("records")])
        ctx["not_done"] = frame_table(nd, NOT_DONE_COLUMNS)
    ctx["notes"] = notes.items()
    return ctx


def render_html(runs: pd.DataFrame | RunFacts, tables: dict, opts: Options, source: str, probes: int = 0) -> str:
    """The report page; `probes`: probe runs left out of `runs`, named in one line."""
    return render("report.html.j2", **page_context(runs, tables, opts, source, probes))


def split_probes(runs: pd.DataFrame) -> tuple[pd.DataFrame, int]:
    """The full runs, and how many probe runs (short runs of a job) were set
    apart. A table without the `probe` column predates probes: every row is a full run."""
    if "probe" not in runs.columns or runs.empty:
        return runs, 0
    probe = runs["probe"].astype("boolean").fillna(False).to_numpy(dtype=bool)
    return runs[~probe], int(probe.sum())


def probe_line(count: int) -> str:
    """The one line that says probe runs were left out and where to see them ("" for none)."""
    if not count:
        return ""
    plural = "s" if count != 1 else ""
    return (
        f"{count} probe run{plural} left out of this report (short runs of a job, not full benchmarks): "
        "`gpubench bench` shows them."
    )


def build_report(runs: pd.DataFrame, out_dir: str | Path, opts: Options, source: str = "") -> tuple[Path, dict]:
    """Write out_dir/index.html over the full runs (probe runs left out, and
    counted in one line); return its path and the metrics tables."""
    runs, probes = split_probes(runs)
    tables = analyse(runs, opts)
    return write_pages(RunFacts.of(runs), tables, out_dir, opts, source, probes), tables


def write_pages(
    facts: RunFacts, tables: dict, out_dir: str | Path, opts: Options, source: str = "", probes: int = 0
) -> Path:
    """Write out_dir/index.html (and summary.csv) from the runs' facts and the
    metrics tables, however they were computed; return the page's path."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    path = out / "index.html"
    tmp = out / ".index.html.tmp"
    tmp.write_text(render_html(facts, tables, opts, source or str(out), probes), encoding="utf-8")
    tmp.replace(path)
    if not tables["summary"].empty:
        tables["summary"].to_csv(out / "summary.csv", index=False)
    return path
