"""The results dataset (analysis.dataset): what collect writes there, read
back by DataFusion and pyarrow; growth by what is new only; two collects at
once; a collect killed mid-write; a table in a bucket (moto S3)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest
from deltalake import DeltaTable
from synthetic_results import demo_like_results, make_result, result_bytes, result_key

from analysis.collect import collect, read_table
from analysis.dataset import TableNotFound, open_dataset, resolve
from analysis.dataset.sql import connect
from analysis.dataset.store import delta_table

ROOT = Path(__file__).resolve().parents[2]


def _write(src: Path, results: list[dict]) -> None:
    for r in results:
        path = src / result_key(r)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(result_bytes(r))


def _results(n: int, first: int = 0, benchmark: str = "resnet50") -> list[dict]:
    offerings = ["aws/p2.xlarge", "aws/p3.2xlarge", "gcp/n1-standard-4+1xk80"]
    return [
        make_result(offerings[i % 3], benchmark, repeat=i, hourly_usd=1.0 + i, train_seconds=600.0 + i)
        for i in range(first, first + n)
    ]


def delta_table_at(table: Path, version: int | None) -> dict[str, int]:
    """{data file: rows} of the table at `version` (None: the latest)."""
    dt = DeltaTable(str(table), version=version)
    import pyarrow as pa

    adds = pa.table(dt.get_add_actions(flatten=True)).to_pydict()
    return dict(zip(adds["path"], adds["num_records"], strict=True))


def _sql(table: str, sql: str) -> tuple:
    """The first row of `sql` over the Delta table at `table` (as `runs`), read by the DataFusion deltalake ships."""
    import pyarrow as pa
    from deltalake import QueryBuilder

    got = pa.table(QueryBuilder().register("runs", delta_table(resolve(table))).execute(sql).read_all())
    return tuple(c[0].as_py() for c in got.columns)


def test_datafusion_reads_what_collect_wrote_with_the_same_counts_and_sums(tmp_path):
    src, table = tmp_path / "results", tmp_path / "table"
    results = demo_like_results()
    _write(src, results)
    summary, rows = collect([str(src)], table)
    assert summary.valid == len(rows) == len(results)
    files = delta_table(resolve(str(table))).file_uris()
    assert all("/stack=" in f and "/month=" in f for f in files)  # partitioned by stack and month
    got = _sql(
        str(table),
        "SELECT count(*), count(DISTINCT run_id), sum(train_seconds), sum(samples_per_second), count(DISTINCT stack)"
        " FROM runs",
    )
    want = (
        len(results),
        len({r["run_id"] for r in results}),
        sum(r["metrics"]["train_seconds"] for r in results),
        sum(r["metrics"]["samples_per_second"] or 0 for r in results),
        len({r["stack"] for r in results}),
    )
    assert got[:2] == want[:2] and got[4] == want[4]
    assert got[2] == pytest.approx(want[2]) and got[3] == pytest.approx(want[3])
    # the reader every command uses: the same rows, and the priced columns of the export
    data = open_dataset(str(table))
    export = pd.read_parquet(table / "results.parquet")
    with connect() as con:  # as the report reads it
        con.register("data", data)
        priced = con.rows("SELECT sum(billed_cost_usd), count(*) FROM data")[0]
    assert priced[1] == len(export) and priced[0] == pytest.approx(export["billed_cost_usd"].sum())
    assert set(export.columns) <= set(data.schema.names)


def test_a_second_collect_writes_only_what_is_new(tmp_path):
    src, table = tmp_path / "results", tmp_path / "table"
    _write(src, _results(60))
    collect([str(src)], table)
    first = delta_table_at(table, None)
    version = DeltaTable(str(table)).version()
    _write(src, _results(10, first=60))
    summary, rows = collect([str(src)], table)
    assert (summary.new, summary.valid) == (10, 70)
    added = delta_table_at(table, None)
    new_files = {p: n for p, n in added.items() if p not in first}
    assert sum(new_files.values()) == 10  # the ten new rows, and nothing rewritten
    assert all(p in added for p in first)  # every earlier file still in the snapshot
    assert len(new_files) <= 3  # one file per partition touched (3 stacks, one month)
    assert DeltaTable(str(table)).version() == version + 1  # one commit
    summary, _ = collect([str(src)], table)  # nothing new: no commit at all
    assert not summary.table_written and DeltaTable(str(table)).version() == version + 1


def test_a_rewritten_result_replaces_its_row_and_a_removed_one_leaves(tmp_path):
    src, table = tmp_path / "results", tmp_path / "table"
    results = _results(6)
    _write(src, results)
    collect([str(src)], table)
    changed = dict(results[0], metrics=dict(results[0]["metrics"], train_seconds=4242.0))
    _write(src, [changed])
    (src / result_key(results[1])).unlink()
    (src / result_key(results[1])).parent.rmdir()
    summary, rows = collect([str(src)], table, full=True)  # a final result rewritten by hand: seen by --full
    data = open_dataset(str(table)).to_table(columns=["run_id", "train_seconds"]).to_pylist()
    assert sorted(r["run_id"] for r in data) == sorted(r["run_id"] for r in rows)
    assert len(data) == 5 and {r["train_seconds"] for r in data if r["run_id"] == changed["run_id"]} == {4242.0}


def test_a_local_table_without_exports_is_read_from_the_dataset(tmp_path):
    src, table = tmp_path / "results", tmp_path / "table"
    _write(src, _results(5))
    summary, rows = collect([str(src)], table, export=False)
    assert not (table / "results.parquet").exists() and "parquet" not in summary.table
    assert sorted(read_table(table)["run_id"]) == sorted(r["run_id"] for r in rows)


def test_open_dataset_without_a_table_names_the_fix(tmp_path):
    with pytest.raises(TableNotFound) as err:
        open_dataset(str(tmp_path / "nothing"))
    assert isinstance(err.value, ValueError) and "gpubench collect --table" in str(err.value)
    assert str(tmp_path / "nothing") in str(err.value)


def _collect_cmd(src: Path, table: Path) -> list[str]:
    return [sys.executable, "-m", "analysis", "collect", "--results", str(src), "--table", str(table), "--json"]


def _env() -> dict:
    return {**os.environ, "PYTHONPATH": str(ROOT)}


def test_two_collects_at_once_leave_one_whole_table(tmp_path):
    a, table = tmp_path / "a", tmp_path / "table"
    _write(a, _results(20))
    procs = [subprocess.Popen(_collect_cmd(a, table), env=_env(), stdout=subprocess.PIPE) for _ in range(3)]
    codes = [p.wait(timeout=300) for p in procs]
    assert codes == [0, 0, 0]
    ids = open_dataset(str(table)).to_table(columns=["run_id", "source", "key"]).to_pylist()
    assert len(ids) == 20 and len({(r["source"], r["key"]) for r in ids}) == 20  # no row twice
    assert not (table / "_gpubench" / "collect.lock").exists()  # the lock was let go


@pytest.mark.parametrize("where", ["local", "s3"])
def test_a_table_is_scanned_without_python_owned_buffers(tmp_path, request, where):
    """Buffers a Python file system hands Arrow may be released on an Arrow thread after the
    scan returned; one released while the interpreter exits aborts the process (the race the
    concurrent collects above lost now and then). A bucket's table is read by Arrow's S3 client."""
    from pyarrow.fs import PyFileSystem

    from analysis.dataset.stackwise import TableView
    from analysis.dataset.store import snapshot

    src = tmp_path / "results"
    table = str(tmp_path / "table") if where == "local" else f"s3://{request.getfixturevalue('s3_bucket')}/t"
    _write(src, _results(3))
    collect([str(src)], table)
    loc = resolve(table)
    one_stack = TableView(loc)._partition(_results(1)[0]["stack"])  # noqa: SLF001 - what a collect's step reads
    for data, rows in ((open_dataset(table), 3), (snapshot(delta_table(loc), loc), 3), (one_stack, 1)):
        assert not isinstance(data.filesystem, PyFileSystem)
        assert data.count_rows() == rows


def test_a_collect_killed_mid_write_leaves_the_previous_snapshot(tmp_path):
    src, table = tmp_path / "results", tmp_path / "table"
    _write(src, _results(30))
    collect([str(src)], table)
    before = open_dataset(str(table)).to_table().sort_by("run_id")
    _write(src, _results(120, first=30))
    # a collect that stops for good in the middle of its commit's data files
    script = f"""
