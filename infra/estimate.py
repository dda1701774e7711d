"""A stack's cost estimated from its collected runs (light: no Pulumi).

The results table is the one `collect` writes (default report/results.parquet):
per run its billed_hours, the billed window the pricing code computed over
every attempt under the offering's billing rule. The estimate is the median
billed time of the stack's completed runs of a benchmark x the hourly price;
without runs, or without pandas (the analysis extra), it is the deadline bound
maxHours x hourly price, and each estimate says which it is.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from infra.config import BenchmarkConfig

REPORT_DIR = Path(__file__).resolve().parent.parent / "report"


@dataclass
class ResultsTable:
    """The results table preview read, where from, or why it read none."""

    table: Any = None
    path: Path | None = None
    note: str | None = None


def load_results_table(where: Path | str = REPORT_DIR):
    """The analysis results table if present (pandas), else None. `where` is
    a directory holding results.parquet/.csv or the file itself."""
    return read_results(where).table


def read_results(where: Path | str = REPORT_DIR) -> ResultsTable:
    where = Path(where)
    paths = [where] if where.suffix in (".parquet", ".csv") else [where / n for n in ("results.parquet", "results.csv")]
    for path in paths:
        if path.exists():
            try:
                import pandas as pd
            except ImportError:
                return ResultsTable(
                    None, path, f"pandas is not installed, so {path} was not read (pip install 'gpubench[analysis]')"
                )
            table = pd.read_parquet(path) if path.suffix == ".parquet" else pd.read_csv(path)
            return ResultsTable(table, path)
    return ResultsTable(None, None, f"no results table at {where} (run `gpubench collect`, or pass --results PATH)")


def _billed_seconds(table: Any, stack: str, bench: str):
    """Billed seconds of the stack's completed runs of one benchmark."""
    sel = table[(table["stack"] == stack) & (table["benchmark"] == bench)]
    if "status" in sel.columns:
        sel = sel[sel["status"] == "completed"]
    if "billed_hours" in sel.columns:
        return sel["billed_hours"].dropna() * 3600.0
    return sel["billed_seconds"].dropna()  # tables written before billed_hours


def estimate_costs(cfg: BenchmarkConfig, hourly: float | None, table: Any) -> list[dict[str, Any]]:
    """Per benchmark: median billed seconds of the stack's collected runs when
    there are some, else the deadline bound. `table` is a DataFrame or a
    ResultsTable (whose path and note the source then names)."""
    results = table if isinstance(table, ResultsTable) else ResultsTable(table)
    df, origin = results.table, f" in {results.path}" if results.path else ""
    usable = df is not None and {"stack", "benchmark"} <= set(df.columns)
    usable = usable and bool({"billed_hours", "billed_seconds"} & set(df.columns))
    rows: list[dict[str, Any]] = []
    if hourly is None:
        return [{"benchmark": b, "usd": None, "seconds": None, "source": "no catalog price"} for b in cfg.suite]
    for bench in cfg.suite:
        sel = _billed_seconds(df, cfg.stack, bench) if usable else []
        if len(sel):
            seconds = float(sel.median())
            rows.append(
                {
                    "benchmark": bench,
                    "usd": round(seconds / 3600 * hourly, 4),
                    "seconds": seconds,
                    "runs": len(sel),
                    "source": f"measured: median billed time of {len(sel)} collected run(s){origin} x hourly price",
                }
            )
        else:
            why = results.note or f"no completed run of this stack and benchmark{origin}"
            rows.append(
                {
                    "benchmark": bench,
                    "usd": round(cfg.max_hours * hourly, 4),
                    "seconds": cfg.max_hours * 3600,
                    "runs": 0,
                    "source": f"bound: maxHours x hourly price ({why})",
                }
            )
    return rows
