"""Collect every run's result.json from results buckets into the results dataset (analysis.dataset),
stack by stack, reading only the objects whose ETag changed; a corrupt, partial, unknown or duplicate
file is set aside with the reason. ``collect_results`` (a collect, then the teardown of finished stacks
if asked) is what `gpubench collect`, the demo and campaigns call; ``collect`` is the collect alone;
``read_table`` the runs table as a DataFrame. docs/architecture.md says which module does what."""

from analysis.collect.orchestrate import EXPORT_MAX_ROWS, collect
from analysis.collect.run import CollectOutcome, collect_results
from analysis.dataset.export import read_table, write_table

__all__ = ["EXPORT_MAX_ROWS", "CollectOutcome", "collect", "collect_results", "read_table", "write_table"]
