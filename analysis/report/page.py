"""The report page (templates/report.html.j2, Jinja2 autoescaped: a value from the data is always text, never
markup; charts inline as base64 PNG, the page loads nothing else) from the runs' facts and the metrics tables, and the
pieces the terminal shares (price notes, unit columns, which columns tell anything). Every price shown carries its
source and date; probe runs (short runs of a job) are left out of every table, answer and chart, and counted in one
line."""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import NamedTuple

import pandas as pd
from jinja2 import Environment, FileSystemLoader, StrictUndefined
from markupsafe import Markup, escape

from analysis.csv_export import frame_to_csv
from analysis.metrics import Options
from analysis.output import USD
from analysis.report import answer, plots, reference
from analysis.report.plots import Chart
from analysis.report.query import FACT_KEYS, NOT_COMPLETED_SQL, RUN_FACTS, RunFacts

_ENVIRONMENT = Environment(
    loader=FileSystemLoader(Path(__file__).with_name("templates")),
    autoescape=True,
    undefined=StrictUndefined,
    trim_blocks=True,
    lstrip_blocks=True,
    keep_trailing_newline=True,
)


def render(template: str, **context) -> str:
    return _ENVIRONMENT.get_template(template).render(**context)


class Cell(NamedTuple):
    text: str | None  # None: a missing value, shown as a dash
    num: bool = False  # right-aligned, tabular figures


class Table(NamedTuple):
    head: tuple[str, ...]
    rows: tuple[tuple[Cell, ...], ...]


def breakable(ident: str) -> Markup:
    """An id that may wrap after "/", "+" and "-" (<wbr>), never inside a word; escaped."""
    return Markup(re.sub(r"([/+-])", r"\1<wbr>", str(escape(ident))))


def with_unit_columns(summary: pd.DataFrame) -> pd.DataFrame:
    """Throughput and per-dollar figures in each benchmark's unit ("1,234.5 tweets/s"): one table mixes them."""
    s = summary.copy()
    u = [plots.units(s.loc[[i]]) for i in s.index]
    s["throughput"] = [None if pd.isna(v) else f"{v:,.1f} {x}/s" for v, x in zip(s["samples_per_second"], u)]
    s["per_usd"] = [None if pd.isna(v) else f"{v:,.0f} {x}" for v, x in zip(s["samples_per_usd"], u)]
    return s


def _cell(value, fmt) -> Cell:
    """A value as a table cell: formatted numbers right-aligned, booleans as "yes"."""
    if value is None or str(value).strip() in ("None", "nan", "NaN", "<NA>"):  # missing, or missing as text
        return Cell(None)
    if fmt is not None:
        try:
            return Cell(fmt.format(value), True)
        except (ValueError, TypeError):
            pass
    if str(value) in ("True", "False"):
        return Cell("yes" if str(value) == "True" else "")
    return Cell(str(value))


def frame_table(frame: pd.DataFrame, columns) -> Table:
    """A table of `frame`'s (column, header, format) columns that it has; format None = text."""
    cols = [c for c in columns if c[0] in frame.columns]
    rows = tuple(tuple(_cell(r.get(c), fmt) for c, _, fmt in cols) for r in frame.to_dict("records"))
    return Table(tuple(h for _, h, _ in cols), rows)


class PriceNotes:
    """Price sources as numbered footnotes: a row shows "[2]", the list under the tables says it once."""

    def __init__(self):
        self.notes: dict[tuple, int] = {}

    def ref(self, r: dict) -> str:
        key = (
            reference.price_source_words(r),
            *(answer.present(r.get(k)) for k in ("price_as_of", "billing", "price_note")),
        )
        return f"[{self.notes.setdefault(key, len(self.notes) + 1)}]" if any(key) else None

    def cite(self, frame: pd.DataFrame) -> str:
        """A chart's caption for its prices: the numbers of their notes."""
        cols = ("price_source", "recorded_price_origin", "price_as_of", "billing", "price_note")
        refs = {self.ref(r) for r in frame[[c for c in cols if c in frame.columns]].to_dict("records")} - {None}
        if not refs:
            return "Prices: none recorded."
        listed = ", ".join(sorted(refs, key=lambda ref: int(ref.strip("[]"))))
        return f"Prices: {listed} in the price sources under the tables."

    def items(self) -> list[tuple[int, str]]:
        """(number, "source (as of date); billing: rule; note") in number order."""
        return [
            (
                n,
                (src or "no price source")
                + (f" (as of {as_of})" if as_of else "")
                + (f"; billing: {billing}" if billing else "")
                + (f"; {note}" if note else ""),
            )
            for (src, as_of, billing, note), n in sorted(self.notes.items(), key=lambda kv: kv[1])
        ]


