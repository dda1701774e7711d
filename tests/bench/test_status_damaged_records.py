"""One damaged bench record (a truncated bench.json, an entry that is not a mapping, a stack name that
is not a slug) is its own row, never the end of `status` or `logs` for every other bench."""

from __future__ import annotations

import json

from analysis.cli import main
from payload import exitcodes


def _benches(tmp_path):
    from analysis.bench.record import RECORD, BenchRecord, bench_root

    bucket = tmp_path / "bucket"
    good = BenchRecord.create(bench_root(tmp_path) / "b1", "b1", "task.yaml", str(bucket))
    good.update("local-b1", kind="local", state="launching")
    odd = BenchRecord.create(bench_root(tmp_path) / "b2", "b2", "task.yaml", str(bucket))
    odd.data["stacks"].update({"local-x\x1b]0;T\x07": {"kind": "local", "state": "launched"}, "aws-str": "oops"})
    odd.save()
    damaged = bench_root(tmp_path) / "b3"
    damaged.mkdir(parents=True)
    (damaged / RECORD).write_text("[")
    return bucket


def test_status_lists_every_bench_beside_a_damaged_record_and_exits_invalid(tmp_path, capsys):
    _benches(tmp_path)
    for mode in ([], ["--all"]):
        assert main(["status", "--project-dir", str(tmp_path), "--json", *mode]) == exitcodes.INVALID
        rows = {(r["bench_id"], r["stack"]): r for r in json.loads(capsys.readouterr().out)}
        assert rows[("b1", "local-b1")]["state"] == "launching"
        assert {rows[k]["state"] for k in [("b2", "local-x\\x1b]0;T\\x07"), ("b2", "aws-str"), ("b3", "-")]} == {
            "unknown"
        }
        assert "unreadable bench record" in rows[("b3", "-")]["detail"]


def test_logs_reads_its_bucket_beside_a_damaged_record(tmp_path, capsys):
    bucket = _benches(tmp_path)
    tail = bucket / "runs" / "aws-g4dn-1x" / "20261125T095100Z-i-1-job" / "log-tail.txt"
    tail.parent.mkdir(parents=True)
    tail.write_text("step 1\n")
    assert main(["logs", "aws-g4dn-1x", "--results", str(bucket), "--project-dir", str(tmp_path)]) == exitcodes.OK
    assert "step 1" in capsys.readouterr().out


def test_a_launch_time_at_the_start_of_the_calendar_is_read_not_overflowed(tmp_path, capsys):
    """A record saying a stack started in year 1 (forged or damaged) is shown as it says, never a
    'date value out of range' for the whole command."""
    from datetime import datetime, timezone

    from analysis.bench.record import BenchRecord, bench_root
    from analysis.observe import observe
    from payload.storage import open_store

    bucket = tmp_path / "bucket"
    run = bucket / "runs" / "aws-g4dn-1x" / "20261125T095100Z-i-1-job"
    run.mkdir(parents=True)
    (run / "events.jsonl").write_text('{"time": "2026-11-25T10:00:00Z", "event": "run_start"}\n')
    assert observe(open_store(str(bucket)), "aws-g4dn-1x", datetime(1, 1, 1, tzinfo=timezone.utc)).in_progress
    record = BenchRecord.create(bench_root(tmp_path) / "b1", "b1", "task.yaml", str(bucket))
    record.update("aws-g4dn-1x", kind="cloud", state="launched", up_started_at="0001-01-01T00:00:00Z")
    assert main(["status", "--project-dir", str(tmp_path), "--json"]) == exitcodes.OK
    (row,) = json.loads(capsys.readouterr().out)
    assert row["state"] == "running" and row["run_ids"] == ["20261125T095100Z-i-1-job"]
