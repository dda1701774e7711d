"""The results journal, writer's side (payload.spool): every result that lands in the bucket is
announced by one empty `journal/<stack>/<stamp>-<run-id>` stamped right before its own put; a
spooled result only when a flush delivers it; a failed announcement never changes a run.
Against a local directory and moto_server (S3)."""

from __future__ import annotations

import json
import time

import pytest
from test_payload_run import STACK, FakeJob, suite  # noqa: F401  (fixture)
from test_payload_schema import sample_result

from payload import exitcodes, layout
from payload.events import Timeline
from payload.result import RunWriter
from payload.run import Run
from payload.spool import Spool, SpoolingStore, announce
from payload.storage import FileStore, PermanentStorageError, open_store

RESULT = sample_result()
STACK_OF, RUN_OF = RESULT["stack"], RESULT["run_id"]


def _url(kind, tmp_path, request) -> str:
    if kind == "file":
        return f"file://{tmp_path}/bucket"
    return f"s3://{request.getfixturevalue('s3_bucket')}/prefix"


def _entries(store, stack: str = STACK_OF) -> list[str]:
    return sorted(info.key for info in store.list(layout.journal_prefix(stack)))


def _stamp(entry: str, stack: str = STACK_OF) -> str:
    return entry[len(layout.journal_prefix(stack)) :].split("-", 1)[0]


def _write_all(writer: RunWriter) -> bool:
    timeline = Timeline()
    timeline.add("run_start")
    return writer.write_all(RESULT, timeline, [{"epoch": 1, "loss": 0.5}])


def _timed_puts(bucket, monkeypatch) -> list[tuple[str, float, float]]:
    """Record (key, clock when its put began, clock when it returned) of every put to `bucket`."""
    puts, real = [], bucket.put_bytes

    def put(key, *args, **kw):
        began = time.time()
        real(key, *args, **kw)
        puts.append((key, began, time.time()))

    monkeypatch.setattr(bucket, "put_bytes", put)
    return puts


@pytest.mark.parametrize("kind", ["file", "s3"])
def test_a_result_upload_creates_one_entry_naming_its_run_stamped_at_the_put(kind, tmp_path, request, monkeypatch):
    bucket = open_store(_url(kind, tmp_path, request), write_once=True)
    puts = _timed_puts(bucket, monkeypatch)
    writer = RunWriter(SpoolingStore(bucket, Spool(tmp_path / "spool")), STACK_OF, RUN_OF)
    assert _write_all(writer)
    [entry] = _entries(bucket)
    assert layout.journal_run(entry, STACK_OF) == RUN_OF
    assert [key for key, _, _ in puts][-2:] == [writer.key("result.json"), entry]  # the result first, then its entry
    (_, _, result_landed), (_, entry_put, _) = puts[-2:]
    # stamped after the result was in the bucket, right before the entry's own put
    assert layout.journal_stamp(result_landed) <= _stamp(entry) <= layout.journal_stamp(entry_put)
    assert bucket.get_bytes(entry) == b""
    assert json.loads(bucket.get_bytes(writer.key("result.json")))["run_id"] == RUN_OF
    others = {info.key for info in bucket.list()} - {entry}
    assert all(key.startswith(writer.prefix) for key in others)  # nothing else outside the run directory


@pytest.mark.parametrize("kind", ["file", "s3"])
def test_a_resumed_attempts_versioned_result_announces_too(kind, tmp_path, request):
    bucket = open_store(_url(kind, tmp_path, request), write_once=True)
    store = SpoolingStore(bucket, Spool(tmp_path / "spool"))
    assert _write_all(RunWriter(store, STACK_OF, RUN_OF))
    first = _entries(bucket)
    resumed = RunWriter.resuming(store, STACK_OF, RUN_OF, attempts_before=1)
    assert _write_all(resumed)
    assert resumed.key("result.json").endswith("/result.v1.json")
    second = sorted(set(_entries(bucket)) - set(first))
    assert len(first) == 1 and len(second) == 1
    assert layout.journal_run(second[0], STACK_OF) == RUN_OF
    assert _stamp(first[0]) < _stamp(second[0])


class _Outage:
    """Makes a FileStore's puts fail (as a bucket that is down) for the keys `down` matches."""

    def __init__(self, monkeypatch, down):
        self.down, real = down, FileStore._put

        def put(store, key, *args, **kw):
            if self.down(key):
                raise OSError(f"bucket unreachable for {key}")
            return real(store, key, *args, **kw)

        monkeypatch.setattr(FileStore, "_put", put)


