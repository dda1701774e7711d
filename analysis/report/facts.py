"""What the report page says about the runs themselves, beside the metrics
tables: how many, which did not complete, the throughput the reference
section (and the answer's comparison with the studies) uses, and each
configuration's recorded price origins and data kinds. Computed from a runs DataFrame here, or by a query over the
results dataset (analysis.report.query) without holding every row."""

from __future__ import annotations

from typing import Any, NamedTuple

# The columns of an incomplete run the page shows (its row, and its price note).
NOT_DONE_READ = ("run_id", "offering_id", "status", "billed_cost_usd", "error")
PRICE_NOTE_READ = ("price_source", "price_as_of", "billing", "price_note")


class RunFacts(NamedTuple):
    """Full runs only (probe runs are counted apart)."""

    total: int
    completed: int
    not_done: Any  # DataFrame: the runs that did not complete, in table order
    measured: Any  # DataFrame: analysis.report.reference.measured of the runs
    row_facts: Any  # DataFrame: analysis.report.reference.run_facts of the runs

    @classmethod
    def of(cls, runs: Any) -> RunFacts:
        """The facts of a runs DataFrame (the full runs, probes already set apart)."""
        from analysis.report import reference

        completed = int((runs["status"] == "completed").sum()) if len(runs) else 0
        not_done = runs[runs["status"] != "completed"] if len(runs) else runs
        return cls(len(runs), completed, not_done, reference.measured(runs), reference.run_facts(runs))
