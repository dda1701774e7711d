"""Faults of the machine or of the table are named with the way to recover, and what they leave
derived (the export, the manifest) is repaired by the next collect: a full disk (simulated where
it strikes: SQLite's own page limit, the table's writer, the export's writer), a damaged table log,
and the collect lock a killed collect leaves."""

from __future__ import annotations

import errno
import json
import os
import socket
import sqlite3
import threading
import time

import pyarrow.parquet as pq
import pytest
from synthetic_results import make_result, result_key

from analysis.cli import main
from analysis.collect import collect, lock, read_table
from analysis.collect.manifest import Manifest
from analysis.dataset.location import DiskFull, TableDamaged, resolve


def _write_results(root, first: int, n: int) -> None:
    for i in range(first, first + n):
        r = make_result("aws/p3.2xlarge", "resnet50", repeat=i, hourly_usd=3.06, train_seconds=600)
        path = root / result_key(r)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(r))


def _export_rows(table) -> int:
    return pq.read_metadata(table / "results.parquet").num_rows


def _full_manifest(monkeypatch) -> None:
    """The manifest's database may not grow: SQLite answers SQLITE_FULL, as on a full disk."""
    connect = Manifest._connect

    def capped(self):
        db = connect(self)
        pages = db.execute("PRAGMA page_count").fetchone()[0]
        db.execute(f"PRAGMA max_page_count = {pages}")
        return db

    monkeypatch.setattr(Manifest, "_connect", capped)


def test_a_full_disk_after_the_commit_is_named_and_the_next_collect_repairs_the_export(tmp_path, monkeypatch, capsys):
    root, table = tmp_path / "results", tmp_path / "table"
    _write_results(root, 0, 1)
    collect([str(root)], table)
    assert _export_rows(table) == 1
    _write_results(root, 1, 300)  # the manifest must grow by pages to record them
    with monkeypatch.context() as m:
        _full_manifest(m)
        argv = ["collect", "--results", str(root), "--table", str(table)]
        assert main(argv) == 1
        err = capsys.readouterr().err
        assert "no space left on the disk holding" in err and "run the same collect again" in err
        assert "This is a bug" not in err and "ManifestDamaged" not in err
    assert len(read_table(table)) == 301  # the rows committed before the manifest filled are read, not a stale export
    summary, rows = collect([str(root)], table)
    assert len(rows) == 301 and summary.table_written
    assert _export_rows(table) == 301
    summary, rows = collect([str(root)], table, export=True)
    assert _export_rows(table) == 301


def test_an_export_that_lags_the_table_is_rebuilt_by_any_collect(tmp_path):
    """However it came to lag (a failed collect of an older release, a copy): --full and --export too."""
    root, table = tmp_path / "results", tmp_path / "table"
    _write_results(root, 0, 1)
    collect([str(root)], table)
    stale = {n: (table / n).read_bytes() for n in ("results.parquet", "results.csv")}
    _write_results(root, 1, 2)
    collect([str(root)], table)
    for name, data in stale.items():  # put the one-row pair back, as a failed collect left it
        (table / name).unlink()
        (table / name).write_bytes(data)
    for kw in ({}, {"full": True}, {"export": True}):
        summary, rows = collect([str(root)], table, **kw)
        assert summary.table_written and _export_rows(table) == len(rows) == 3, kw
        for name in stale:
            (table / name).unlink()
            (table / name).write_bytes(stale[name])


def test_a_full_disk_in_the_tables_writer_is_named_and_nothing_is_half_written(tmp_path, monkeypatch, capsys):
    from analysis.dataset import stackwise

    root, table = tmp_path / "results", tmp_path / "table"
    _write_results(root, 0, 1)
    collect([str(root)], table)
    _write_results(root, 1, 2)

    def no_space(*a, **kw):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(stackwise, "append", no_space)
    assert main(["collect", "--results", str(root), "--table", str(table)]) == 1
    assert "no space left on the disk holding" in capsys.readouterr().err
    monkeypatch.undo()
    summary, rows = collect([str(root)], table)
    assert len(rows) == 3 and _export_rows(table) == 3