def _has(frame: pd.DataFrame, col: str) -> bool:
    return col in frame.columns and pd.to_numeric(frame[col], errors="coerce").notna().any()


def _numbers(frame: pd.DataFrame, col: str) -> pd.Series:
    return pd.to_numeric(frame[col], errors="coerce") if col in frame.columns else pd.Series(dtype=float)


def _rel(v) -> str | None:
    return None if answer.missing(v) else answer.digits(float(v))


# Columns that carry no information in some tables, and the test that they do (rows -> bool).
INFORMATIVE = {
    # no GPU used anywhere: a column of zeros
    "gpus_used": lambda rows: bool((_numbers(rows, "gpus_used").fillna(0) > 0).any()),
    # a spread needs two runs of one row
    "train_hours_spread": lambda rows: bool((_numbers(rows, "repeats").fillna(0) > 1).any()),
    # relative figures need the base and another offering; all 1.00 says nothing
    "rel_time": lambda rows: (
        rows["offering_id"].nunique() > 1 and bool((_numbers(rows, "rel_time").dropna() != 1).any())
    ),
    # the frontier means something only when some row is off it
    "on_frontier": lambda rows: "on_frontier" in rows and not rows["on_frontier"].astype(str).eq("True").all(),
}


def informative(rows: pd.DataFrame, col: str) -> bool:
    return col in rows.columns and INFORMATIVE[col](rows)


def _accuracy(r: dict) -> str | None:
    """Accuracy as read: on synthetic data it says so (random data: no measure of the model)."""
    text = _cell(r.get("final_accuracy"), "{:.3f}").text
    if text is None:
        return None
    return f"{text} (synthetic data)" if "synthetic" in str(r.get("data") or "") else text


def _per_samples(rows: pd.DataFrame, unit: str):
    """(header, row -> cell) for the cost of as many samples as make the figures read as cents or dollars."""
    per = 1 / _numbers(rows, "samples_per_usd").where(lambda v: v > 0)
    count, words = answer.per_samples_scale(list(per.dropna()))

    def cell(r):
        v = pd.to_numeric(r.get("samples_per_usd"), errors="coerce")
        return None if pd.isna(v) or v <= 0 else _rel(count / float(v))

    return f"USD per {words} {unit}", cell


def _config_columns(rows: pd.DataFrame, notes: PriceNotes) -> list[tuple[str, object, bool]]:
    """(header, row -> cell text, numeric) for one configuration's table: times in one unit (of the longest),
    throughput in its sample unit, and only the columns that tell the reader something here."""
    unit = answer.time_unit([float(h) for h in rows["train_hours"] if h == h])
    u = plots.units(rows)
    text = lambda col, fmt: lambda r: _cell(r.get(col), fmt).text
    per_samples_head, per_samples = _per_samples(rows, u)
    # all on synthetic data: the accuracy header says so once; a mix: each such cell does
    synthetic = bool("data" in rows and len(rows) and rows["data"].astype(str).str.contains("synthetic").all())
    accuracy = text("final_accuracy", "{:.3f}") if synthetic else _accuracy
    frontier = lambda r: "yes" if str(r.get("on_frontier")) == "True" else ""
    relative = _has(rows, "rel_time") and informative(rows, "rel_time")
    cols = (  # (header, cell, numeric, shown)
        ("offering", lambda r: breakable(str(r["offering_id"])), False, True),
        ("market", lambda r: str(r["market"]), False, True),
        ("GPUs", text("gpus_used", "{:.0f}"), True, informative(rows, "gpus_used")),
        ("runs", text("repeats", "{:.0f}"), True, True),
        (f"time ({unit})", lambda r: answer.in_unit(r["train_hours"], unit), True, True),
        ("spread", text("train_hours_spread", "{:.0%}"), True, informative(rows, "train_hours_spread")),
        ("price paid", text("prices_paid", None), False, True),
        ("cost to train (USD)", text("train_cost_usd", USD), True, True),
        ("billed (USD)", text("billed_cost_usd", USD), True, True),
        (f"{u}/s", text("samples_per_second", "{:,.1f}"), True, _has(rows, "samples_per_second")),
        (per_samples_head, per_samples, True, _has(rows, "samples_per_usd")),
        ("accuracy (synthetic data)" if synthetic else "accuracy", accuracy, True, _has(rows, "final_accuracy")),
        ("GPU util. (mean %)", text("gpu_utilization_mean", "{:.0f}"), True, _has(rows, "gpu_utilization_mean")),
        ("time vs base", lambda r: _rel(r.get("rel_time")), True, relative),
        ("cost vs base", lambda r: _rel(r.get("rel_train_cost")), True, relative),
        ("frontier", frontier, False, informative(rows, "on_frontier")),
        ("price", lambda r: notes.ref(r), False, True),
    )
    return [c[:3] for c in cols if c[3]]


