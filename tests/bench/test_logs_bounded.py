"""`gpubench logs` reads a log tail no further than any payload writes one: a forged object of any
size prints that much and says it was cut (it once printed 300 MB from 1.2 GB of memory)."""

from __future__ import annotations

from analysis.bench.live import MAX_LOG_TAIL_BYTES
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
