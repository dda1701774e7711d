"""A collect removes a row only when a source it listed no longer holds the object: a source that
cannot be listed, holds nothing, or was not given this time keeps every row it put in the table,
and a copy of the same run read now replaces its row (one row per run)."""

from __future__ import annotations

import io
import shutil
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import deltalake
import pytest
from synthetic_results import make_result, result_bytes, result_key

from analysis.cli import main
from payload import exitcodes
from payload.storage import open_store


def _put(bucket: Path, offering: str, n: int, rate: float) -> None:
    store = open_store(str(bucket))
    for i in range(n):
        r = make_result(offering, "resnet50", samples_per_second=rate + i, hourly_usd=1.0, repeat=i)
        store.put_bytes(result_key(r), result_bytes(r))


def _collect(*argv: str) -> int:
    with redirect_stdout(io.StringIO()), redirect_stderr(io.StringIO()):
        return main(["collect", *argv])


def _rows(table: Path) -> list[tuple[str, str]]:
    t = deltalake.DeltaTable(str(table)).to_pyarrow_table(columns=["source", "run_id"])
    return sorted(zip(t.column("source").to_pylist(), t.column("run_id").to_pylist()))


@pytest.fixture
def table(tmp_path: Path) -> Path:
    _put(tmp_path / "a", "aws/p3.2xlarge", 4, 100.0)
    assert _collect("--results", str(tmp_path / "a"), "--table", str(tmp_path / "table")) == exitcodes.OK
    return tmp_path / "table"


@pytest.mark.parametrize("source", ["", "missing", "empty"])
def test_a_source_that_fails_or_holds_nothing_leaves_every_row(table: Path, source: str) -> None:
    before = _rows(table)
    if source == "empty":
        (table.parent / "empty").mkdir()
    url = str(table.parent / source) if source else ""
    assert _collect("--results", url, "--table", str(table)) != exitcodes.OK
    assert _rows(table) == before and len(before) == 4


def test_another_bucket_adds_its_runs_and_keeps_the_first_buckets(table: Path) -> None:
    before = _rows(table)
    _put(table.parent / "b", "aws/g4dn.xlarge", 2, 50.0)
    assert _collect("--results", str(table.parent / "b"), "--table", str(table)) == exitcodes.OK
    after = _rows(table)
    assert set(before) <= set(after) and len(after) == 6


def test_a_copy_of_the_same_runs_elsewhere_replaces_their_rows(table: Path) -> None:
    runs = {run for _, run in _rows(table)}
    shutil.copytree(table.parent / "a", table.parent / "copy")
    assert _collect("--results", str(table.parent / "copy"), "--table", str(table)) == exitcodes.OK
    after = _rows(table)
    assert len(after) == 4 and {run for _, run in after} == runs
    assert len({source for source, _ in after}) == 1 and "copy" in after[0][0]


def test_a_run_removed_from_a_listed_bucket_loses_its_row(table: Path) -> None:
    run_dir = sorted((table.parent / "a" / "runs").rglob("result*.json"))[0].parent
    shutil.rmtree(run_dir)
    assert _collect("--results", str(table.parent / "a"), "--table", str(table)) == exitcodes.OK
    assert len(_rows(table)) == 3