def config_table(rows: pd.DataFrame, notes: PriceNotes) -> dict:
    """One configuration's offerings, no empty column, no identical row; and which optional figures no run of
    it recorded ("" when none is missing)."""
    cols = _config_columns(rows, notes)
    ordered = rows.sort_values(["train_hours", "offering_id"], na_position="last").to_dict("records")
    # rows identical once rounded: shown once
    body = dict.fromkeys(tuple(Cell(f(r), num) for _, f, num in cols) for r in ordered)
    missing = [
        what
        for col, what in (
            ("final_accuracy", "accuracy"),
            ("gpu_utilization_mean", "GPU utilisation"),
            ("samples_per_second", f"{plots.units(rows)}/s"),
        )
        if not _has(rows, col) and (col != "gpu_utilization_mean" or informative(rows, "gpus_used"))
    ]
    synthetic = (
        _has(rows, "final_accuracy") and "data" in rows and rows["data"].astype(str).str.contains("synthetic").any()
    )
    return {
        "table": Table(tuple(h for h, _, _ in cols), tuple(body)),
        "missing": ", ".join(missing),
        "synthetic": bool(synthetic),
    }


def _charts(summary: pd.DataFrame, tables: dict, opts: Options, cite) -> dict:
    """The charts that carry information; captions cite the numbered price sources."""
    charts = [
        ("Cost per run (seed 000, figure 1)", plots.cost_to_train(summary, cite)),
        ("Cost per hour vs time to train (seed 003)", plots.hourly_vs_time(summary, cite)),
        ("Cost per sample, in each benchmark's unit (seed 004)", plots.samples_per_dollar(summary, cite)),
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
    # a chart that cannot compare anything is neither drawn nor listed
    return {"drawn": [Chart.of(title, *drawn) for title, drawn in charts if drawn]}


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
    ("started_at", "started", None),
    ("offering_id", "offering", None),
    ("status", "status", None),
    ("billed_cost_usd", "billed USD", USD),
    ("price", "price", None),
    ("error", "error", None),
)
NOT_DONE_COUNT_COLUMNS = (
    ("stack", "stack", None),
    ("offering_id", "offering", None),
    ("status", "status", None),
    ("runs", "runs", "{:,}"),
    ("billed_cost_usd", "billed USD", USD),
    ("latest_start", "latest start", None),
)


def _results(facts: RunFacts, tables: dict, opts: Options, notes: PriceNotes) -> dict:
    """The sections over completed runs, in page order (the price notes are numbered so)."""
    summary = tables["summary"]
    configs = [
        {
            "title": answer.configuration(rows.iloc[0].to_dict()),
            "details": answer.configuration_details(rows.iloc[0].to_dict()),
            **config_table(rows, notes),
        }
        for _, rows in summary.groupby(["benchmark", "workload"], dropna=False, sort=True)
    ]
    extra = (
        ("scaling", "Multi-GPU scaling", tables["scaling"], SCALING_COLUMNS),
        ("breakeven", "On-prem break-even", tables["breakeven"], BREAKEVEN_COLUMNS),
    )
    return {
        "results": {
            "assumed": reference.assumed_rates(summary),
            "base": _base(summary, opts) if any("time vs base" in c["table"].head for c in configs) else "",
            "synthetic": any(c["synthetic"] for c in configs),
            "configs": configs,
        },
        "charts": _charts(summary, tables, opts, notes.cite),
        "tables": [
            {"sid": sid, "title": title, "table": frame_table(frame, cols)}
            for sid, title, frame, cols in extra
            if not frame.empty
        ],
        "ref": reference.context(facts.measured),
    }


def _base(summary: pd.DataFrame, opts: Options) -> str:
    """The base offering as used: the one asked for, else the one the metrics chose ("" for none)."""
    if opts.base:
        return str(opts.base)
    chosen = [answer.present(b) for b in summary.get("base", pd.Series(dtype=object))]
    return next((b for b in chosen if b), "")


def _counts(facts: RunFacts, opts: Options, summary: pd.DataFrame) -> str:
    basis = "billed cost (launch to termination)" if opts.cost_basis == "billed" else "cost to train"
    several = not summary.empty and summary["offering_id"].nunique() > 1
    base = _base(summary, opts) if several else ""
    return (
        f"{facts.total} runs in the table, {facts.completed} completed; "
        + (f"base offering {base}; " if base else "")
        + f"recommendations rank by {basis}."
    )


