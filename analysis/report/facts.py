"""What the report page says about the runs themselves, beside the metrics
tables: how many, which did not complete, the throughput the reference
section (and the answer's comparison with the studies) uses, and each
configuration's recorded price origins and data kinds. Computed by the
query over the results dataset (analysis.report.query) without holding every row.

The runs that did not complete are summarised, not listed: a count per
stack, offering and status, and the most recent few in full. A table of a
million runs holds tens of thousands of them; a page listing each one would
grow with the table and be read by nobody. NOT_COMPLETED_SQL lists them all."""

from __future__ import annotations

from typing import Any, NamedTuple

# The columns of an incomplete run the page shows (its row, and its price note).
NOT_DONE_READ = ("run_id", "started_at", "offering_id", "status", "billed_cost_usd", "error")
PRICE_NOTE_READ = ("price_source", "price_as_of", "billing", "price_note")
# How many of the runs that did not complete the page lists in full: the most recent.
NOT_DONE_SAMPLE = 50
# The runs that did not complete are counted per these keys (missing keys: a group of their own, last).
NOT_DONE_KEYS = ("stack", "offering_id", "status")
# Run columns a summary row shows but does not carry, joined per FACT_KEYS (query.RunsQuery.row_facts).
RUN_FACTS = ("recorded_price_origin", "data")
FACT_KEYS = ["benchmark", "workload", "offering_id", "market"]
# Every run that did not complete, most recent first: what the page says to run to see them all.
NOT_COMPLETED_SQL = (
    "SELECT run_id, stack, offering_id, status, started_at, billed_cost_usd, error FROM runs "
    "WHERE status IS DISTINCT FROM 'completed' ORDER BY started_at DESC"
)


class RunFacts(NamedTuple):
    """Full runs only (probe runs are counted apart)."""

    total: int
    completed: int
    not_done: Any  # DataFrame: the NOT_DONE_SAMPLE most recent runs that did not complete, most recent first
    measured: Any  # DataFrame: query.RunsQuery.measured, median samples/s per setup of the studies' benchmarks
    row_facts: Any  # DataFrame: query.RunsQuery.row_facts, price origins and data kinds per FACT_KEYS
    not_done_counts: Any = None  # DataFrame: the runs that did not complete, counted per NOT_DONE_KEYS

    @property
    def not_done_total(self) -> int:
        """Every full run that did not complete (the page lists only the most recent)."""
        return self.total - self.completed
