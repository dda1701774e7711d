"""End to end against a real sshd on loopback: run, errors, Ctrl-C, dropped connection, pick-up."""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from infra.cli import main
from payload.layout import journal_prefix, journal_run

REPO = Path(__file__).resolve().parents[2]

# Stand-ins for `python` on the host, so the lifecycle tests need no TensorFlow. They answer the
# version probe like an interpreter, then behave like the payload: print progress, honour SIGTERM.
# They finish after `steps` steps of 0.1 s, or earlier once a file `release` appears in the run directory.
FAKE_PYTHON = """#!/bin/sh
if [ "$1" = "-c" ]; then echo 3.11.0; exit 0; fi
trap 'echo "fake payload: SIGTERM, checkpoint saved"; exit 75' TERM
echo "fake payload started: $*"
i=0
while [ $i -lt {steps} ] && [ ! -f release ]; do echo "step $i"; sleep 0.1 & wait $!; i=$((i+1)); done
exit {code}
"""


def fake_python(tmp_path: Path, steps: int, code: int = 0) -> str:
    path = tmp_path / f"fakepy-{steps}-{code}"
    path.write_text(FAKE_PYTHON.format(steps=steps, code=code))
    path.chmod(0o755)
    return str(path)


def invoke(capsys, stack: str, stacks_dir: Path, *extra: str) -> tuple[int, dict, str]:
    code = main(
        ["ssh", stack, "--stacks-dir", str(stacks_dir), "--json", "--poll", "0.2", "--stop-timeout", "20", *extra]
    )
    out, err = capsys.readouterr()
    return code, json.loads(out), err


def spawn(stack: str, stacks_dir: Path, *extra: str) -> subprocess.Popen:
    """`python -m infra ssh` in a child process (the CLI as users run it)."""
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "infra",
            "ssh",
            stack,
            "--stacks-dir",
            str(stacks_dir),
            "--poll",
            "0.2",
            "--stop-timeout",
            "20",
            *extra,
        ],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def remote_runs(tmp_path: Path, stack: str) -> list[Path]:
    return sorted(
        p for p in (tmp_path / "remote" / "runs" / stack).glob("*") if p.is_dir() and not p.name.startswith(".")
    )


def wait_for(predicate, timeout: float = 60.0, what: str = "condition"):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