import sys, time
from analysis.dataset import store
real = store.append
def slow(loc, batches):
    def trickle():
        for i, b in enumerate(batches):
            if i == 1:
                print("writing", flush=True)
                time.sleep(600)
            yield b
    return real(loc, trickle())
store.append = slow
from analysis.dataset import stackwise
stackwise.BATCH_ROWS = 50
from analysis.collect import collect, read_table
collect([{str(src)!r}], {str(table)!r})
"""
    proc = subprocess.Popen([sys.executable, "-c", script], env=_env(), stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "writing"
    time.sleep(0.5)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    after = open_dataset(str(table)).to_table().sort_by("run_id")
    assert after.equals(before)  # the previous snapshot, whole
    summary, rows = collect([str(src)], table)  # the lock of the dead collect is broken; all is written
    assert len(rows) == 150 and open_dataset(str(table)).count_rows() == 150


def test_collect_into_a_bucket_table(s3_bucket, tmp_path):
    src = tmp_path / "results"
    _write(src, _results(12))
    table = f"s3://{s3_bucket}/table/"
    summary, rows = collect([str(src)], table)
    assert summary.table_written and "parquet" not in summary.table and summary.table["dataset"] == table
    assert _sql(table, "SELECT count(*), sum(train_seconds) FROM runs") == (12, sum(600.0 + i for i in range(12)))
    runs = read_table(table)  # the readers' compatibility path: the export's columns, in its order
    assert len(runs) == 12 and list(runs["run_id"]) == sorted(runs["run_id"]) and "month" not in runs
    summary, _ = collect([str(src)], table)  # from this machine's manifest: nothing new
    assert summary.new == 0 and not summary.table_written
    delta_table(resolve(table)).delete(f"run_id = '{rows[11]['run_id']}'")  # a row removed elsewhere ...
    summary, _ = collect([str(src)], table)  # ... is noticed (the table moved on) and put back
    assert summary.table_written and open_dataset(table).count_rows() == 12


def test_two_writers_at_once_into_a_bucket_table(s3_bucket, tmp_path):
    import threading

    src = tmp_path / "results"
    _write(src, _results(20))
    table = f"s3://{s3_bucket}/shared"
    errors = []

    def write():
        try:
            collect([str(src)], table)
        except Exception as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=write) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    keys = open_dataset(table).to_table(columns=["source", "key"]).to_pylist()
    assert len(keys) == 20 and len({(k["source"], k["key"]) for k in keys}) == 20
