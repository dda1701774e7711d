"""`gpubench logs` reads a log tail no further than any payload writes one: a forged object of any
size prints that much and says it was cut (it once printed 300 MB from 1.2 GB of memory)."""

from __future__ import annotations

from analysis.bench.record import MAX_LOG_TAIL_BYTES
from analysis.cli import main
from payload import exitcodes


def test_logs_cuts_a_log_tail_larger_than_any_payload_writes(tmp_path, capsys):
    bucket = tmp_path / "bucket"
    tail = bucket / "runs" / "aws-g4dn-1x" / "20261125T095100Z-i-1-job" / "log-tail.txt"
    tail.parent.mkdir(parents=True)
    tail.write_bytes(b"a" * (MAX_LOG_TAIL_BYTES + 1000) + b"\nTHE-END\n")
    code = main(["logs", "aws-g4dn-1x", "--results", str(bucket), "--project-dir", str(tmp_path)])
    out = capsys.readouterr().out
    assert code == exitcodes.OK
    assert "THE-END" not in out and len(out) < MAX_LOG_TAIL_BYTES + 200
    assert "larger than any log tail the payload writes" in out


def test_status_reads_no_run_file_larger_than_any_payload_writes(tmp_path, monkeypatch):
    """A forged events.jsonl or result.json of any size is a problem of its stack, never read whole."""
    from analysis import observe as observing
    from analysis.collect import validation
    from payload.storage import FileStore, open_store

    monkeypatch.setattr(observing, "MAX_EVENTS_BYTES", 1000)
    monkeypatch.setattr(validation, "MAX_RESULT_BYTES", 1000)
    monkeypatch.setattr(FileStore, "get_bytes", lambda *a: (_ for _ in ()).throw(AssertionError("read whole")))
    run = tmp_path / "runs" / "aws-g4dn-1x" / "20261125T095100Z-i-1-job"
    run.mkdir(parents=True)
    (run / "events.jsonl").write_text('{"time": "2026-11-25T10:00:00Z", "event": "x"}\n' * 100)
    (run / "result.json").write_text('{"status": "completed", "pad": "' + "x" * 2000 + '"}')
    obs = observing.observe(open_store(str(tmp_path)), "aws-g4dn-1x", None)
    assert sorted(p.split("/")[-1].split(":")[0] for p in obs.problems) == ["events.jsonl", "result.json"]
    assert all("more than gpubench ever writes there" in p for p in obs.problems)


def test_a_stack_whose_run_files_cannot_be_read_is_not_shown_as_empty(tmp_path, monkeypatch):
    from datetime import datetime, timezone

    from analysis import observe as observing
    from analysis.stack_status import stack_status
    from payload.storage import open_store

    monkeypatch.setattr(observing, "MAX_EVENTS_BYTES", 1000)
    run = tmp_path / "runs" / "aws-g4dn-1x" / "20261125T095100Z-i-1-job"
    run.mkdir(parents=True)
    (run / "events.jsonl").write_text('{"time": "2026-11-25T10:00:00Z", "event": "x"}\n' * 100)
    obs = observing.observe(open_store(str(tmp_path)), "aws-g4dn-1x", None)
    entry = {"state": "launched", "launched_at": "2026-11-25T09:50:00Z"}
    detail = stack_status("aws-g4dn-1x", entry, obs, datetime(2026, 11, 25, 10, 5, tzinfo=timezone.utc)).detail
    assert "nothing in the bucket yet" not in detail and "unreadable" in detail and "events.jsonl" in detail