def gone(pid: int) -> bool:
    """Exited: no such process, or a zombie waiting for init (PID 1 in a sandbox may never reap it)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except (FileNotFoundError, ProcessLookupError):
        return True


def result_files(bucket: Path, stack: str) -> list[Path]:
    return sorted((bucket / "runs" / stack).glob("*/result.json"))


# --- a real tiny benchmark through the venv runtime


def test_venv_run_lands_in_a_file_bucket(ssh_stack, tmp_path, capsys):
    stack, stacks_dir = ssh_stack()
    code, report, err = invoke(capsys, stack, stacks_dir)
    assert code == 0, err
    assert report["status"] == "completed" and report["runtime"] == "venv" and not report["attached"]
    assert {c["name"]: c["ok"] for c in report["checks"]}["python"] is True
    assert "epoch_end" in err  # the payload's progress was streamed
    results = result_files(tmp_path / "bucket", stack)
    assert len(results) == 1
    result = json.loads(results[0].read_text())
    assert result["status"] == "completed" and result["stack"] == stack
    assert result["offering"]["id"] == "hetzner/ex51-ssd-gpu"
    run_dir = results[0].parent
    assert {"epochs.csv", "events.jsonl"} <= {p.name for p in run_dir.iterdir()}
    events = [json.loads(line)["event"] for line in (run_dir / "events.jsonl").read_text().splitlines()]
    assert events[:2] == ["ssh_launch", "ssh_run_start"]  # host events merged into the timeline
    assert report["payload_runs"] == [{"url": f"file://{run_dir}/", "benchmark": "mnist-mlp", "status": "completed"}]
    side = tmp_path / "bucket" / "ssh" / stack / report["run_id"]
    assert {"log", "state.json", "run.json", "host-events.jsonl"} <= {p.name for p in side.iterdir()}
    assert f"runs/{stack}/{run_dir.name}/result.json" in report["files"]
    [entry] = (tmp_path / "bucket" / journal_prefix(stack)).iterdir()  # announced once, by the upload
    assert journal_run(f"{journal_prefix(stack)}{entry.name}", stack) == run_dir.name
    (remote,) = remote_runs(tmp_path, stack)
    assert json.loads((remote / "fetched.json").read_text())["status"] == "completed"


def test_dropped_connection_then_second_invocation_collects_the_one_run(ssh_stack, tmp_path, s3_bucket, capsys):
    stack, stacks_dir = ssh_stack(results=f"s3://{s3_bucket}/bench")
    child = spawn(stack, stacks_dir)
    try:
        run = wait_for(lambda: next(iter(remote_runs(tmp_path, stack)), None), 60, "the remote run directory")
        wait_for(lambda: (run / "pid").exists(), 30, "the remote pid file")
    finally:
        child.kill()  # the client dies without a word: the SSH session drops
        child.wait(10)
    pid = int((run / "pid").read_text())
    code, report, err = invoke(capsys, stack, stacks_dir)
    assert code == 0, err
    assert report["attached"] and report["run_id"] == run.name and report["status"] == "completed"
    assert "following it" in err or "while no one watched" in err
    assert remote_runs(tmp_path, stack) == [run]  # no second run was started
    import boto3

    keys = [o["Key"] for o in boto3.client("s3").list_objects_v2(Bucket=s3_bucket)["Contents"]]
    [result_key] = [k for k in keys if k.endswith("/result.json")]
    # one journal entry beside the runs: the upload announcing that result (the host's own is not copied)
    [entry] = [k.removeprefix("bench/") for k in keys if k.startswith(f"bench/{journal_prefix(stack)}")]
    assert journal_run(entry, stack) == result_key.split("/")[-2]
    rest = [k for k in keys if k != f"bench/{entry}"]
    assert all(k.startswith(f"bench/runs/{stack}/") or k.startswith(f"bench/ssh/{stack}/{run.name}/") for k in rest)
    assert report["results"] == f"s3://{s3_bucket}/bench/runs/{stack}/"
    assert gone(pid)


# --- lifecycle with a stand-in payload


def test_ctrl_c_stops_the_remote_run_and_records_it(ssh_stack, tmp_path):
    stack, stacks_dir = ssh_stack(remotePython=fake_python(tmp_path, steps=600))
    child = spawn(stack, stacks_dir, "--json")
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.extend(child.stdout), daemon=True)
    reader.start()
    wait_for(lambda: any(line.startswith("step 3") for line in lines), 30, "streamed progress")
    (run,) = remote_runs(tmp_path, stack)
    pid = int((run / "pid").read_text())
    child.send_signal(signal.SIGINT)
    child.wait(60)
    reader.join(10)
    out = "".join(lines)
    assert child.returncode == 130, out
    report = json.loads(out[out.index("\n{") + 1 :])
    assert report["status"] == "interrupted" and report["stopped_by_user"]
    state = json.loads((run / "state.json").read_text())
    assert state["status"] == "stopped" and state["phase"] == "payload"
    assert "SIGTERM, checkpoint saved" in (run / "log").read_text()
    assert gone(pid)
    assert (tmp_path / "bucket" / "ssh" / stack / run.name / "log").exists()


def test_detach_then_pick_up_never_starts_a_second_run(ssh_stack, tmp_path, capsys):
    stack, stacks_dir = ssh_stack(remotePython=fake_python(tmp_path, steps=600))
    code, report, _ = invoke(capsys, stack, stacks_dir, "--detach")
    assert code == 0 and report["status"] == "running" and not report["attached"]
    code, again, _ = invoke(capsys, stack, stacks_dir, "--detach")
    assert again["run_id"] == report["run_id"] and again["attached"] and again["status"] == "running"
    (tmp_path / "remote" / "runs" / stack / report["run_id"] / "release").touch()
    code, done, err = invoke(capsys, stack, stacks_dir)
    assert code == 0 and done["status"] == "completed" and done["run_id"] == report["run_id"], err
    assert len(remote_runs(tmp_path, stack)) == 1
    code, fresh, _ = invoke(capsys, stack, stacks_dir, "--detach")  # collected: the next invocation is a new run
    assert fresh["run_id"] != report["run_id"] and not fresh["attached"]


def test_failing_payload_is_reported_as_failed(ssh_stack, tmp_path, capsys):
    stack, stacks_dir = ssh_stack(remotePython=fake_python(tmp_path, steps=1, code=2))
    code, report, _ = invoke(capsys, stack, stacks_dir)
    assert code == 1 and report["status"] == "failed" and report["exit_code"] == 2


# --- clear errors


def test_wrong_port_and_unknown_host(ssh_stack, capsys):
    from servers import free_port

    stack, stacks_dir = ssh_stack(port=free_port())
    code, report, err = invoke(capsys, stack, stacks_dir)
    assert code == 3 and "cannot connect" in report["message"] and "gpubench:port" in report["message"]
    stack, stacks_dir = ssh_stack(host="no-such-host.invalid")
    code, report, _ = invoke(capsys, stack, stacks_dir)
    assert code == 3 and "cannot resolve host 'no-such-host.invalid'" in report["message"]


def test_refused_key(ssh_stack, sshd, capsys):
    stack, stacks_dir = ssh_stack(identityFile=sshd.other_key)
    code, report, err = invoke(capsys, stack, stacks_dir)
    assert code == 3 and "SSH key refused" in report["message"] and sshd.other_key in report["message"]
    assert "error: " in err


def test_missing_python_docker_and_gpu_are_named(ssh_stack, capsys):
    stack, stacks_dir = ssh_stack()
    code, report, err = invoke(capsys, stack, stacks_dir, "--python", "/nonexistent/python3")
    assert code == 3 and "python" in report["message"] and "/nonexistent/python3 not found" in err
    if shutil.which("docker") is None:
        code, report, err = invoke(capsys, stack, stacks_dir, "--runtime", "docker")
        assert code == 3 and "docker not found" in err and "--runtime venv" in report["message"]
    if shutil.which("nvidia-smi") is None:
        code, report, err = invoke(capsys, stack, stacks_dir, "--expect-gpu", "--check")
        assert code == 3 and "MISSING gpu: nvidia-smi not found" in err and "NVIDIA driver" in report["message"]
    code, report, _ = invoke(capsys, stack, stacks_dir, "--check")
    assert code == 0 and report["status"] == "checked"


def test_cloud_offering_is_refused(ssh_stack, capsys):
    stack, stacks_dir = ssh_stack(offering="aws/p3.2xlarge")
    code, report, err = invoke(capsys, stack, stacks_dir)
    assert code == 2 and "pulumi up" in report["message"]


def test_a_launch_in_progress_elsewhere_is_not_closed_as_lost(ssh_stack, tmp_path, capsys):
    """Another invocation holds the launch lock and has made the run directory but has no pid yet:
    this one must neither close that run as `lost` (its payload would start later and never be
    collected, and the next invocation would start a second run) nor start one of its own."""
    stack, stacks_dir = ssh_stack(remotePython=fake_python(tmp_path, steps=1))
    stack_dir = tmp_path / "remote" / "runs" / stack
    half = stack_dir / "20300101T000000Z-aaaaaa"
    (half / "results").mkdir(parents=True)
    (half / "run.json").write_text(json.dumps({"stack": stack, "runtime": "venv"}))
    (stack_dir / ".launch.lock").mkdir()
    code, report, err = invoke(capsys, stack, stacks_dir)
    assert code == 3 and "starting a run of this stack right now" in report["message"], err
    assert not (half / "state.json").exists() and not (half / "fetched.json").exists()
    assert remote_runs(tmp_path, stack) == [half]
