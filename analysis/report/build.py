"""The report pipeline as one call: read the table `collect` wrote, re-price it if asked, write
DIR/index.html and say what to print. `gpubench report`, campaigns and the demo all call
`write_report`; none of them goes through the command line to get a report."""

from __future__ import annotations

import io
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from typing import Any, Literal

import pandas as pd

from analysis.bench.judge import checks, line, predictions_in
from analysis.bench.record import bench_dirs
from analysis.dataset.sql import num, one_of
from analysis.metrics import Options, analyse_summary
from analysis.observe import time_of
from analysis.output import USD_SIGN, print_table
from analysis.price import age as price_age
from analysis.report import answer, reference
from analysis.report.page import PriceNotes, informative, presented, probe_line, with_unit_columns, write_pages
from analysis.report.query import report_query, results_dataset
from infra.catalog import load_catalog

CostBasis = Literal["billed", "train"]


@dataclass
class ReportOutcome:
    """What one report run produced: the page, the metrics tables and the words for a terminal."""

    html: Path
    table: str  # the results table the report read (collect's output: a directory or a bucket prefix)
    runs: int
    as_of: date | None
    options: Options
    tables: dict[str, Any]
    price_warning: str | None = None
    probes: int = 0  # probe runs (short runs of a job) left out of every figure
    predictions: list[dict] = field(default_factory=list)  # bench predictions beside later runs (`judged`)

    @property
    def empty(self) -> bool:
        return self.tables["summary"].empty

    def summary_doc(self) -> dict[str, Any]:
        """The JSON `gpubench report --json` prints: summary rows, recommendations, scaling, break-even."""
        return {
            "html": str(self.html),
            "runs": self.runs,
            "probe_runs_left_out": self.probes,
            "as_of": self.as_of,
            "base": self.options.base,
            "summary": _records(self.tables["summary"]),
            "recommendations": self.tables["recommendations"],
            "scaling": self.tables["scaling"].to_dict("records"),
            "breakeven": _records(self.tables["breakeven"]),
            "prediction_checks": self.predictions,
        }

    def text(self) -> str:
        """The terminal summary: the answer, one row per configuration, the price notes, the page's path."""
        if self.empty:
            return (
                f"no completed runs in {self.table} ({self.runs} rows): nothing to compare yet. "
                f"Run `gpubench collect --table {self.table}` against your results bucket.\n"
                f"report: {self.html}\n"
            )
        probes = probe_line(self.probes)
        checked = "".join(f"\nprediction vs measurement: {text}" for text in prediction_lines(self.predictions))
        text = _summary_text(self.tables, self.options) + (f"\n{probes}" if probes else "") + checked
        return text + f"\nreport: {self.html}\n"


def _records(frame) -> list[dict[str, Any]]:
    """Rows as dicts with None, not NaN, for a missing value (JSON has no NaN)."""
    return frame.astype(object).where(frame.notna(), None).to_dict("records")


def short(text: str, width: int = 70) -> str:
    """Terminal cells stay readable; the HTML report has the full source."""
    return text if len(text) <= width else text[: width - 3] + "..."


def _cell(value: Any, fmt: str = "{}") -> str:
    """A cell: "-" for a missing value, never "nan"."""
    try:
        missing = value is None or value != value or pd.isna(value)
    except (TypeError, ValueError):
        missing = False
    return "-" if missing else fmt.format(value)


# Terminal columns left out when they carry no information (analysis.report.page.INFORMATIVE).
_TELLS = {"GPUs": "gpus_used", "GPU util": "gpus_used", "time/base": "rel_time", "cost/base": "rel_time"}


# The terminal table: (header, cell of one summary record `r`, the time column's `unit`, the price `notes`).
_COLUMNS = (
    ("benchmark", lambda r, unit, notes: answer.benchmark_name(r["benchmark"])),
    ("configuration", lambda r, unit, notes: short(answer.short_label(r.get("workload_label")) or "-", 40)),
    ("offering", lambda r, unit, notes: _cell(r["offering_id"])),
    ("market", lambda r, unit, notes: _cell(r["market"])),
    ("GPUs", lambda r, unit, notes: _cell(r["gpus_used"], "{:.0f}")),
    ("runs", lambda r, unit, notes: _cell(r["repeats"])),
    ("time ({unit})", lambda r, unit, notes: answer.in_unit(r["train_hours"], unit)),
    ("price paid", lambda r, unit, notes: _cell(r.get("prices_paid"))),
    ("cost to train", lambda r, unit, notes: _cell(r["train_cost_usd"], USD_SIGN)),
    ("billed", lambda r, unit, notes: _cell(r["billed_cost_usd"], USD_SIGN)),
    ("throughput", lambda r, unit, notes: _cell(r.get("throughput"))),
    ("accuracy", lambda r, unit, notes: _cell(r.get("final_accuracy"), "{:.3f}")),
    ("GPU util", lambda r, unit, notes: _cell(r.get("gpu_utilization_mean"), "{:.0f}%")),
    ("time/base", lambda r, unit, notes: _cell(r.get("rel_time"), "{:.2f}")),
    ("cost/base", lambda r, unit, notes: _cell(r.get("rel_train_cost"), "{:.2f}")),
    ("price", lambda r, unit, notes: notes.ref(r) or "-"),
)


