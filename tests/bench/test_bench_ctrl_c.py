"""Ctrl-C during `gpubench bench`, for real: the bench runs in its own process and gets SIGINT (what the
terminal sends) while its probes run. It must stop within seconds, end what it started (the local
payload's whole process group, the SSH host's run, the stand-in cloud's stacks, destroyed and removed),
exit 130, and leave nothing running.

Each probe's job is the fake job of tests/bench/bench_fakes.py with PID_DIR set: it records its pid
there, so the test can check that every job process is gone afterwards; it stays quiet for 100 s, so
every probe is still running when the SIGINT comes.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from bench_fakes import write_task
from user_state import USER_STATE_VARIABLES

from payload import exitcodes

REPO = Path(__file__).resolve().parents[2]
STOP_SECONDS = 15.0  # SIGINT to exit, on a loaded 2-core machine (about 1-2 s when it is quiet)
START_SECONDS = 120.0  # bench start to its probe's job running
# The job prints its first reading only after 100 s: no probe can end by itself (steady) before the SIGINT.
QUIET_JOB = {"TICK": "100"}


class Bench:
    """A bench process whose stderr is collected in a thread, so a marker line can be waited for."""

    def __init__(self, argv: list[str], env: dict[str, str], cwd: Path):
        self.proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=cwd)
        self.err: list[str] = []
        self._reader = threading.Thread(target=lambda: self.err.extend(self.proc.stderr), daemon=True)
        self._reader.start()

    def text(self) -> str:
        return "".join(self.err)

    def wait_for(self, what, seconds: float = START_SECONDS) -> None:
        """Until `what()` holds; fails with the bench's output when it exits first or time is up."""
        end = time.monotonic() + seconds
        while not what():
            if self.proc.poll() is not None or time.monotonic() > end:
                self.proc.kill()
                pytest.fail(f"the bench never got that far (exit {self.proc.poll()}):\n{self.text()}")
            time.sleep(0.1)

    def interrupt(self, sig: int = signal.SIGINT) -> tuple[int, float, str]:
        """SIGINT (or `sig`); (exit code, seconds to exit, stdout)."""
        t0 = time.monotonic()
        self.proc.send_signal(sig)
        try:
            self.proc.wait(timeout=120)  # not communicate(): the reader thread owns stderr
        except subprocess.TimeoutExpired:
            self.proc.kill()
            pytest.fail(f"the bench did not exit after SIGINT:\n{self.text()}")
        seconds = time.monotonic() - t0
        self._reader.join(timeout=10)
        return self.proc.returncode, seconds, self.proc.stdout.read()


def child_env(**more: str) -> dict[str, str]:
    """This environment without gpubench's settings, but with the suite's per-user folders
    (tests/conftest.py): the child's known_hosts and cache stay out of the home directory."""
    keep = {*USER_STATE_VARIABLES, "GPUBENCH_HOME"}
    env = {k: v for k, v in os.environ.items() if not k.startswith("GPUBENCH_") or k in keep}
    return {**env, "PYTHONPATH": str(REPO), "PYTHONUNBUFFERED": "1", **more}


def job_pids(pid_dir: Path) -> list[int]:
    return [int(p.name) for p in pid_dir.iterdir()] if pid_dir.is_dir() else []


