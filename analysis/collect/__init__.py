"""Collect every run's result.json from one or more results buckets into the
results dataset (analysis.dataset; a local table also gets results.parquet
and results.csv as an export while it is small, or on request).

A collect works stack by stack: it lists a stack's files (a settled stack
only by its journal or its run directories), reads only the objects whose ETag (S3), etag /
generation (GCS) or size+mtime (file) changed since the last collect, judges
them against the other copies of the same runs, and commits the difference
with the table's rows of that stack. A manifest (analysis.collect.manifest, SQLite)
beside a local table (in the cache directory for a bucket's table) records
what was seen, never the rows. Each object is judged on its own: a corrupt,
partial, unknown or duplicate file is set aside with the reason and
collection goes on.

One module per job; every name callers use is importable from here:

- orchestrate: `collect()`, the steps of one collect
- survey: each source looked at once (its stacks, the settled ones unchanged)
- stackstep: one stack across every source (list, read, judge, the difference)
- batch: several stacks' changes committed at once
- sources: downloading one stack's results (s3:// through analysis.collect.s3;
  gs:// through payload.storage in a thread pool; file:// in this thread)
- validation: which keys are results, why a file is set aside, bytes -> row
- spot: spot runs priced from their cloud's spot price history
- stacks: file://, gs:// and s3:// listed stack by stack (settled stacks by stamp, journal or run directory)
- settled: what a settled stack is, and its replay
- dedupe: one row per run
- summary: what a collect reports
"""

from analysis.collect.dedupe import dedupe, row_order
from analysis.collect.manifest import MANIFEST_NAME, Manifest, SettledStack
from analysis.collect.orchestrate import EXPORT_MAX_ROWS, collect
from analysis.collect.sources import DEFAULT_WORKERS, Progress
from analysis.collect.spot import (
    SpotPricer,
    attach_spot_history,
    parse_result,
    price_bulk,
    price_spot,
    spot_history_pricer,
)
from analysis.collect.summary import Summary
from analysis.collect.validation import (
    KNOWN_RUN_DIRS,
    KNOWN_RUN_FILES,
    PARTIAL_UPLOAD,
    UNKNOWN_RUN_FILE,
    _fast_validator,
    classify,
    misplaced_check,
    parse,
    parse_key_ok,
    run_file_problem,
    validate,
    wrong_layout,
)
from analysis.dataset.export import (
    TABLE_STEM,
    read_table,
    remove_stale_temporaries,
    table_is_whole,
    table_paths,
    write_table,
)

__all__ = [
    "DEFAULT_WORKERS",
    "EXPORT_MAX_ROWS",
    "KNOWN_RUN_DIRS",
    "KNOWN_RUN_FILES",
    "MANIFEST_NAME",
    "PARTIAL_UPLOAD",
    "TABLE_STEM",
    "UNKNOWN_RUN_FILE",
    "Manifest",
    "Progress",
    "SettledStack",
    "SpotPricer",
    "Summary",
    "_fast_validator",
    "attach_spot_history",
    "classify",
    "collect",
    "dedupe",
    "misplaced_check",
    "parse",
    "parse_key_ok",
    "parse_result",
    "price_bulk",
    "price_spot",
    "read_table",
    "remove_stale_temporaries",
    "row_order",
    "run_file_problem",
    "spot_history_pricer",
    "table_is_whole",
    "table_paths",
    "validate",
    "wrong_layout",
    "write_table",
]