def test_a_full_disk_while_exporting_leaves_no_stale_export_to_read(tmp_path, monkeypatch):
    from analysis.dataset import export

    root, table = tmp_path / "results", tmp_path / "table"
    _write_results(root, 0, 1)
    collect([str(root)], table)
    _write_results(root, 1, 2)

    def no_space(*a, **kw):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(export, "_publish", no_space)
    with pytest.raises(DiskFull, match="free some space"):
        collect([str(root)], table)
    assert len(read_table(table)) == 3  # the one-row export is gone: readers read the table
    monkeypatch.undo()
    collect([str(root)], table)
    assert _export_rows(table) == 3


@pytest.mark.parametrize("damage", ["truncated", "garbage", "gap", "first-missing"])
def test_a_damaged_table_log_is_named_with_the_recovery(tmp_path, capsys, damage):
    root, table = tmp_path / "results", tmp_path / "table"
    for i in range(3):
        _write_results(root, i, 1)
        collect([str(root)], table)
    log = sorted((table / "_delta_log").glob("*.json"))
    if damage == "truncated":
        log[-1].write_bytes(log[-1].read_bytes()[:40])
    elif damage == "garbage":
        log[-1].write_bytes(b"\x00\xffnot json{")
    elif damage == "gap":
        log[1].unlink()
    else:
        log[0].unlink()
    assert main(["collect", "--results", str(root), "--table", str(table)]) == 1
    err = capsys.readouterr().err
    assert f"the results table at {table} is damaged" in err and f"mv {table} {table}.damaged" in err
    assert "This is a bug" not in err
    for name in ("results.parquet", "results.csv"):  # no export to fall back on: readers open the table
        (table / name).unlink()
    assert main(["report", "--table", str(table), "--out", str(tmp_path / "report")]) == 1
    assert f"the results table at {table} is damaged" in capsys.readouterr().err
    os.rename(table, f"{table}.damaged")  # the recovery the message gives
    summary, rows = collect([str(root)], table)
    assert len(rows) == 3


def test_table_damaged_and_disk_full_are_os_errors_every_command_reports():
    """payload.entrypoint reports an OSError as its message and exit 1, never as a bug."""
    from payload.entrypoint import classify

    for exc in (DiskFull("/t", "x"), TableDamaged("/t", "x"), lock.LockTimeout("held")):
        code, message = classify(exc, "gpubench collect")
        assert code == 1 and message == str(exc).splitlines()[0]


# -- the collect lock ---------------------------------------------------------------------------


@pytest.fixture
def quick_lock(monkeypatch):
    monkeypatch.setattr(lock, "POLL_S", 0.01)
    monkeypatch.setattr(lock, "UNREADABLE_S", 0.2)
    monkeypatch.setattr(lock, "WAIT_NOTE_S", 0.1)


def _lock_file(tmp_path, body: bytes):
    path = tmp_path / lock.LOCK_KEY
    path.parent.mkdir(parents=True)
    path.write_bytes(body)
    return path


@pytest.mark.parametrize(
    "body",
    [
        b"",
        b"{not json",
        json.dumps({"host": socket.gethostname(), "pid": os.getpid(), "at": "abc"}).encode(),
        json.dumps({"host": socket.gethostname(), "pid": os.getpid(), "at": 1e300}).encode(),
    ],
    ids=["empty", "garbage", "at-not-a-time", "at-far-ahead"],
)
def test_an_unreadable_lock_is_broken_after_a_bound_saying_so(tmp_path, quick_lock, body):
    path = _lock_file(tmp_path, body)
    said = []
    started = time.monotonic()
    with lock.table_lock(resolve(tmp_path), wait_s=5.0, say=said.append):
        held = json.loads(path.read_bytes())
        assert held["pid"] == os.getpid() and held["host"] == socket.gethostname()
    assert time.monotonic() - started < 4.0
    assert any("waiting for" in s for s in said) and any("breaking the lock" in s for s in said)
    assert not path.exists()


