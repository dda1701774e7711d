"""Collect stack by stack: its memory does not grow with the number of
results, a collect with a few new runs reads and judges only those, a
rewritten or re-priced result replaces its row, and a collect interrupted
between two commits loses nothing (the next one finishes the job)."""

from __future__ import annotations

import gc
import sys
import tracemalloc

import pandas as pd
import pytest
from synthetic_results import make_result, result_bytes

from analysis.collect import collect, orchestrate, trust
from analysis.dataset import open_dataset
from payload import layout

OFFERINGS = ["aws/p2.xlarge", "aws/p3.2xlarge", "aws/p3.8xlarge", "gcp/n1-standard-4+1xk80"]


def _templates() -> list[tuple[str, bytes]]:
    """(stack, result bytes with a run-id hole) per offering: many results for little CPU."""
    out = []
    for i, o in enumerate(OFFERINGS):
        r = make_result(o, "resnet50", hourly_usd=1.0 + i, train_seconds=600.0)
        body = result_bytes(r).replace(r["run_id"].encode(), b"@@RUN@@")
        out.append((r["stack"], body))
    return out


def _put(src, stacks: int, runs: int, first: int = 0, tag: str = "") -> list[str]:
    """`runs` results in each of `stacks` stacks (named <offering's stack>-s<n>); their keys."""
    tpl, keys = _templates(), []
    for s in range(stacks):
        base, body = tpl[s % len(tpl)]
        stack = f"{base}-s{s}"
        data = body.replace(f'"stack": "{base}"'.encode(), f'"stack": "{stack}"'.encode())
        for i in range(first, first + runs):
            run_id = f"20250101T000000Z-i-{tag}{s:03d}{i:05d}-resnet50"
            key = layout.result_key(stack, run_id)
            path = src / key
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data.replace(b"@@RUN@@", run_id.encode()))
            keys.append(key)
    return keys


def test_a_cold_collects_memory_does_not_grow_with_the_number_of_results(tmp_path, monkeypatch):
    """Python's own memory (tracemalloc) after each stack: flat as stacks of
    results go by. Holding each result's row (or manifest entry) until the end,
    as a collect of every result at once does, adds several kB per result."""
    from analysis.collect import orchestrate

    monkeypatch.setattr(orchestrate, "COMMIT_ROWS", 1)  # each stack committed after its step: no batch in the measure
    warm_up, src = tmp_path / "warm-up", tmp_path / "results"
    _put(warm_up, stacks=2, runs=5)
    collect([str(warm_up)], tmp_path / "t0", export=False)  # imports and caches, outside the measure
    stacks, runs = 12, 30  # growth measured over 8 stacks x 30 results: a leak of 1 kB a result is 240 kB
    _put(src, stacks=stacks, runs=runs)
    held, real = [], orchestrate.step

    def step(ctx, prefix):
        changes = real(ctx, prefix)
        gc.collect()
        held.append(tracemalloc.get_traced_memory()[0])
        return changes

    monkeypatch.setattr(orchestrate, "step", step)
    gc.collect()
    tracemalloc.start()
    try:
        collect([str(src)], tmp_path / "table", export=False)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert open_dataset(str(tmp_path / "table")).count_rows() == stacks * runs and len(held) == stacks
    per_result = (held[-1] - held[3]) / ((stacks - 4) * runs)
    assert per_result < 1000, f"{per_result:.0f} bytes held per result read"
    assert peak < held[3] + 30 * 1024 * 1024  # one stack's reading at a time, whatever the number of stacks


def test_a_collect_interns_no_string_per_result(tmp_path, monkeypatch):
    """A string per result interned (Python 3.11's pathlib interns every part of a path it parses) would grow
    the interpreter's one table of interned strings: its reallocation, due from whatever ran before in the
    process, then lands in a collect and reads as memory held per result."""
    src = tmp_path / "results"
    _put(src, stacks=2, runs=20)
    interned, real = [], sys.intern
    monkeypatch.setattr(sys, "intern", lambda s: interned.append(s) or real(s))
    collect([str(src)], tmp_path / "table", export=False)
    assert not [s for s in interned if s.endswith("-resnet50")], "a run directory's name was interned"


def test_a_second_collect_reads_and_judges_only_the_new_runs(tmp_path, monkeypatch):
    from analysis.collect import sources

    src, table = tmp_path / "results", tmp_path / "table"
    _put(src, stacks=8, runs=25)
    collect([str(src)], table)
    added = _put(src, stacks=8, runs=1, first=100, tag="n")
    new = added[::3]  # three new runs, in three stacks
    for key in set(added) - set(new):
        (src / key).unlink()
        (src / key).parent.rmdir()
    read, judged = [], []
    real_read, real_problem = sources.read_capped, trust.row_problem
    monkeypatch.setattr(sources, "read_capped", lambda store, key, cap: read.append(key) or real_read(store, key, cap))
    monkeypatch.setattr(trust, "row_problem", lambda row, now=None: judged.append(row["key"]) or real_problem(row, now))
    summary, rows = collect([str(src)], table)
    assert sorted(read) == sorted(new) and sorted(judged) == sorted(new)
    assert (summary.new, summary.valid, len(rows)) == (3, 8 * 25 + 3, 8 * 25 + 3)
    assert summary.settled_stacks == 5  # the five stacks without a new run were not even listed file by file