def _summary_text(tables: dict[str, Any], opts: Any) -> str:
    summary = tables["summary"]
    out = io.StringIO()
    counts = summary.groupby(["benchmark", "workload"], dropna=False).size().to_dict()
    said = [answer.sentence(r, counts.get((r["benchmark"], r["workload"]))) for r in tables["recommendations"]]
    said.append(answer.basis_line(opts))
    versus = [" ".join(answer.versus_lines(v)) for v in tables["versus"]]  # this machine beside the studies' GPUs
    # this machine alone: its comparison with the studies is the answer, so it comes first
    blocks = [versus, said] if summary["offering_id"].nunique() == 1 else [said, versus]
    print("\n\n".join("\n".join(b) for b in blocks if b), file=out)
    print(file=out)
    notes = PriceNotes()
    # one unit for the whole time column (the one rule: the unit of its longest time)
    unit = answer.time_unit([float(h) for h in summary["train_hours"] if h == h])
    cols = [(h, cell) for h, cell in _COLUMNS if h not in _TELLS or informative(summary, _TELLS[h])]
    rows = [tuple(cell(r, unit, notes) for _, cell in cols) for r in with_unit_columns(summary).to_dict("records")]
    print_table(rows, tuple(h.format(unit=unit) for h, _ in cols), out=out)
    print("\nprices:", file=out)
    for n, text in notes.items():
        print(f"  [{n}] {text}", file=out)
    return out.getvalue()


# --- "Predictions against measurements": each `gpubench bench` prediction (bench.json) beside the newest completed
# run of its benchmark, offering and market started after it (a full run before a probe), judged as a bench does.

PREDICTION_RUN_COLUMNS = ("benchmark", "offering_id", "market", "probe", "run_id", "started_at", "samples_per_second")


def _measured_runs(query: Any, benchmarks: Sequence[str]) -> list[dict]:
    """The completed runs of these benchmarks with a rate, from the report's query (analysis.report.query)."""
    if not benchmarks or not set(PREDICTION_RUN_COLUMNS) <= query.columns:
        return []
    frame = query.frame(
        f"SELECT {', '.join(PREDICTION_RUN_COLUMNS)} FROM runs WHERE status = 'completed' AND {one_of('benchmark', benchmarks)} "
        f"AND {num('samples_per_second')} > 0"
    )
    return frame.to_dict("records")


def judged(predictions: Sequence[dict], runs: Sequence[dict]) -> list[dict]:
    """Each prediction (the newest per benchmark, offering and market) beside the newest run after it."""
    newest: dict[tuple, dict] = {}
    for p in predictions:
        newest[(p["benchmark"], p.get("offering"), p.get("market"))] = p
    out = []
    for (benchmark, offering, market), p in sorted(newest.items(), key=lambda kv: tuple(map(str, kv[0]))):
        after = time_of(p.get("at"))
        later = [
            r
            for r in runs
            if (r["benchmark"], r["offering_id"], r["market"]) == (benchmark, offering, market)
            and after is not None
            and (time_of(r["started_at"]) or after) > after
        ]
        if not later:
            continue
        run = max(later, key=lambda r: (not r["probe"], time_of(r["started_at"])))
        row = {"offering": offering, "market": market, "status": "measured"}
        found = checks([row | {"samples_per_second": float(run["samples_per_second"])}], {(offering, market): p})
        out += [
            c
            | {"benchmark": benchmark, "measured_by": ("probe " if run["probe"] else "full run ") + str(run["run_id"])}
            for c in found
        ]
    return out


def prediction_lines(found: Sequence[dict]) -> list[str]:
    """One line per prediction judged, as a bench prints it, naming the run that measured it."""
    return [f"{c['benchmark']} on {line(c)}; measured by {c['measured_by']}" for c in found]


def write_report(
    out_dir: str | Path,
    *,
    base: str | None = None,
    deadline_hours: float | None = None,
    budget_usd: float | None = None,
    as_of: date | None = None,
    cost_basis: CostBasis = "billed",
    max_price_age: float | None = None,
    table: str | Path | None = None,
) -> ReportOutcome:
    """Write out_dir/index.html (and summary.csv) from the results table at `table` (default: out_dir). ValueError:
    a bad deadline, budget or price-age limit; CatalogError: unknown `base`; FileNotFoundError: no table."""
    for name, value in (("deadline_hours", deadline_hours), ("budget_usd", budget_usd)):
        if value is not None and not value > 0:  # NaN too; a usage error (exit 2) through payload.entrypoint
            raise ValueError(f"--{name.replace('_', '-')} must be a positive number, got {value}")
    if base is not None:
        load_catalog().get(base)  # an unknown id names the closest ones
    dataset_dir = out_dir if table is None else table
    dataset = results_dataset(str(dataset_dir))
    # a deadline or budget the user did not give is not in the answer
    opts = Options(base=base, deadline_hours=deadline_hours, budget_usd=budget_usd, cost_basis=cost_basis)
    # the runs are aggregated where they lie: only the aggregated rows reach pandas
    predicted = [p for _, p in predictions_in(bench_dirs()) if p.get("benchmark")]  # oldest bench first
    with report_query(dataset, as_of=as_of) as query:
        dates, probes = query.catalog_price_dates(), query.probes()
        facts, summary = query.facts(), query.summary()
        runs = _measured_runs(query, sorted({p["benchmark"] for p in predicted}))
    warning = None
    if as_of is None and dates is not None:  # an explicit date asks for that day's prices, old or not
        warning = price_age.warning(dates, price_age.limit(max_price_age))
    # probes of each study's own configuration, recorded beside the table (gpubench demo)
    tables = presented(facts, analyse_summary(summary, opts), reference.read_study_probes(dataset_dir))
    found = judged(predicted, runs)
    html = write_pages(facts, tables, out_dir, opts, str(dataset_dir), probes, prediction_lines(found))
    return ReportOutcome(html, str(dataset_dir), facts.total, as_of, opts, tables, warning, probes, found)