@pytest.mark.parametrize("shape", ["directory", "symlink-to-a-device", "fifo"])
def test_a_lock_name_that_holds_no_file_is_named_at_once_never_read(tmp_path, quick_lock, shape):
    path = tmp_path / lock.LOCK_KEY
    path.parent.mkdir(parents=True)
    {
        "directory": path.mkdir,
        "symlink-to-a-device": lambda: path.symlink_to("/dev/zero"),
        "fifo": lambda: os.mkfifo(path),
    }[shape]()
    started = time.monotonic()
    with pytest.raises(lock.LockNotAFile, match="is not a lock a collect wrote.*remove it"):
        with lock.table_lock(resolve(tmp_path), wait_s=5.0, say=lambda _: None):
            pass
    assert time.monotonic() - started < 2.0


def test_a_lock_larger_than_any_lock_is_unreadable_and_broken_unread(tmp_path, quick_lock):
    live = {"host": socket.gethostname(), "pid": os.getpid(), "at": time.time(), "pad": "x" * lock.MAX_LOCK_BYTES}
    path = _lock_file(tmp_path, json.dumps(live).encode())  # a live holder, if it were read whole
    said = []
    with lock.table_lock(resolve(tmp_path), wait_s=5.0, say=said.append):
        pass
    assert any("breaking the lock" in s for s in said) and not path.exists()


def test_a_live_holder_is_waited_for_with_a_line_naming_it(tmp_path, quick_lock):
    path = _lock_file(tmp_path, lock._body(time.time()))  # this very process: alive, heartbeat fresh
    said = []
    with pytest.raises(lock.LockTimeout, match=f"process {os.getpid()}"):
        with lock.table_lock(resolve(tmp_path), wait_s=0.5, say=said.append):
            pass
    assert said and all(f"waiting for the collect of process {os.getpid()}" in s for s in said)
    assert len(said) >= 2  # and again while it waits
    assert path.exists()  # a live holder's lock is left alone


def test_a_live_holder_that_proc_does_not_show_is_waited_for(tmp_path, quick_lock, monkeypatch):
    """/proc mounted with hidepid (a shared host's hardening) shows no other user's process: a
    holder there is asked by signal 0 (refused, hence alive), never taken for gone."""
    from payload import proctree

    hidden = tmp_path / "proc"
    hidden.mkdir()
    monkeypatch.setattr(proctree, "PROC", hidden)  # a /proc that shows no process, as hidepid does
    path = _lock_file(tmp_path, lock._body(time.time()))  # this very process: alive, heartbeat fresh
    with pytest.raises(lock.LockTimeout, match=f"process {os.getpid()}"):
        with lock.table_lock(resolve(tmp_path), wait_s=0.3, say=lambda _: None):
            pass
    assert path.exists()


def test_a_holder_whose_heartbeat_stopped_is_broken_even_if_its_process_id_lives(tmp_path, quick_lock):
    old = time.time() - lock.LEASE_S - 5
    path = _lock_file(
        tmp_path, json.dumps({"host": socket.gethostname(), "pid": os.getpid(), "started": old, "at": old}).encode()
    )
    said = []
    with lock.table_lock(resolve(tmp_path), wait_s=5.0, say=said.append):
        pass
    assert any("no heartbeat for" in s for s in said) and not path.exists()


def test_the_holder_renews_its_heartbeat_while_it_holds_the_lock(tmp_path, monkeypatch):
    monkeypatch.setattr(lock, "HEARTBEAT_S", 0.05)
    path = tmp_path / lock.LOCK_KEY
    with lock.table_lock(resolve(tmp_path)):
        first = json.loads(path.read_bytes())
        time.sleep(0.3)
        later = json.loads(path.read_bytes())
    assert later["at"] > first["at"] and later["started"] == first["started"]
    assert not [t for t in threading.enumerate() if t.name == "collect-lock-heartbeat"]


def test_a_forged_holder_is_named_in_words_safe_for_a_terminal():
    text = lock._owner({"host": "evil\x1b]52;c;aGk=\x07\x1b[2J", "pid": 7, "started": "x"})
    assert "\x1b" not in text and "\x07" not in text and "process 7" in text
    assert lock._owner({"host": 1}).startswith("an unknown collect")


