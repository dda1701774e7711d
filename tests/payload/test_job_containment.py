"""Nothing a job starts outlives it: the payload, a real process, runs a job that leaves a background child,
a child in its own session (setsid) and a double-forked daemon, all ignoring SIGTERM; whether the job ends
by itself, is stopped by a probe or by SIGTERM/SIGHUP to the payload, the process listing shows none of
them afterwards, within the (lowered) grace. The job's end is measured when its shell exits, so a child
holding the output pipe does not inflate it."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml
from job_processes import ALL_CHILDREN, kill_recorded, recorded, survivors, write_job

from payload import exitcodes, proctree
from payload.timestamps import parse_iso
from payload.workloads.process import DEFAULT_STOP_GRACE_SECONDS, stop_grace_seconds

REPO = Path(__file__).resolve().parents[2]
GRACE = 1.0  # GPUBENCH_STOP_GRACE_SECONDS for these jobs: SIGKILL a second after SIGTERM
SLACK = 8.0  # process start-up and clean-up on a loaded 2-core machine


@pytest.fixture
def job(tmp_path):
    """(spec path writer, pid dir); whatever a failing test left running is killed afterwards."""
    pid_dir, workdir = tmp_path / "pids", tmp_path / "job"
    pid_dir.mkdir()

    def spec(**extra) -> Path:
        doc = {**write_job(workdir, **extra), "workdir": "job"}
        path = tmp_path / "workload.yaml"
        path.write_text(yaml.safe_dump(doc))
        return path

    yield spec, pid_dir
    kill_recorded(pid_dir, workdir)


def start_payload(spec: Path, results: Path, env: dict, *extra: str) -> subprocess.Popen:
    argv = [sys.executable, "-m", "payload", "run", "--workload", str(spec), "--results", str(results)]
    argv += ["--stack", "local-contain", "--offering", "local/this-machine", "--hourly-usd", "0.4", *extra]
    return subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)


def payload_env(pid_dir: Path, **more: str) -> dict:
    env = {k: v for k, v in os.environ.items() if k != "GPUBENCH_STOP_GRACE_SECONDS"}
    return {
        **env,
        "PYTHONPATH": str(REPO),
        "PID_DIR": str(pid_dir),
        "GPUBENCH_STOP_GRACE_SECONDS": f"{GRACE:g}",
        **more,
    }


def the_result(results: Path) -> dict:
    (path,) = results.glob("runs/local-contain/*/result.json")
    return json.loads(path.read_text())


def wait_for(what, seconds: float = 60.0) -> None:
    end = time.monotonic() + seconds
    while not what():
        assert time.monotonic() < end, "timed out"
        time.sleep(0.05)


def test_what_a_job_leaves_running_ends_with_it_and_does_not_inflate_its_end(job, tmp_path):
    spec, pid_dir = job
    spec_path = spec(env={"CHILDREN": ALL_CHILDREN, "MODE": "end"})
    proc = start_payload(spec_path, tmp_path / "results", payload_env(pid_dir))
    _, err = proc.communicate(timeout=120)
    exited = time.time()
    assert proc.returncode == 0, err
    assert len(recorded(pid_dir)) == 4 and survivors(pid_dir) == []
    result = the_result(tmp_path / "results")
    assert result["status"] == "completed"
    (end,) = [e for e in result["timeline"] if e["event"] == "train_end"]
    # the children ignore SIGTERM: SIGKILL after the grace, and nothing waits on the pipe they held
    assert exited - parse_iso(end["time"]) < GRACE + SLACK
    assert result["benchmark"]["workload"]["run_seconds"] < SLACK  # the job's own time, not the clean-up


def test_a_probe_stop_ends_children_in_their_own_session(job, tmp_path):
    spec, pid_dir = job
    spec_path = spec(env={"CHILDREN": ALL_CHILDREN, "MODE": "run", "IGNORE_TERM": "1"})
    proc = start_payload(spec_path, tmp_path / "results", payload_env(pid_dir), "--probe-seconds", "1")
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    assert len(recorded(pid_dir)) == 4 and survivors(pid_dir) == []
    result = the_result(tmp_path / "results")
    assert result["status"] == "completed" and result["probe"]["stopped_by"] in ("steady", "time-limit")


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP], ids=lambda s: s.name)
def test_a_stop_signal_to_the_payload_ends_the_whole_job(job, tmp_path, sig):
    spec, pid_dir = job
    spec_path = spec(env={"CHILDREN": ALL_CHILDREN, "MODE": "quiet", "IGNORE_TERM": "1"})
    proc = start_payload(spec_path, tmp_path / "results", payload_env(pid_dir))
    try:
        wait_for(lambda: len(recorded(pid_dir)) == 4 or proc.poll() is not None)
        t0 = time.monotonic()
        proc.send_signal(sig)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == exitcodes.INTERRUPTED, err
    assert time.monotonic() - t0 < GRACE + SLACK
    assert survivors(pid_dir) == []
    assert the_result(tmp_path / "results")["status"] == "interrupted"


def test_the_stop_grace_is_a_bounded_setting():
    assert stop_grace_seconds({}) == DEFAULT_STOP_GRACE_SECONDS
    assert stop_grace_seconds({"GPUBENCH_STOP_GRACE_SECONDS": "2.5"}) == 2.5
    for bad in ("nan", "-1", "1e9", "soon"):
        assert stop_grace_seconds({"GPUBENCH_STOP_GRACE_SECONDS": bad}) == DEFAULT_STOP_GRACE_SECONDS


def test_descendants_follow_the_parent_links_from_the_roots_only():
    table = {10: 1, 11: 10, 12: 11, 13: 10, 20: 1, 21: 20}
    assert proctree.descendants([10], table) == {10, 11, 12, 13}
    assert proctree.descendants([99], table) == set()  # a root that is gone
    assert os.getpid() in proctree.descendants([os.getpid()])  # the live listing


def test_two_jobs_of_one_process_end_only_their_own(monkeypatch, tmp_path):
    """Jobs run one at a time in a payload, but a process may hold two (a test suite, a host running two
    probes): ending one must not end, or reap, the other, whose exit code stays its own."""
    import threading

    from payload.workloads.process import ShellProcess

    monkeypatch.setenv("GPUBENCH_STOP_GRACE_SECONDS", "1")
    env = {"PATH": os.environ["PATH"]}
    job = ShellProcess("sleep 300 & sleep 300", str(tmp_path), env, lambda line: None)
    other = ShellProcess("sleep 2; exit 7", str(tmp_path), env, lambda line: None)  # started after it
    stop = threading.Event()
    stop.set()  # a notice at once: the job is ended, its background sleep too
    code, stopped = job.wait(stop, poll=0.05)
    assert stopped and code != 0
    assert proctree.alive(other.proc.pid)  # the other job was not this one's to end
    code, stopped = other.wait(threading.Event(), poll=0.05)
    assert (code, stopped) == (7, False)  # its own exit code: nobody else reaped it


def test_ending_a_job_leaves_the_other_children_of_its_process_alone(monkeypatch, tmp_path):
    """A process that runs a job may start other children meanwhile (a test suite starts the payload and
    servers; a bench its payloads): the job's stop ends only what carries the job's mark."""
    import threading

    from payload.workloads.process import ShellProcess

    monkeypatch.setenv("GPUBENCH_STOP_GRACE_SECONDS", "1")
    job = ShellProcess("sleep 300 & setsid sleep 301 & sleep 302", str(tmp_path), dict(os.environ), lambda line: None)
    unrelated = subprocess.Popen(["sleep", "30"], start_new_session=True)  # started after the job, no mark
    try:
        stop = threading.Event()
        stop.set()
        job.wait(stop, poll=0.05)
        assert proctree.alive(unrelated.pid) and unrelated.poll() is None
        assert job.tree.members() == set()  # the job's own background and setsid children are gone
    finally:
        unrelated.kill()
        unrelated.wait()
