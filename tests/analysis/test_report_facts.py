"""The page's summary of the runs that did not complete, as the report's query
computes it: the most recent listed (latest first, ties in table order, no
start last) and every one counted per stack, offering and status."""

from __future__ import annotations

import math

import pandas as pd
from queried import query_of


def _runs() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "run_id": ["a", "b", "c", "d", "e"],
            "stack": ["s1", "s1", None, "s2", "s1"],
            "offering_id": ["o1", "o1", "o2", "o3", "o1"],
            "status": ["failed", "interrupted", "failed", "failed", "failed"],
            "started_at": ["2026-01-02", None, "2026-01-03", "2026-01-02", "2026-01-01"],
            "billed_cost_usd": [1.0, 2.0, float("nan"), 4.0, 0.5],
        }
    )


def test_most_recent_first_ties_in_table_order_and_no_start_last():
    with query_of(_runs()) as q:
        assert list(q.not_done(5)["run_id"]) == ["c", "a", "d", "e", "b"]
        assert list(q.not_done(2)["run_id"]) == ["c", "a"]


def test_counted_per_stack_offering_and_status_missing_stack_last():
    with query_of(_runs()) as q:
        counts = q.not_done_counts()
    keys = [tuple(r) for r in counts[["offering_id", "status", "runs"]].itertuples(index=False)]
    assert keys == [("o1", "failed", 2), ("o1", "interrupted", 1), ("o3", "failed", 1), ("o2", "failed", 1)]
    assert list(counts["stack"][:3]) == ["s1", "s1", "s2"] and pd.isna(counts["stack"][3])
    billed = list(counts["billed_cost_usd"])
    assert billed[:3] == [1.5, 2.0, 4.0]  # a group's billed cost is the sum of its runs'
    assert math.isnan(billed[3])  # no run of the group was priced: missing, not zero
    latest = list(counts["latest_start"])
    assert latest[0] == "2026-01-02" and pd.isna(latest[1]) and latest[2:] == ["2026-01-02", "2026-01-03"]