def test_sqlite_full_is_told_from_a_damaged_manifest(tmp_path):
    """The manifest is started over only when it is damaged, never on a full disk (it would lose the cache)."""
    from analysis.dataset.location import is_disk_full

    db = sqlite3.connect(tmp_path / "x.sqlite")
    db.execute("CREATE TABLE t (v TEXT)")
    db.execute(f"PRAGMA max_page_count = {db.execute('PRAGMA page_count').fetchone()[0]}")
    with pytest.raises(sqlite3.DatabaseError) as full:
        db.executemany("INSERT INTO t VALUES (?)", [("x" * 1000,)] * 100)
        db.commit()
    assert is_disk_full(full.value)
    assert not is_disk_full(sqlite3.DatabaseError("file is not a database"))


def test_a_lock_that_cannot_be_written_is_not_left_behind(tmp_path, monkeypatch):
    real_fdopen = os.fdopen

    class Full:
        def __init__(self, fd):
            self.f = real_fdopen(fd, "wb")

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self.f.close()

        def write(self, data):
            raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(lock.os, "fdopen", lambda fd, mode: Full(fd))
    with pytest.raises(OSError, match="No space left"):
        with lock.table_lock(resolve(tmp_path)):
            pass
    assert not (tmp_path / lock.LOCK_KEY).exists()


def test_a_lock_in_a_bucket_is_read_no_further_than_any_lock(s3_bucket, quick_lock, monkeypatch):
    from payload.storage import S3Store, open_store

    table = f"s3://{s3_bucket}/table"
    live = {"host": socket.gethostname(), "pid": os.getpid(), "at": time.time(), "pad": "x" * lock.MAX_LOCK_BYTES}
    open_store(table).put_bytes(lock.LOCK_KEY, json.dumps(live).encode())  # a live holder, if it were read whole
    monkeypatch.setattr(S3Store, "get_bytes", lambda *a: pytest.fail("the lock was downloaded whole"))
    said = []
    with lock.table_lock(resolve(table), wait_s=5.0, say=said.append):
        pass
    assert any("breaking the lock" in s for s in said)


def test_a_lock_in_a_bucket_is_created_once_by_a_conditional_put_without_boto3(s3_bucket, quick_lock, monkeypatch):
    from payload.storage import S3Store

    monkeypatch.setattr(S3Store, "__init__", lambda *a, **k: pytest.fail("the lock went through boto3"))
    loc = resolve(f"s3://{s3_bucket}/table")
    with lock.table_lock(loc, wait_s=5.0, say=lambda _: None):
        with pytest.raises(lock.LockTimeout, match=f"process {os.getpid()}"):  # If-None-Match refused the second
            with lock.table_lock(loc, wait_s=0.3, say=lambda _: None):
                pass
    with lock.table_lock(loc, wait_s=0.3, say=lambda _: None):  # let go: taken again at once
        pass


def test_a_create_whose_answer_was_lost_takes_the_lock_it_made(tmp_path, quick_lock, monkeypatch):
    real = lock._LocalLock.create

    def answer_lost(self, body):  # the object is created, the caller hears "already there" (a retried request)
        real(self, body)
        return False

    monkeypatch.setattr(lock._LocalLock, "create", answer_lost)
    said = []
    with lock.table_lock(resolve(tmp_path), wait_s=0.3, say=said.append):
        assert (tmp_path / lock.LOCK_KEY).exists()
    assert said == [] and not (tmp_path / lock.LOCK_KEY).exists()  # not waited for, and let go


def test_a_capped_read_of_an_s3_object_never_reads_past_the_cap_nor_uses_boto3(s3_bucket, monkeypatch):
    from analysis.collect.sources import read_capped
    from payload.storage import ObjectNotFound, open_store

    store = open_store(f"s3://{s3_bucket}/runs")
    store.put_bytes("big", b"x" * 1000)
    store.put_bytes("empty", b"")
    monkeypatch.setattr(store, "_client", None)  # boto3's client: not used to read
    assert read_capped(store, "big", 10) == b"x" * 11  # one byte more says it is over the cap
    assert read_capped(store, "big", 1000) == b"x" * 1000 and read_capped(store, "empty", 10) == b""
    with pytest.raises(ObjectNotFound, match="missing does not exist"):
        read_capped(store, "missing", 10)