def test_a_spooled_result_announces_nothing_until_a_flush_delivers_it_with_the_flush_clock(tmp_path, monkeypatch):
    url = f"file://{tmp_path}/bucket"
    bucket, spool = open_store(url, write_once=True, retries=1), Spool(tmp_path / "spool", fallbacks=[])
    outage = _Outage(monkeypatch, lambda key: key.startswith(layout.ROOT))  # the journal itself is up
    writer = RunWriter(SpoolingStore(bucket, spool), STACK_OF, RUN_OF)
    assert not _write_all(writer)
    spooled_by = time.time()
    assert _entries(bucket) == []
    assert sorted(item["key"] for item in spool.pending()) == sorted(
        writer.artifacts()[k] for k in ("result", "events", "epochs")
    )
    time.sleep(0.05)  # a stamp from the spooling would now read visibly earlier than the flush
    outage.down = lambda key: False
    flush_started = time.time()
    report = spool.flush(retries=1)
    flush_ended = time.time()
    assert report.ok and len(report.delivered) == 3 and report.unannounced == []
    [entry] = _entries(bucket)
    assert layout.journal_run(entry, STACK_OF) == RUN_OF
    assert layout.journal_stamp(spooled_by) < layout.journal_stamp(flush_started) <= _stamp(entry)
    assert _stamp(entry) <= layout.journal_stamp(flush_ended)


def test_a_flush_whose_result_an_earlier_lost_answer_delivered_announces_it(tmp_path):
    url = f"file://{tmp_path}/bucket"
    bucket, spool = open_store(url, write_once=True), Spool(tmp_path / "spool", fallbacks=[])
    key = layout.result_key(STACK_OF, RUN_OF)
    bucket.put_bytes(key, b"{}")  # it landed, but the writer never heard so and spooled it
    spool.add(url, key, b"{}", "application/json", reason="timed out")
    report = spool.flush()
    assert report.ok and report.delivered == [f"{url}/{key}"]
    assert [layout.journal_run(e, STACK_OF) for e in _entries(bucket)] == [RUN_OF]


def test_a_journal_entry_is_never_spooled_and_its_failure_leaves_the_run_unchanged(
    suite,  # noqa: F811  (fixture)
    tmp_path,
    monkeypatch,
    capsys,
):
    _Outage(monkeypatch, lambda key: key.startswith(layout.JOURNAL_ROOT))
    run = Run(suite, FakeJob)
    assert run.execute() == exitcodes.OK
    result_path = tmp_path / "bucket" / run.writer.key("result.json")
    result = json.loads(result_path.read_text())
    assert result["status"] == "completed" and result["exit_code"] == exitcodes.OK
    assert not any("journal" in w for w in result["warnings"])  # written before the announcement
    assert suite.store.spooled == [] and suite.store.spool.pending() == []
    assert not (tmp_path / "bucket" / "journal").exists()
    err = capsys.readouterr().err
    assert f"[gpubench] {run.writer.key('result.json')} landed but its journal entry was not written" in err
    assert "bucket unreachable for journal/" in err


def test_a_journal_put_failure_is_reported_not_raised(tmp_path, monkeypatch):
    store = open_store(f"file://{tmp_path}/bucket", write_once=True, retries=1)
    _Outage(monkeypatch, lambda key: key.startswith(layout.JOURNAL_ROOT))
    said = []
    assert announce(store, layout.result_key(STACK_OF, RUN_OF), warn=said.append) is False
    [message] = said
    assert "journal entry was not written" in message and layout.result_key(STACK_OF, RUN_OF) in message


def test_a_refused_journal_put_is_reported_once_not_raised(tmp_path, monkeypatch):
    store = open_store(f"file://{tmp_path}/bucket", write_once=True)
    tries = []

    def refuse(key, data, content_type=None, tags=None):
        tries.append(key)
        raise PermanentStorageError(f"upload {key} failed: AccessDenied")

    monkeypatch.setattr(store, "put_bytes", refuse)
    spooling, said = SpoolingStore(store, Spool(tmp_path / "spool")), []
    assert announce(spooling, layout.result_key(STACK_OF, RUN_OF), warn=said.append) is False
    assert len(tries) == 1 and layout.journal_run(tries[0], STACK_OF) == RUN_OF
    assert len(said) == 1 and "AccessDenied" in said[0]
    assert spooling.spooled == [] and spooling.spool.pending() == []  # straight to the bucket, never spooled


