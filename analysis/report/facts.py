"""What the report page says about the runs themselves, beside the metrics
tables: how many, which did not complete, the throughput the reference
section (and the answer's comparison with the studies) uses, and each
configuration's recorded price origins and data kinds. Computed from a runs DataFrame here, or by a query over the
results dataset (analysis.report.query) without holding every row.

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
# Per group: (column, what) of the count table, after the keys.
NOT_DONE_FIGURES = ("runs", "billed_cost_usd", "latest_start")
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
    measured: Any  # DataFrame: analysis.report.reference.measured of the runs
    row_facts: Any  # DataFrame: analysis.report.reference.run_facts of the runs
    not_done_counts: Any = None  # DataFrame: the runs that did not complete, counted per NOT_DONE_KEYS

    @property
    def not_done_total(self) -> int:
        """Every full run that did not complete (the page lists only the most recent)."""
        return self.total - self.completed

    @classmethod
    def of(cls, runs: Any) -> RunFacts:
        """The facts of a runs DataFrame (the full runs, probes already set apart)."""
        from analysis.report import reference

        completed = int((runs["status"] == "completed").sum()) if len(runs) else 0
        not_done = runs[runs["status"] != "completed"] if len(runs) else runs
        return cls(
            len(runs),
            completed,
            most_recent(not_done),
            reference.measured(runs),
            reference.run_facts(runs),
            not_done_counts(not_done),
        )


def most_recent(not_done: Any, n: int = NOT_DONE_SAMPLE) -> Any:
    """The `n` most recent of `not_done` by start time (none last; ties in table order), most recent first."""
    if "started_at" not in not_done.columns:
        return not_done.head(n)
    ordered = not_done.assign(_pos=range(len(not_done))).sort_values(
        ["started_at", "_pos"], ascending=[False, True], na_position="last", kind="mergesort"
    )
    return ordered.head(n).drop(columns="_pos")


def not_done_counts(not_done: Any) -> Any:
    """Per NOT_DONE_KEYS group of `not_done`: how many runs, their billed USD (None when
    none was priced) and the latest start; groups in key order, missing keys last."""
    import pandas as pd

    keys = [k for k in NOT_DONE_KEYS if k in not_done.columns]
    has = not_done.columns
    nothing = pd.Series(None, index=not_done.index, dtype=object)
    frame = not_done.assign(
        _billed=pd.to_numeric(not_done["billed_cost_usd"], errors="coerce") if "billed_cost_usd" in has else nothing,
        _start=not_done["started_at"] if "started_at" in has else nothing,
    )
    grouped = frame.groupby(keys, dropna=False, sort=False)
    out = grouped.agg(runs=("_billed", "size"), billed_cost_usd=("_billed", lambda v: v.sum(min_count=1)))
    out["latest_start"] = grouped["_start"].max()
    out = out.reset_index()
    return in_key_order(out, keys)


def in_key_order(frame: Any, keys: list[str]) -> Any:
    """Rows sorted by `keys`, missing values last, ties kept in order."""
    if frame.empty:
        return frame.reset_index(drop=True)
    return frame.sort_values(keys, na_position="last", kind="mergesort").reset_index(drop=True)
