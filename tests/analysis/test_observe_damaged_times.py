"""A time in a bucket that is not an ISO text (a number, a list: a forged result or a job's own event line)
is no time to the stack's observation, never the end of `status` or a campaign's watch."""

from __future__ import annotations

import json

from analysis.observe import observe
from payload.storage import open_store


def test_times_that_are_not_text_are_read_as_no_time(tmp_path):
    stack = tmp_path / "runs" / "local-x"
    done = stack / "20261127T120000Z-vm-a"
    done.mkdir(parents=True)
    result = {"benchmark": "a", "status": "completed", "started_at": 5, "finished_at": [1]}
    (done / "result.json").write_text(json.dumps({**result, "timeline": [{"event": "upload", "time": 7}]}))
    running = stack / "20261127T120000Z-vm-b"
    running.mkdir()
    lines = [{"event": "epoch_end", "time": 1764244801}, {"event": "run_start", "time": "2026-11-27T12:00:01Z"}]
    (running / "events.jsonl").write_text("".join(json.dumps(e) + "\n" for e in lines))

    obs = observe(open_store(str(tmp_path)), "local-x", None)

    (run,) = obs.runs
    assert (run.status, run.started_at, run.finished_at, run.upload_at) == ("completed", None, None, None)
    assert obs.in_progress == ["20261127T120000Z-vm-b"]
    assert obs.last_event["event"] == "run_start"
