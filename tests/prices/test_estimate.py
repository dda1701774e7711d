"""Reading the results table into the plain figures infra estimates from."""

from __future__ import annotations

import math

import pytest
from servers import require_module

from analysis.planning import measured_runs_of


def test_completed_runs_billed_hours_become_seconds_per_stack_and_benchmark(tmp_path):
    """Only the stacks asked for are read; failed runs and runs without billed time are left out."""
    pd = require_module("pandas")
    require_module("deltalake")
    table = pd.DataFrame(
        {
            "stack": ["a", "a", "a", "b", "a", None],
            "benchmark": ["mnist", "mnist", "mnist", "mnist", "resnet", "mnist"],
            "status": ["completed", "failed", "completed", "completed", "completed", "completed"],
            "billed_hours": [0.5, 9.0, 0.25, 1.0, math.nan, 2.0],
        }
    )
    table.to_parquet(tmp_path / "results.parquet")
    measured = measured_runs_of(tmp_path)
    assert sorted(measured.seconds[("a", "mnist")]) == [900.0, 1800.0]  # the failed run left out
    assert measured.seconds[("b", "mnist")] == [3600.0]
    assert measured.seconds.get(("a", "resnet"), []) == []  # no billed time, no run
    assert measured.where == str(tmp_path / "results.parquet") and measured.note is None
    only_b = measured_runs_of(tmp_path / "results.parquet", ["b"])
    assert only_b.seconds == {("b", "mnist"): [3600.0]}


def test_a_missing_table_says_where_it_looked(tmp_path):
    require_module("deltalake")
    missing = measured_runs_of(tmp_path / "none")
    assert missing.seconds == {} and missing.where is None and "no results table at" in missing.note


def test_without_the_analysis_extra_the_note_says_so(tmp_path, monkeypatch):
    monkeypatch.setitem(__import__("sys").modules, "analysis.report.query", None)  # as if deltalake were missing
    missing = measured_runs_of(tmp_path)
    assert missing.seconds == {} and "install the analysis extra" in missing.note
    with pytest.raises(ImportError):
        import analysis.report.query  # noqa: F401