def alive(pid: int) -> bool:
    """Running (not gone, not a zombie waiting to be reaped)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return False
    return state != "Z"


def processes_mentioning(text: str) -> list[str]:
    """Command lines of live processes that mention `text` (a test's own temporary path)."""
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit() or not alive(int(proc.name)):
            continue
        try:
            cmd = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if text in cmd:
            found.append(f"{proc.name}: {cmd}")
    return found


def assert_nothing_running(pid_dir: Path, marker: str) -> None:
    pids = job_pids(pid_dir)
    assert pids, "the job never started"
    deadline = time.monotonic() + 5  # the kernel may take a moment to reap what was killed
    while (any(alive(p) for p in pids) or processes_mentioning(marker)) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not [p for p in pids if alive(p)], "a probe's job is still running"
    assert processes_mentioning(marker) == []


def test_ctrl_c_stops_a_local_probe_and_its_whole_process_group(tmp_path):
    pid_dir = tmp_path / "pids"
    pid_dir.mkdir()
    task = write_task(tmp_path / "task", extra_env=QUIET_JOB | {"PID_DIR": str(pid_dir)})
    argv = [sys.executable, "-m", "analysis", "bench", str(task), "--local", "--yes", "--probe-minutes", "5"]
    argv += ["--results", str(tmp_path / "results"), "--project-dir", str(tmp_path), "--hourly-usd", "0.5"]
    bench = Bench(argv, child_env(), tmp_path)
    bench.wait_for(lambda: job_pids(pid_dir))
    code, seconds, _ = bench.interrupt()
    text = bench.text()
    assert code == exitcodes.CANCELLED, text
    assert seconds < STOP_SECONDS, text
    assert "nothing left running" in text and "Traceback" not in text, text
    assert_nothing_running(pid_dir, str(tmp_path))
    (record,) = (tmp_path / ".gpubench" / "bench").glob("*/bench.json")
    assert json.loads(record.read_text())["cancelled"] is True


def test_ctrl_c_stops_the_run_on_an_ssh_host(tmp_path, ssh_host):
    pid_dir = tmp_path / "pids"
    pid_dir.mkdir()
    task = write_task(tmp_path / "task", extra_env=QUIET_JOB | {"PID_DIR": str(pid_dir)})
    argv = [sys.executable, "-m", "analysis", "bench", str(task), "--hosts", ssh_host.name, "--yes"]
    argv += ["--probe-minutes", "5", "--project-dir", str(tmp_path)]
    bench = Bench(argv, child_env(), tmp_path)
    bench.wait_for(lambda: job_pids(pid_dir))
    code, seconds, _ = bench.interrupt()
    text = bench.text()
    assert code == exitcodes.CANCELLED, text
    assert seconds < STOP_SECONDS, text
    assert "stop requested: stopping run" in text and "nothing left running" in text, text
    assert_nothing_running(pid_dir, str(tmp_path / "task"))
    # the stopped run was still collected: its interrupted result is in the host's bucket
    (result,) = (ssh_host.bucket / "runs" / ssh_host.name).glob("*/result.json")
    assert json.loads(result.read_text())["status"] == "interrupted"


def test_ctrl_c_destroys_and_removes_every_stand_in_cloud_stack(tmp_path, moto_server, s3_bucket):
    env = child_env(
        AWS_ENDPOINT_URL=moto_server.endpoint,
        AWS_ACCESS_KEY_ID="testing",
        AWS_SECRET_ACCESS_KEY="testing",
        AWS_DEFAULT_REGION="us-east-1",
        GPUBENCH_STORAGE_RETRIES="3",
        GPUBENCH_STORAGE_BACKOFF="0.05",
    )
    argv = [sys.executable, str(Path(__file__).with_name("bench_cloud_child.py")), str(tmp_path)]
    bench = Bench([*argv, f"s3://{s3_bucket}/bench", "T4:1,L4:1"], env, tmp_path)
    bench.wait_for(lambda: len(job_pids(tmp_path / "pids")) == 2)
    code, seconds, out = bench.interrupt()
    text = bench.text()
    assert code == 0, text  # the child script's own exit; bench's is in its report
    state = json.loads(out.strip().splitlines()[-1])
    assert state["exit"] == exitcodes.CANCELLED, text
    assert seconds < STOP_SECONDS + 20, text  # the stand-in's destroy waits for each instance to stop
    assert len(state["ups"]) == 2 and state["destroys"] == state["ups"] and state["removed"] == state["ups"]
    assert state["left"] == {} and state["running"] == [] and state["stacks"] == []
    assert "nothing left running" in text
    assert_nothing_running(tmp_path / "pids", str(tmp_path))
