"""Where the report and the plan read the results table: a local directory's results.parquet export when there
is one, else the results dataset there (a Delta table of a directory or bucket prefix), never held whole."""

from __future__ import annotations

from typing import Any

import pyarrow.dataset as ds

from analysis.dataset import TableNotFound, open_dataset, resolve

TABLE_FILE = "results.parquet"


class NoResultsTable(FileNotFoundError, ValueError):
    """No results table at a location. A FileNotFoundError for callers that
    already catch it, a ValueError for those that follow the dataset's contract."""


def results_dataset(table: str) -> Any:
    """The runs of the results table at `table` (a directory or bucket prefix
    collect wrote) as a pyarrow.dataset.Dataset. Raises NoResultsTable naming
    the location and the fix when collect has not written it there."""
    local = resolve(table).local
    export = local / TABLE_FILE if local is not None else None
    if export is not None and export.is_file():  # the export, in its rows' order
        return ds.dataset(str(export), format="parquet")
    try:
        return open_dataset(table)
    except TableNotFound:
        raise NoResultsTable(
            f"no results table at {table}: neither a results dataset nor {TABLE_FILE}; "
            f"run `gpubench collect --table {table}` first"
        ) from None
