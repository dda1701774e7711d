"""Reading the results table into the plain figures infra estimates from."""

from __future__ import annotations

import math

from servers import require_module

from analysis.price.estimate import ResultsTable, measured_runs, read_results


def test_completed_runs_billed_hours_become_seconds_per_stack_and_benchmark(tmp_path):
    pd = require_module("pandas")
    table = pd.DataFrame(
        {
            "stack": ["a", "a", "a", "b", "a"],
            "benchmark": ["mnist", "mnist", "mnist", "mnist", "resnet"],
            "status": ["completed", "failed", "completed", "completed", "completed"],
            "billed_hours": [0.5, 9.0, 0.25, 1.0, math.nan],
        }
    )
    measured = measured_runs(ResultsTable(table, tmp_path / "results.parquet"))
    assert sorted(measured.seconds[("a", "mnist")]) == [900.0, 1800.0]  # the failed run left out
    assert measured.seconds[("b", "mnist")] == [3600.0]
    assert measured.seconds.get(("a", "resnet"), []) == []  # no billed time, no run
    assert measured.where == str(tmp_path / "results.parquet") and measured.note is None


def test_older_tables_with_billed_seconds_and_unusable_tables(tmp_path):
    pd = require_module("pandas")
    old = pd.DataFrame({"stack": ["a"], "benchmark": ["mnist"], "billed_seconds": [120.0]})
    assert measured_runs(old).seconds == {("a", "mnist"): [120.0]}
    assert measured_runs(pd.DataFrame({"stack": ["a"], "benchmark": ["mnist"]})).seconds == {}
    missing = measured_runs(read_results(tmp_path / "none"))
    assert missing.seconds == {} and missing.where is None and "no results table at" in missing.note


def test_the_queried_table_gives_what_the_dataframe_gives(tmp_path):
    """measured_runs_of reads the Parquet table with a query, only the stacks asked
    for, and finds the billed seconds measured_runs finds in the whole DataFrame."""
    pd = require_module("pandas")
    require_module("duckdb")
    from analysis.price.estimate import measured_runs_of

    table = pd.DataFrame(
        {
            "stack": ["a", "a", "a", "b", "a", None],
            "benchmark": ["mnist", "mnist", "mnist", "mnist", "resnet", "mnist"],
            "status": ["completed", "failed", "completed", "completed", "completed", "completed"],
            "billed_hours": [0.5, 9.0, 0.25, 1.0, math.nan, 2.0],
        }
    )
    table.to_parquet(tmp_path / "results.parquet")
    whole = measured_runs(read_results(tmp_path))
    queried = measured_runs_of(tmp_path)
    assert {k: sorted(v) for k, v in queried.seconds.items()} == {k: sorted(v) for k, v in whole.seconds.items()}
    assert queried.where == whole.where == str(tmp_path / "results.parquet")
    only_b = measured_runs_of(tmp_path / "results.parquet", ["b"])
    assert only_b.seconds == {("b", "mnist"): [3600.0]}
    assert measured_runs(only_b) is only_b
    missing = measured_runs_of(tmp_path / "none")
    assert missing.seconds == {} and "no results table at" in missing.note
