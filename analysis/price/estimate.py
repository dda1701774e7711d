"""A stack's cost estimated from its collected runs: reads the results table.

The results table is the one `collect` writes (default report/results.parquet):
per run its billed_hours, the billed window `runs` computed over every attempt
under the offering's billing rule. This module turns it into plain figures
(`MeasuredRuns`: billed seconds of the completed runs per stack and benchmark)
and infra's `infra.catalog.estimate.estimate_costs` makes the estimate from
them: the median billed time x the hourly price, else the deadline bound
maxHours x hourly price (also without pandas, the analysis extra).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from infra.catalog import estimate as catalog_estimate
from infra.catalog.estimate import MeasuredRuns

REPORT_DIR = Path(__file__).resolve().parents[2] / "report"


@dataclass
class ResultsTable:
    """The results table read, where from, or why none was read."""

    table: Any = None
    path: Path | None = None
    note: str | None = None


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
    return ResultsTable(None, None, f"no results table at {where} (run `gpubench collect`, or pass --table DIR)")


def measured_runs(table: Any) -> MeasuredRuns:
    """Billed seconds of the completed runs per (stack, benchmark) in `table`
    (a DataFrame, a ResultsTable, None, or a MeasuredRuns already read), as the
    plain data infra estimates from."""
    if isinstance(table, MeasuredRuns):
        return table
    results = table if isinstance(table, ResultsTable) else ResultsTable(table)
    df, where = results.table, str(results.path) if results.path else None
    columns = set(df.columns) if df is not None else set()
    if not ({"stack", "benchmark"} <= columns and {"billed_hours", "billed_seconds"} & columns):
        return MeasuredRuns({}, where, results.note)
    if "status" in columns:
        df = df[df["status"] == "completed"]
    if "billed_hours" in columns:
        billed = df["billed_hours"] * 3600.0
    else:
        billed = df["billed_seconds"]  # tables written before billed_hours
    seconds = {
        (stack, bench): [float(s) for s in group.dropna()]
        for (stack, bench), group in billed.groupby([df["stack"], df["benchmark"]])
    }
    return MeasuredRuns(seconds, where, results.note)


def measured_runs_of(where: Path | str = REPORT_DIR, stacks: Sequence[str] | None = None) -> MeasuredRuns:
    """measured_runs of the results table at `where` (a directory or bucket
    prefix collect wrote, or its results.parquet itself), queried with DuckDB:
    only the billed time of the completed runs of `stacks` (None: every stack)
    is read, never the whole table. A table without a results.parquet export
    (a bucket's, or one collected without exports) is queried as the results
    dataset. A CSV table, or a machine without DuckDB, is read as before."""
    text = str(where)
    if text.endswith(".csv"):
        return measured_runs(read_results(where))
    table = str(Path(text).parent) if text.endswith(".parquet") else text
    try:
        from analysis.report.query import billed_seconds
        from analysis.report.source import NoResultsTable, results_dataset
    except ImportError:  # the analysis extra (duckdb, pyarrow) is not installed
        return measured_runs(read_results(where))
    try:
        dataset = results_dataset(table)
    except NoResultsTable:
        return measured_runs(read_results(where))  # a CSV table, or none: read_results names what is missing
    return MeasuredRuns(billed_seconds(dataset, stacks), _named(table), None)


def _named(table: str) -> str:
    """The table as the estimate's source names it: its results.parquet when that is what was read."""
    export = Path(table) / "results.parquet"
    return str(export) if "://" not in table and export.is_file() else table


def estimate_costs(cfg: Any, hourly: float | None, table: Any) -> list[dict[str, Any]]:
    """Per benchmark of the stack `cfg`: the median billed seconds of its
    collected runs in `table` (a DataFrame or a ResultsTable, whose path and
    note the source then names) when there are some, else the deadline bound."""
    return catalog_estimate.estimate_costs(cfg, hourly, measured_runs(table))
