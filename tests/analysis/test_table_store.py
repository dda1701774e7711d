"""The runs table on disk (analysis.collect.store): a round trip, the Parquet
and CSV pair published in one step, and failures (an error, a killed
process) that leave the old pair as it was."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pandas as pd
import pytest
from synthetic_results import make_result, result_key

from analysis.collect import read_table, remove_stale_temporaries, table_is_whole, table_paths, write_table
from analysis.collect import store as store_mod
from analysis.table import COLUMNS, result_to_row


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


@pytest.mark.parametrize("before", ["nothing", "a table", "an older collect's plain files"])
def test_both_files_are_published_by_one_rename(tmp_path, monkeypatch, before):
    if before == "a table":
        write_table(_rows(2), tmp_path)
    elif before == "an older collect's plain files":
        df = pd.DataFrame(_rows(2), columns=list(COLUMNS))
        df.to_parquet(tmp_path / "results.parquet", index=False)
        df.to_csv(tmp_path / "results.csv", index=False)
    old_ids = _pair(tmp_path)[0] if before != "nothing" else None
    seen, real_replace = [], os.replace

    def watching(src, dst):
        was = _inodes(tmp_path)
        real_replace(src, dst)
        seen.append((was, _inodes(tmp_path)))

    monkeypatch.setattr(os, "replace", watching)
    write_table(_rows(3, first=10), tmp_path)
    changes = [(was, now) for was, now in seen if was != now]
    assert len(changes) == 1, changes  # what a reader sees changes once, for both files at the same time
    (was_parquet, was_csv), (now_parquet, now_csv) = changes[0]
    assert None not in (now_parquet, now_csv) and now_parquet != was_parquet and now_csv != was_csv
    new_ids = [r["run_id"] for r in _rows(3, first=10)]
    assert _pair(tmp_path) == (new_ids, new_ids)
    if old_ids is not None:
        assert old_ids != new_ids


def test_an_error_between_the_two_files_leaves_the_old_pair(tmp_path, monkeypatch):
    old = _rows(2)
    write_table(old, tmp_path)

    def disk_full(df, path):
        raise OSError(28, "No space left on device", str(path))

    monkeypatch.setitem(store_mod._WRITERS, "csv", disk_full)  # the Parquet file is written, then the CSV fails
    with pytest.raises(OSError, match="No space left"):
        write_table(_rows(3, first=10), tmp_path)
    ids = [r["run_id"] for r in old]
    assert _pair(tmp_path) == (ids, ids) and table_is_whole(tmp_path)
    assert remove_stale_temporaries(tmp_path) == []  # the failed write left nothing behind


def test_a_failed_publication_leaves_the_old_pair(tmp_path, monkeypatch):
    old = _rows(2)
    write_table(old, tmp_path)
    real_replace = os.replace

    def refuse_the_switch(src, dst):
        if Path(dst).name == store_mod.CURRENT:
            raise PermissionError(13, "Permission denied", str(dst))
        real_replace(src, dst)

    monkeypatch.setattr(os, "replace", refuse_the_switch)
    with pytest.raises(PermissionError):
        write_table(_rows(3, first=10), tmp_path)
    ids = [r["run_id"] for r in old]
    assert _pair(tmp_path) == (ids, ids) and table_is_whole(tmp_path)
    monkeypatch.setattr(os, "replace", real_replace)
    assert remove_stale_temporaries(tmp_path) == []


def test_a_collect_killed_between_the_two_files_leaves_the_old_pair_and_its_files_are_removed(tmp_path):
    old = _rows(2)
    write_table(old, tmp_path)
    child = textwrap.dedent(
        f"""
        import os, sys
        sys.path[:0] = [{str(Path(__file__).parent)!r}, {str(Path(__file__).parents[1])!r}]
        from analysis.collect import store, write_table
        from test_table_store import _rows

        def killed(df, path):
            os._exit(9)  # no clean-up runs: as if killed after the Parquet file

        store._WRITERS["csv"] = killed
        write_table(_rows(3, first=10), {str(tmp_path)!r})
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
    left = [p for p in tmp_path.iterdir() if p.name.startswith(".results.") and p.name != store_mod.CURRENT]
    unpublished = [p for p in left if p.name != os.readlink(tmp_path / store_mod.CURRENT)]
    assert len(unpublished) == 1 and (unpublished[0] / "results.parquet").is_file()  # the killed write's
    assert remove_stale_temporaries(tmp_path) == unpublished
    assert _pair(tmp_path) == (ids, ids)


