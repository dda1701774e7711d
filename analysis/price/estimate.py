"""A stack's cost estimated from its collected runs: the billed seconds per stack and benchmark in the results table
(`MeasuredRuns`), from which infra.catalog.estimate.estimate_costs makes the estimate."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from infra.catalog.estimate import MeasuredRuns


def measured_runs_of(where: Path | str, stacks: Sequence[str] | None = None) -> MeasuredRuns:
    """The billed time of the completed runs of `stacks` (None: every stack) in the results table at
    `where` (a directory or bucket prefix collect wrote, or its results.parquet itself); only those
    are read, never the whole table. No table, or no analysis extra: none, and the note says why."""
    text = str(where)
    table = str(Path(text).parent) if text.endswith(".parquet") else text
    try:  # heavy: pyarrow and deltalake, the analysis extra; `gpubench plan` runs without it
        from analysis.report.query import NoResultsTable, billed_seconds, results_dataset
    except ImportError:  # the analysis extra (pyarrow, deltalake) is not installed
        return MeasuredRuns(
            {}, None, f"{where} was not read: install the analysis extra (pip install 'gpubench[analysis]')"
        )
    try:
        dataset = results_dataset(table)
    except NoResultsTable:
        return MeasuredRuns({}, None, f"no results table at {where} (run `gpubench collect`, or pass --table DIR)")
    export = Path(table) / "results.parquet"  # the source names the file when that is what was read
    return MeasuredRuns(
        billed_seconds(dataset, stacks), str(export) if "://" not in table and export.is_file() else table, None
    )