def answer_context(facts: RunFacts, tables: dict, opts: Options) -> dict:
    """Per configuration its sentence (and ranking); this machine beside the studies' GPUs with its chart,
    first when this machine is the only offering measured."""
    summary = tables["summary"]
    sentences = []
    for rec in tables["recommendations"]:
        wl = rec.get("workload")
        same = summary["workload"].isna() if answer.missing(wl) else summary["workload"] == wl
        rows = summary[(summary["benchmark"] == rec["benchmark"]) & same]
        head = answer.configuration(rec)
        # the ranking goes right after the answer, before the offerings it could not rank
        said, marker, unpriced = answer.sentence(rec, len(rows))[len(head) :].partition(answer.UNPRICED)
        ranking = answer.ranking(rows, opts.cost_column)
        sentences.append(
            dict(configuration=head, rest=said.rstrip(), ranking=ranking, unpriced=(marker + unpriced).strip())
        )
    versus = tables["versus"]
    drawn = reference.versus_plot(versus)
    return {
        "sentences": sentences,
        "basis": answer.basis_line(opts),
        "versus": [answer.versus_lines(v) for v in versus],
        "versus_first": bool(versus) and summary["offering_id"].nunique() == 1,
        "figure": Chart.of(VERSUS_TITLE, *drawn) if drawn else None,
    }


VERSUS_TITLE = "Each study's full training: this machine beside the studies' GPUs"


def page_context(
    facts: RunFacts, tables: dict, opts: Options, source: str, probes: int = 0, predictions: Sequence[str] = ()
) -> dict:
    """Everything templates/report.html.j2 shows, in page order: price notes are numbered as a reader meets them."""
    ctx = {
        "generated": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "source": source,
        "counts": _counts(facts, opts, tables["summary"]),
        "probes": probes,
        "predictions": list(predictions),
        "answer": answer_context(facts, tables, opts),
        "results": None,
        "not_done": None,
    }
    notes = PriceNotes()
    if not tables["summary"].empty:
        ctx.update(_results(facts, tables, opts, notes))
    ctx["not_done"] = not_done_context(facts, notes)
    ctx["notes"] = notes.items()
    return ctx


def not_done_context(facts: RunFacts, notes: PriceNotes) -> dict | None:
    """The runs that did not complete: counted per stack, offering and status, the most recent listed in full,
    and the query that lists them all; None when every run completed."""
    recent = facts.not_done
    if not len(recent):
        return None
    return {
        "total": facts.not_done_total,
        "counts": frame_table(facts.not_done_counts, NOT_DONE_COUNT_COLUMNS),  # not empty: `recent` is not
        "listed": len(recent),
        "recent": frame_table(recent.assign(price=[notes.ref(r) for r in recent.to_dict("records")]), NOT_DONE_COLUMNS),
        "sql": NOT_COMPLETED_SQL,
    }


def probe_line(count: int) -> str:
    """The line that says probe runs were left out and where to see them ("" for none)."""
    if not count:
        return ""
    return (
        f"{count} probe run{'s' if count != 1 else ''} left out of this report (short runs of a job, not full benchmarks): "
        "`gpubench bench` shows them."
    )


def presented(facts: RunFacts, tables: dict, probes: tuple[dict, ...] = ()) -> dict:
    """The metrics tables as the page and the terminal show them: each summary row with its price origin and
    data kind, and this machine beside the studies (`versus`; `probes`: reference.read_study_probes)."""
    summary, per_row = tables["summary"], facts.row_facts
    lacking = [c for c in RUN_FACTS if c not in summary.columns]  # the query.RunsQuery.row_facts columns
    if not summary.empty and not per_row.empty and lacking:
        summary = summary.merge(per_row[FACT_KEYS + lacking], on=FACT_KEYS, how="left")
    return {
        **tables,
        "summary": summary,
        "versus": reference.versus(facts.measured, reference.prices_used(summary), probes),
    }


def write_pages(
    facts: RunFacts,
    tables: dict,
    out_dir: str | Path,
    opts: Options,
    source: str = "",
    probes: int = 0,
    predictions: Sequence[str] = (),
) -> Path:
    """Write out_dir/index.html (and summary.csv); return the page's path. `probes`: probe runs left out;
    `predictions`: a line per bench prediction judged against a later run."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    path = out / "index.html"
    tmp = out / ".index.html.tmp"
    context = page_context(facts, tables, opts, source or str(out), probes, predictions)
    tmp.write_text(render("report.html.j2", **context), encoding="utf-8")
    tmp.replace(path)
    if not tables["summary"].empty:  # in the export's dialect: a result's text never runs as a formula
        tmp = out / ".summary.csv.tmp"
        frame_to_csv(tables["summary"], tmp)
        tmp.replace(out / "summary.csv")
    return path
