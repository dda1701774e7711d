"""The runs table on disk (analysis.dataset.export): a round trip, each
file published whole by one rename, and failures (an error, a killed
process) that leave the old pair as it was."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pandas as pd
import pytest
from synthetic_results import make_result, result_key

from analysis.collect import read_table, write_table
from analysis.dataset import export as export_mod
from analysis.dataset.export import remove_stale_temporaries, table_is_whole, table_paths
from analysis.dataset.row import COLUMNS, result_to_row


def _rows(n: int, first: int = 0, probe_every: int = 0) -> list[dict]:
    rows = []
    for i in range(first, first + n):
        result = make_result("aws/p3.2xlarge", repeat=i, hourly_usd=1.0 + i, train_seconds=600 + i)
        if probe_every and i % probe_every == 0:
            result["probe"] = {"limit_seconds": 300, "stopped_by": "steady", "overhead_seconds": 40.0 + i}
        rows.append(
            result_to_row(result, source="file:///r", key=result_key(result), etag=f"e{i}", schema_version_read=1)
        )
    return rows


def _pair(out: Path) -> tuple[list[str], list[str]]:
    """The run ids the Parquet file and the CSV file hold."""
    paths = table_paths(out)
    return list(pd.read_parquet(paths["parquet"])["run_id"]), list(pd.read_csv(paths["csv"])["run_id"])


def _inodes(out: Path) -> tuple[int | None, int | None]:
    """Which files the two names show now (None: missing)."""
    found = []
    for path in table_paths(out).values():
        try:
            found.append(os.stat(path).st_ino)
        except FileNotFoundError:
            found.append(None)
    return found[0], found[1]


def test_a_table_reads_back_as_written_in_both_files(tmp_path):
    rows = _rows(4, probe_every=2)
    paths = write_table(rows, tmp_path)
    assert paths == table_paths(tmp_path)
    df = read_table(tmp_path)
    assert list(df.columns[: len(COLUMNS)]) == list(COLUMNS)
    assert list(df["run_id"]) == [r["run_id"] for r in rows]
    assert list(df["samples_per_second"]) == [r["samples_per_second"] for r in rows]
    assert list(df["probe"]) == [r["probe"] for r in rows] and df["probe"].dtype == bool
    assert sorted(set(df["probe"])) == [False, True]  # both kinds of run are there to keep apart
    csv = pd.read_csv(paths["csv"])
    assert list(csv["run_id"]) == list(df["run_id"]) and list(csv["probe"]) == list(df["probe"])
    assert table_is_whole(tmp_path)


def test_read_table_without_a_table_says_how_to_make_one(tmp_path):
    with pytest.raises(FileNotFoundError, match="collect --table"):
        read_table(tmp_path)


@pytest.mark.parametrize("before", ["nothing", "a table"])
def test_each_file_is_published_whole_by_one_rename(tmp_path, monkeypatch, before):
    if before == "a table":
        write_table(_rows(2), tmp_path)
    seen, real_replace = [], os.replace

    def watching(src, dst):
        was = _inodes(tmp_path)
        real_replace(src, dst)
        seen.append((Path(dst).name, was, _inodes(tmp_path)))

    monkeypatch.setattr(os, "replace", watching)
    write_table(_rows(3, first=10), tmp_path)
    # the CSV first, then the Parquet file (whose footer names the version): each name changes once
    assert [name for name, _, _ in seen] == ["results.csv", "results.parquet"]
    (_, was, mid), (_, _, now) = seen
    assert mid[0] == was[0] and mid[1] not in (None, was[1]) and now[1] == mid[1] and now[0] not in (None, was[0])
    new_ids = [r["run_id"] for r in _rows(3, first=10)]
    assert _pair(tmp_path) == (new_ids, new_ids)
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []  # no temporary left


def test_an_error_writing_the_second_file_leaves_the_old_pair(tmp_path, monkeypatch):
    old = _rows(2)
    write_table(old, tmp_path)

    def disk_full(df, path):
        raise OSError(28, "No space left on device", str(path))

    monkeypatch.setattr(export_mod, "frame_to_csv", disk_full)  # the Parquet file is written, then the CSV fails
    with pytest.raises(OSError, match="No space left"):
        write_table(_rows(3, first=10), tmp_path)
    ids = [r["run_id"] for r in old]
    assert _pair(tmp_path) == (ids, ids) and table_is_whole(tmp_path)
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []  # the failed write left nothing


def test_a_failed_rename_leaves_the_old_pair(tmp_path, monkeypatch):
    old = _rows(2)
    write_table(old, tmp_path)

    def refuse(src, dst):
        raise PermissionError(13, "Permission denied", str(dst))

    monkeypatch.setattr(os, "replace", refuse)
    with pytest.raises(PermissionError):
        write_table(_rows(3, first=10), tmp_path)
    ids = [r["run_id"] for r in old]
    assert _pair(tmp_path) == (ids, ids) and table_is_whole(tmp_path)
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


def test_a_collect_killed_between_the_two_files_leaves_the_old_pair_and_its_files_are_removed(tmp_path):
    old = _rows(2)
    write_table(old, tmp_path)
    child = textwrap.dedent(
        f"""
        import os, sys
        sys.path[:0] = [{str(Path(__file__).parent)!r}, {str(Path(__file__).parents[1])!r}]
        from analysis.dataset import export
        from test_table_store import _rows

        def killed(df, path):
            os._exit(9)  # no clean-up runs: as if killed after the Parquet file

        export.frame_to_csv = killed
        export.write_table(_rows(3, first=10), {str(tmp_path)!r})
        """
    )
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(Path(__file__).parents[2]), os.environ.get("PYTHONPATH", "")]),
    }
    done = subprocess.run([sys.executable, "-c", child], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 9, done.stderr
    ids = [r["run_id"] for r in old]
    assert _pair(tmp_path) == (ids, ids) and table_is_whole(tmp_path)
    left = [p for p in tmp_path.iterdir() if p.name.startswith(".results.")]
    assert [p.name.split(".")[2] for p in left] == ["parquet"]  # the killed write's
    assert remove_stale_temporaries(tmp_path) == left
    assert _pair(tmp_path) == (ids, ids)


def test_another_running_collects_files_are_left_alone(tmp_path):
    write_table(_rows(1), tmp_path)
    theirs = tmp_path / f".results.csv.{os.getppid()}.tmp"  # a live process other than this one
    theirs.write_bytes(b"in progress")
    assert remove_stale_temporaries(tmp_path) == []
    assert theirs.exists() and table_is_whole(tmp_path)


def test_the_probe_column_tells_a_probe_from_a_full_run():
    full, null, probe = (make_result("aws/p3.2xlarge", repeat=i) for i in range(3))
    null["probe"] = None
    probe["probe"] = {"limit_seconds": 300, "stopped_by": "time-limit", "overhead_seconds": None}

    def row(result):
        return result_to_row(result, source="s", key=result_key(result), etag=None, schema_version_read=1)

    assert "probe" not in full
    assert [row(r)["probe"] for r in (full, null, probe)] == [False, False, True]
