"""An SSH run's upload announces its results in the bucket's journal with this machine's clock
at the upload, and never copies the journal the payload kept in its bucket on the host."""

from __future__ import annotations

import os
import time
from pathlib import Path
from types import SimpleNamespace

from infra.ssh.layout import RunLayout
from infra.ssh.transfer import fetch_and_upload
from payload import layout
from payload.storage import FileStore, open_store

STACK, PAYLOAD_RUN = "ssh-box", "20260101T000000Z-local-mnist-mlp"


class DirSftp:
    """The two SFTP calls the upload makes, over a local directory standing for the host."""

    def listdir_attr(self, path: str):
        return [SimpleNamespace(filename=e.name, st_mode=e.stat().st_mode) for e in os.scandir(path)]

    def open(self, path: str, mode: str = "rb"):
        return _File(Path(path).read_bytes())


class _File:
    def __init__(self, data: bytes):
        self.data = data

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def prefetch(self) -> None:
        pass

    def read(self) -> bytes:
        return self.data


def _host_run(tmp_path: Path) -> RunLayout:
    """A finished run on the 'host': its payload's bucket with two attempts' results and its own journal."""
    run = RunLayout(str(tmp_path / "remote"), STACK, "20260101T000000Z-abc123")
    host_bucket = open_store(run.results, write_once=True)
    prefix = layout.run_prefix(STACK, PAYLOAD_RUN)
    for name in ("events.jsonl", "epochs.csv", "result.json", "result.v1.json", "checkpoints/state.json"):
        host_bucket.put_bytes(prefix + name, b"{}")
    host_bucket.put_bytes(layout.journal_key(STACK, PAYLOAD_RUN, 1_000_000.0), b"")  # the host's, long ago
    return run


def test_each_uploaded_result_is_announced_with_the_upload_clock(tmp_path):
    run = _host_run(tmp_path)
    bucket = open_store(str(tmp_path / "bucket"))
    before = time.time()
    up = fetch_and_upload(DirSftp(), run, bucket)
    after = time.time()
    entries = sorted(info.key for info in bucket.list(layout.journal_prefix(STACK)))
    assert len(entries) == 2 and up.unannounced == []  # result.json and result.v1.json
    assert {layout.journal_run(e, STACK) for e in entries} == {PAYLOAD_RUN}
    stamps = [e[len(layout.journal_prefix(STACK)) :].split("-", 1)[0] for e in entries]
    assert all(layout.journal_stamp(before) <= s <= layout.journal_stamp(after) for s in stamps)
    assert not any(key.startswith(layout.JOURNAL_ROOT) for key in up.keys)
    assert f"{layout.run_prefix(STACK, PAYLOAD_RUN)}result.v1.json" in up.keys


def test_a_journal_failure_is_reported_and_the_upload_completes(tmp_path, monkeypatch):
    monkeypatch.setenv("GPUBENCH_STORAGE_RETRIES", "1")
    run = _host_run(tmp_path)
    real = FileStore._put

    def put(store, key, *args, **kw):
        if key.startswith(layout.JOURNAL_ROOT):
            raise OSError("journal refused")
        return real(store, key, *args, **kw)

    monkeypatch.setattr(FileStore, "_put", put)
    bucket = open_store(str(tmp_path / "bucket"))
    up = fetch_and_upload(DirSftp(), run, bucket)
    assert len(up.unannounced) == 2 and all("journal refused" in m for m in up.unannounced)
    assert bucket.exists(layout.run_prefix(STACK, PAYLOAD_RUN) + "result.v1.json")
    assert not (tmp_path / "bucket" / "journal").exists()
