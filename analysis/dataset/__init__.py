"""The results dataset: every collected run, one row each, as a Delta Lake
table partitioned by stack and month, in a local directory or a bucket prefix.

- ``open_dataset(table)``: the current snapshot as a pyarrow Dataset (readers
  query it with DuckDB or pyarrow; see docs/scale.md for Athena, BigQuery, Spark)
- ``publish_rows(table, rows, sources)``: what collect calls; writes only the
  difference, one atomic commit, under the table's lock
- ``export_table(table, out_dir)``: results.parquet and results.csv from it

Modules: location (where), schema (columns and types), store (the Delta
table), lock (one writer at a time), writer (the difference, and rows
converted to the table's types before a commit), export, pricing (which catalog priced a row), faults (a full disk or
a damaged log, named with the recovery).
"""

from analysis.dataset.export import export_table
from analysis.dataset.location import Location, resolve
from analysis.dataset.store import TableNotFound, open_dataset
from analysis.dataset.writer import Published, publish_rows

__all__ = [
    "Location",
    "Published",
    "TableNotFound",
    "export_table",
    "open_dataset",
    "publish_rows",
    "resolve",
]