def test_a_taken_entry_name_is_retried_once_with_a_new_stamp(tmp_path):
    store = open_store(f"file://{tmp_path}/bucket", write_once=True)
    key = layout.result_key(STACK_OF, RUN_OF)
    taken = layout.journal_key(STACK_OF, RUN_OF, 1_000_000.0)
    store.put_bytes(taken, b"")
    stamps = iter([1_000_000.0, 1_000_001.0, 1_000_001.5])  # the taken stamp; a new one; after its put
    assert announce(store, key, clock=lambda: next(stamps)) is True
    assert _entries(store) == [taken, layout.journal_key(STACK_OF, RUN_OF, 1_000_001.0)]
    said = []
    assert announce(store, key, warn=said.append, clock=lambda: 1_000_000.0) is False
    assert len(said) == 1 and "exists" in said[0]


def test_a_flush_reports_a_journal_failure_and_still_delivers(tmp_path, monkeypatch):
    url = f"file://{tmp_path}/bucket"
    spool = Spool(tmp_path / "spool", fallbacks=[])
    key = layout.result_key(STACK_OF, RUN_OF)
    spool.add(url, key, b"{}", "application/json", reason="down")
    _Outage(monkeypatch, lambda k: k.startswith(layout.JOURNAL_ROOT))
    report = spool.flush(retries=1)
    assert report.ok and report.delivered == [f"{url}/{key}"] and spool.pending() == []
    [message] = report.unannounced
    assert key in message and "journal entry was not written" in message


NOT_RESULTS = [
    "events.jsonl",
    "epochs.csv",
    "events.v1.jsonl",
    "checkpoints/state.json",
    "checkpoints/state.v0.3.json",
    "checkpoints/result.json/blob",
    "log-tail.v0.2.txt",
]


@pytest.mark.parametrize("name", NOT_RESULTS)
def test_other_run_files_announce_nothing(name, tmp_path):
    store = open_store(f"file://{tmp_path}/bucket", write_once=True)
    key = layout.run_prefix(STACK_OF, RUN_OF) + name
    assert announce(store, key) is True
    assert _entries(store) == []


@pytest.mark.parametrize("key", ["ssh/s/r/result.json", "runs/s/result.json", "journal/s/x-r", "result.json"])
def test_keys_outside_a_run_directory_announce_nothing(key, tmp_path):
    store = open_store(f"file://{tmp_path}/bucket", write_once=True)
    assert announce(store, key) is True
    assert not (tmp_path / "bucket" / "journal").exists()


def test_a_run_writes_one_entry_whatever_else_it_uploads(suite, tmp_path):  # noqa: F811  (fixture)
    run = Run(suite, FakeJob)
    assert run.execute() == exitcodes.OK
    bucket = suite.store.store
    [entry] = _entries(bucket, STACK)
    assert layout.journal_run(entry, STACK) == run.run_id
    assert {info.key for info in bucket.list()} - {entry} == {
        run.writer.key(name) for name in ("fake.txt", "epochs.csv", "events.jsonl", "result.json")
    }


def test_payload_flush_says_a_failed_announcement_and_exits_as_delivered(tmp_path, monkeypatch, capsys):
    from payload.cli import main

    url = f"file://{tmp_path}/bucket"
    key = layout.result_key(STACK_OF, RUN_OF)
    Spool(tmp_path / "spool", fallbacks=[]).add(url, key, b"{}", "application/json", reason="down")
    _Outage(monkeypatch, lambda k: k.startswith(layout.JOURNAL_ROOT))
    assert main(["flush", "--spool", str(tmp_path / "spool")]) == exitcodes.OK
    out, err = capsys.readouterr()
    assert "delivered 1, still spooled 0" in out
    assert f"{key} landed but its journal entry was not written" in err
    assert (tmp_path / "bucket" / key).read_bytes() == b"{}"


@pytest.mark.parametrize(("took", "entries"), [(1.0, 1), (layout.JOURNAL_WINDOW_S / 2, 2)])
def test_an_entry_whose_put_took_half_the_window_is_written_again_stamped_afresh(took, entries, tmp_path):
    """A put that waited (its retries) may land after a collect read the journal and moved
    its stamp on past the entry's; a second entry, stamped after the put, is then within
    the next read's window. A quick put writes one entry."""
    store = open_store(f"file://{tmp_path}/bucket")
    key = layout.result_key(STACK_OF, RUN_OF)
    times = iter([1_000_000.0, 1_000_000.0 + took, 1_000_000.0 + took + 0.5])
    assert announce(store, key, clock=lambda: next(times)) is True
    got = _entries(store)
    assert len(got) == entries and {layout.journal_run(k, STACK_OF) for k in got} == {RUN_OF}
    assert got[-1] == layout.journal_key(STACK_OF, RUN_OF, 1_000_000.0 + (took + 0.5 if entries == 2 else 0.0))
