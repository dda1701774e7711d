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

A collect works stack by stack: it lists a stack's files (a settled stack
only by its journal or its run directories), reads only the objects whose ETag (S3), etag /
generation (GCS) or size+mtime (file) changed since the last collect, judges
them against the other copies of the same runs, and commits the difference
with the table's rows of that stack. A manifest (SQLite) beside a local table
(in the cache directory for a bucket's table) records what was seen, never
the rows. Each object is judged on its own: a corrupt, partial, unknown or
duplicate file is set aside with the reason and collection goes on.

One module per job:

- run: `collect_results()` and its outcome; the teardown of finished stacks
- orchestrate: `collect()`, the steps of one collect
- survey: each source looked at once (its stacks, the settled ones unchanged)
- stackstep: one stack across every source (list, read, judge, the difference)
- batch: several stacks' changes committed at once
- sources: downloading one stack's results (s3:// through s3; gs:// through
  payload.storage in a thread pool; file:// in this thread)
- s3: obstore's bulk listing and reads of an s3:// bucket
- prefetch: the next stack's new results downloaded during this one's judging
- stacks: file://, gs:// and s3:// listed stack by stack (settled stacks by stamp, journal or run directory)
- settled: what a settled stack is, and its replay
- manifest: what the last collect saw (SQLite)
- validation: which keys are results, why a file is set aside, bytes -> row
- upgrade: a result.json of an older schema version lifted to the current one
- trust: whether a result's names, times and numbers can be believed
- spot: spot runs priced from their cloud's spot price history
- dedupe: one row per run
- summary: what a collect reports
"""

from analysis.collect.orchestrate import EXPORT_MAX_ROWS, collect
from analysis.collect.run import CollectOutcome, collect_results
from analysis.dataset.export import read_table, write_table

__all__ = ["EXPORT_MAX_ROWS", "CollectOutcome", "collect", "collect_results", "read_table", "write_table"]
