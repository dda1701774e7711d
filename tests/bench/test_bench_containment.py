"""Stopping `gpubench bench --local` ends everything it started, whatever the job does and however the bench
is stopped: Ctrl-C (SIGINT), SIGTERM (`timeout`, `kill`, a cancelled CI job) or SIGHUP (a closed terminal).
The job ignores SIGTERM, goes quiet and has left a background child, a child in its own session and a
double-forked daemon, all ignoring SIGTERM too. The bench exits 130, says nothing is left running, and the
process listing agrees. The job's grace is lowered (GPUBENCH_STOP_GRACE_SECONDS=1) to keep this short; the
bench's own wait is longer than the payload's, so the payload ends its job before the bench would kill it.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest
import yaml
from job_processes import ALL_CHILDREN, kill_recorded, recorded, survivors, write_job
from test_bench_ctrl_c import Bench, child_env

from analysis.bench.runners import MARK_ENV, end_marked, marked, payload_grace
from payload import exitcodes
from payload.workloads.process import stop_grace_seconds

GRACE = "1"
STOP_SECONDS = 20.0  # the signal to the bench's exit: the job's grace, SIGKILL, the result, on a loaded machine


def leaving_task(directory, pid_dir):
    doc = write_job(directory, env={"CHILDREN": ALL_CHILDREN, "MODE": "quiet", "IGNORE_TERM": "1"})
    doc["env"]["PID_DIR"] = str(pid_dir)
    doc.update(workdir=".", resources={"accelerators": ["T4:1"]}, work={"samples": 1000000})
    path = directory / "task.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP], ids=lambda s: s.name)
def test_a_stopped_bench_leaves_nothing_of_a_job_that_ignores_sigterm(tmp_path, sig):
    pid_dir = tmp_path / "pids"
    pid_dir.mkdir()
    task = leaving_task(tmp_path / "task", pid_dir)
    argv = [sys.executable, "-m", "analysis", "bench", str(task), "--local", "--yes", "--probe-minutes", "5"]
    argv += ["--results", str(tmp_path / "results"), "--project-dir", str(tmp_path), "--hourly-usd", "0.5"]
    bench = Bench(argv, child_env(GPUBENCH_STOP_GRACE_SECONDS=GRACE), tmp_path)
    try:
        bench.wait_for(lambda: len(recorded(pid_dir)) == 4)
        code, seconds, _ = bench.interrupt(sig)
    finally:
        kill_recorded(pid_dir, tmp_path / "task")
    text = bench.text()
    assert code == exitcodes.CANCELLED, text
    assert seconds < STOP_SECONDS, text
    assert "nothing left running" in text and "Traceback" not in text, text
    assert survivors(pid_dir) == [], text
    (record,) = (tmp_path / ".gpubench" / "bench").glob("*/bench.json")
    assert json.loads(record.read_text())["cancelled"] is True


def test_the_bench_waits_longer_for_the_payload_than_the_payload_for_its_job():
    for job in (0.0, 1.0, stop_grace_seconds({})):
        assert payload_grace(job) > job + 10  # the payload's SIGKILL wait and its result come after


def test_a_process_that_escaped_its_payload_is_found_by_its_mark_and_killed():
    """What a payload killed from outside leaves behind: in a session of its own, ignoring SIGTERM, re-parented
    away; it still carries the probe's mark in its environment, and the bench kills it by that."""
    mark = f"test-{os.getpid()}-{time.monotonic_ns()}"
    code = (
        "import os, signal, time; os.setsid(); signal.signal(signal.SIGTERM, signal.SIG_IGN); "
        "print('ready', flush=True); time.sleep(60)"
    )
    env = {**os.environ, MARK_ENV: mark}
    child = subprocess.Popen([sys.executable, "-c", code], env=env, stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout.readline() == "ready\n"
        assert marked(mark) == {child.pid} and marked(mark + "x") == set()
        assert end_marked(mark) == set()
        assert child.wait(timeout=10) == -signal.SIGKILL and marked(mark) == set()
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
        child.stdout.close()