def test_a_newer_version_of_a_result_replaces_its_row(tmp_path):
    src, table = tmp_path / "results", tmp_path / "table"
    keys = _put(src, stacks=2, runs=3)
    first = src / keys[0]
    completed = first.read_bytes()
    first.write_bytes(completed.replace(b'"status": "completed"', b'"status": "interrupted"'))
    collect([str(src)], table)  # an interrupted run: it will resume
    resumed = first.with_name(layout.versioned("result.json", 1))  # the resumed attempt's result, beside the first
    resumed.write_bytes(completed.replace(b'"train_seconds": 600.0', b'"train_seconds": 777.0'))
    summary, rows = collect([str(src)], table)
    data = open_dataset(str(table)).to_table(columns=["key", "train_seconds"]).to_pylist()
    assert len(data) == 6 and summary.new == 1
    mine = [r for r in data if r["key"].startswith(keys[0].rsplit("/", 1)[0])]
    assert mine == [{"key": resumed.relative_to(src).as_posix(), "train_seconds": 777.0}]
    assert next(r for r in rows if r["key"] == mine[0]["key"])["status"] == "completed"


def test_rows_priced_under_another_catalog_are_priced_again_and_replaced(tmp_path, monkeypatch):
    """A collect with nothing new does not look at the catalog (as before); the
    next one that reads anything prices every row priced under another one again."""
    from analysis.collect import orchestrate

    src, table = tmp_path / "results", tmp_path / "table"
    _put(src, stacks=3, runs=4)
    collect([str(src)], table)
    monkeypatch.setattr(orchestrate, "pricing_identity", lambda: "another-catalog")
    summary, _ = collect([str(src)], table)
    assert not summary.table_written and {value for (value,) in _scan(table, "priced_with")} != {"another-catalog"}
    _put(src, stacks=1, runs=1, first=50, tag="n")  # one new run, in one stack
    summary, _ = collect([str(src)], table)
    data = open_dataset(str(table)).to_table(columns=["key"]).to_pylist()
    priced = {value for (value,) in _scan(table, "priced_with")}
    assert summary.table_written and summary.new == 1 and len(data) == 13 and priced == {"another-catalog"}


def _scan(table, column: str) -> list[tuple]:
    from deltalake import DeltaTable

    return [(v,) for v in DeltaTable(str(table)).to_pyarrow_table(columns=[column])[column].to_pylist()]


def test_a_collect_interrupted_between_commits_loses_nothing(tmp_path, monkeypatch):
    monkeypatch.setattr(orchestrate, "COMMIT_ROWS", 10)
    src, table = tmp_path / "results", tmp_path / "table"
    _put(src, stacks=6, runs=10)
    real, calls = orchestrate.commit, []

    def dies_on_the_third(*args, **kw):
        calls.append(1)
        if len(calls) == 3:
            raise KeyboardInterrupt
        return real(*args, **kw)

    monkeypatch.setattr(orchestrate, "commit", dies_on_the_third)
    with pytest.raises(KeyboardInterrupt):
        collect([str(src)], table)
    committed = open_dataset(str(table)).count_rows()
    assert committed == 20  # two stacks' commits stand
    monkeypatch.setattr(orchestrate, "commit", real)
    summary, rows = collect([str(src)], table)  # the next collect finishes the job
    keys = [r["key"] for r in open_dataset(str(table)).to_table(columns=["key"]).to_pylist()]
    assert len(keys) == len(set(keys)) == 60 and len(rows) == 60
    assert summary.new == 40  # what the first one had committed is not read again


def test_a_large_tables_export_is_written_on_request_and_never_left_stale(tmp_path, monkeypatch):
    from analysis.collect import orchestrate, read_table

    monkeypatch.setattr(orchestrate, "EXPORT_MAX_ROWS", 5)
    src, table = tmp_path / "results", tmp_path / "table"
    _put(src, stacks=1, runs=4)
    summary, _ = collect([str(src)], table)  # small: exported
    assert (table / "results.parquet").exists() and "parquet" in summary.table
    _put(src, stacks=1, runs=4, first=10)
    summary, _ = collect([str(src)], table)  # now too large to rewrite: the stale pair goes
    assert not (table / "results.parquet").exists() and not (table / "results.csv").exists()
    assert "parquet" not in summary.table and len(read_table(table)) == 8  # readers read the dataset
    from analysis.cli import main

    argv = ["collect", "--results", str(src), "--table", str(table), "--export", "--json"]
    assert main(argv) == 0  # on request, whatever the size
    assert len(pd.read_parquet(table / "results.parquet")) == 8 and (table / "results.csv").exists()