def test_the_replaced_generation_is_kept_until_the_next_clean_up(tmp_path):
    write_table(_rows(1), tmp_path)
    first = os.readlink(tmp_path / store_mod.CURRENT)
    write_table(_rows(1, first=5), tmp_path)
    second = os.readlink(tmp_path / store_mod.CURRENT)
    assert first != second and (tmp_path / first).is_dir()  # a reader may still be opening it
    write_table(_rows(1, first=9), tmp_path)
    assert not (tmp_path / first).exists() and (tmp_path / second).is_dir()
    remove_stale_temporaries(tmp_path)
    assert not (tmp_path / second).exists() and (tmp_path / os.readlink(tmp_path / store_mod.CURRENT)).is_dir()


def test_another_running_collects_files_are_left_alone(tmp_path):
    write_table(_rows(1), tmp_path)
    running = os.getppid()  # a live process other than this one
    theirs = [tmp_path / f".results.{running}.123", tmp_path / f".results.csv.{running}.tmp"]
    theirs[0].mkdir()
    theirs[1].write_bytes(b"in progress")
    assert remove_stale_temporaries(tmp_path) == []
    assert all(p.exists() for p in theirs) and table_is_whole(tmp_path)


def test_a_pair_with_one_file_replaced_on_its_own_is_not_whole(tmp_path):
    write_table(_rows(2), tmp_path)
    csv = tmp_path / "results.csv"
    text = csv.read_text()
    csv.unlink()
    csv.write_text(text)  # the same content, but no longer the published pair's file
    assert not table_is_whole(tmp_path)
    write_table(_rows(2), tmp_path)
    assert table_is_whole(tmp_path) and csv.is_symlink()


def test_without_symlinks_both_files_are_still_written_whole(tmp_path, monkeypatch):

    def no_symlinks(*args, **kwargs):
        raise OSError(1, "Operation not permitted")

    monkeypatch.setattr(os, "symlink", no_symlinks)
    rows = _rows(3)
    write_table(rows, tmp_path)
    ids = [r["run_id"] for r in rows]
    assert _pair(tmp_path) == (ids, ids) and table_is_whole(tmp_path)
    assert not (tmp_path / "results.parquet").is_symlink()
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


def test_the_probe_column_tells_a_probe_from_a_full_run():
    full, null, probe = (make_result("aws/p3.2xlarge", repeat=i) for i in range(3))
    null["probe"] = None
    probe["probe"] = {"limit_seconds": 300, "stopped_by": "time-limit", "overhead_seconds": None}

    def row(result):
        return result_to_row(result, source="s", key=result_key(result), etag=None, schema_version_read=1)

    assert "probe" not in full
    assert [row(r)["probe"] for r in (full, null, probe)] == [False, False, True]


@pytest.mark.parametrize("follow_symlinks", [True, False])
def test_a_copied_output_directory_takes_the_next_table(tmp_path, follow_symlinks):
    first, second = _rows(2), _rows(3, first=10)
    write_table(first, tmp_path / "out")
    copy = tmp_path / "copy"
    shutil.copytree(tmp_path / "out", copy, symlinks=not follow_symlinks)
    ids = [r["run_id"] for r in first]
    assert _pair(copy) == (ids, ids) and table_is_whole(copy)
    write_table(second, copy)
    ids = [r["run_id"] for r in second]
    assert _pair(copy) == (ids, ids) and table_is_whole(copy)
    assert (copy / "results.csv").is_symlink() and (copy / store_mod.CURRENT).is_symlink()
    assert _pair(tmp_path / "out")[0] == [r["run_id"] for r in first]  # the original is untouched
