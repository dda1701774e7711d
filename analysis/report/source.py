"""Where the report and the plan read the results table from: one function,
`results_dataset(table)`, a pyarrow Dataset that DuckDB scans with projection
and filter pushdown, so no reader ever holds every row.

This reads the single `<table>/results.parquet` that collect publishes today;
the partitioned results dataset replaces the body of `results_dataset` and
nothing else.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

TABLE_FILE = "results.parquet"


class NoResultsTable(FileNotFoundError, ValueError):
    """No results table at a location. A FileNotFoundError for callers that
    already catch it, a ValueError for those that follow the dataset's contract."""


def results_dataset(table: str) -> Any:
    """The runs of the results table at `table` (the directory collect wrote)
    as a pyarrow.dataset.Dataset. Raises NoResultsTable naming the location
    and the fix when collect has not written it."""
    import pyarrow.dataset as ds

    path = Path(table) / TABLE_FILE
    if not path.is_file():
        raise NoResultsTable(f"no results table at {path}; run `python -m analysis collect --out {table}` first")
    return ds.dataset(str(path), format="parquet")
