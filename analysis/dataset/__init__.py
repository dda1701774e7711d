"""The results dataset: every collected run, one row each, as a Delta Lake
table partitioned by stack and month, in a local directory or a bucket prefix.

- ``open_dataset(table)``: the current snapshot as a pyarrow Dataset (readers
  query it with analysis.dataset.sql (DataFusion) or pyarrow; see docs/scale.md for DuckDB,
  Athena, BigQuery, Spark)
- ``export_table(table, out_dir)``: results.parquet and results.csv from it
"""

from analysis.dataset.export import export_table
from analysis.dataset.location import Location, resolve
from analysis.dataset.store import TableNotFound, open_dataset

__all__ = [
    "Location",
    "TableNotFound",
    "export_table",
    "open_dataset",
    "resolve",
]
