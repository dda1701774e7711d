"""The results dataset: every collected run, one row each, as a Delta Lake table partitioned by stack and
month, in a directory or a bucket prefix. ``open_dataset(table)``: its snapshot as a pyarrow Dataset (query
it with analysis.dataset.sql; docs/scale.md for other engines); ``export_table``: results.parquet and .csv."""

from analysis.dataset.export import export_table
from analysis.dataset.location import Location, resolve
from analysis.dataset.store import TableNotFound, open_dataset

__all__ = ["Location", "TableNotFound", "export_table", "open_dataset", "resolve"]
