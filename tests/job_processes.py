"""A job that leaves processes behind, and the process listing that checks none survives.

The job (JOB, beside its child script CHILD) records its pid in $PID_DIR, starts
the children named in $CHILDREN, each of which records its own pid there and
ignores SIGTERM (only SIGKILL ends it):

- ``background``: a plain child (``Popen(["sleep", ...])`` style), left running;
- ``setsid``: a child in a session of its own (out of the job's process group);
- ``daemon``: a double fork with ``setsid`` in between, re-parented away from the job.

$MODE says what the job does then: ``end`` prints one metrics line and exits,
``run`` prints steady progress forever, ``quiet`` prints nothing and sleeps.
$IGNORE_TERM=1 makes the job itself ignore SIGTERM.
"""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

CHILD = """\
import os, signal, sys, time
mode = sys.argv[1]
if mode == "daemon":
    if os.fork():
        os._exit(0)
    os.setsid()
    if os.fork():
        os._exit(0)
elif mode == "setsid":
    os.setsid()
signal.signal(signal.SIGTERM, signal.SIG_IGN)
open(os.path.join(os.environ["PID_DIR"], str(os.getpid())), "w").close()
time.sleep(300)
"""

JOB = """\
import json, os, signal, subprocess, sys, time
pid_dir = os.environ["PID_DIR"]
if os.environ.get("IGNORE_TERM") == "1":
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
open(os.path.join(pid_dir, str(os.getpid())), "w").close()
children = [c for c in os.environ.get("CHILDREN", "").split(",") if c]
for mode in children:
    subprocess.Popen([sys.executable, "child.py", mode])
end = time.monotonic() + 20
while len(os.listdir(pid_dir)) < 1 + len(children) and time.monotonic() < end:
    time.sleep(0.02)
mode, start = os.environ.get("MODE", "end"), time.monotonic()
if mode == "end":
    print("GPUBENCH_METRICS " + json.dumps({"samples": 100, "seconds": 0.5}), flush=True)
    sys.exit(0)
while True:
    time.sleep(0.05)
    if mode == "run":
        now = time.monotonic() - start
        print("GPUBENCH_METRICS " + json.dumps({"samples": int(1000 * now), "seconds": round(now, 3)}), flush=True)
"""

ALL_CHILDREN = "background,setsid,daemon"


def write_job(directory: Path, **extra: object) -> dict:
    """JOB and CHILD in `directory`; the spec fields (a dict) that run it, `extra` merged in."""
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "job.py").write_text(JOB)
    (directory / "child.py").write_text(CHILD)
    return {"name": "leaver", "run": "python job.py", "metrics": ["json"], **extra}


def recorded(pid_dir: Path) -> list[int]:
    return sorted(int(p.name) for p in pid_dir.iterdir()) if pid_dir.is_dir() else []


def alive(pid: int) -> bool:
    """Running (not gone, not a zombie), by the process listing."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


def survivors(pid_dir: Path, settle: float = 3.0) -> list[int]:
    """The recorded processes still running, after giving the kernel `settle` seconds to finish a kill."""
    end = time.monotonic() + settle
    while True:
        left = [p for p in recorded(pid_dir) if alive(p)]
        if not left or time.monotonic() > end:
            return left
        time.sleep(0.05)


def kill_recorded(pid_dir: Path, workdir: Path) -> None:
    """Test clean-up: whatever a failed test left running is killed, never left to the next test. Only a
    process still working in the job's `workdir` (a recorded pid may have been reused since)."""
    for pid in recorded(pid_dir):
        try:
            if os.readlink(f"/proc/{pid}/cwd") == str(workdir.resolve()):
                os.kill(pid, signal.SIGKILL)
        except (OSError, ProcessLookupError, PermissionError):
            pass
