"""Collect every run's result.json from one or more results buckets into the
results dataset (analysis.dataset; a local table also gets results.parquet
and results.csv as an export while it is small, or on request).

What to call:

- ``collect_results(urls, table, ...) -> CollectOutcome``: a collect, then the
  teardown of finished stacks if asked; the outcome prints itself (``text()``,
  ``to_dict()``). `gpubench collect`, the demo and campaigns call this.
- ``collect(urls, table, ...) -> (Summary, rows)``: the collect alone.
- ``read_table(table)``: the runs table as a DataFrame (readers that aggregate
  query ``analysis.dataset.open_dataset`` instead).

A collect works stack by stack, reading only the objects whose ETag changed
since the last collect (a manifest records what was seen, never the rows),
and commits the difference with the table's rows of that stack. A corrupt,
partial, unknown or duplicate file is set aside with the reason and collection
goes on. docs/architecture.md says which module does what.
"""

from analysis.collect.orchestrate import EXPORT_MAX_ROWS, collect
from analysis.collect.run import CollectOutcome, collect_results
from analysis.dataset.export import read_table, write_table

__all__ = ["EXPORT_MAX_ROWS", "CollectOutcome", "collect", "collect_results", "read_table", "write_table"]
