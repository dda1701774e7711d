"""Runs on the host: find, launch, watch and stop them. A run directory without `fetched.json` is an open run
(wrapper pid alive, or `state.json` written) that the next invocation picks up instead of starting another. The
wrapper (wrapper.sh) runs under `setsid`: its pid is the process group of setup and payload; however it ends
that it can catch, it writes `state.json` (status, exit_code, phase).
"""

from __future__ import annotations

import hashlib
import json
import shlex
import stat
import sys
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from infra.ssh.config import DEFAULT_REMOTE_DIR, system_dir_problem
from infra.ssh.connection import SshError, run
from infra.ssh.layout import RunLayout
from infra.ssh.runtimes import Plan, shell_words
from payload.timestamps import iso

# A launch (upload, unpack with a 600 s timeout, 30 s wait for the pid) usually takes seconds; only a
# lock older than its worst case is a leftover (taking a live one would close that launch's run as lost).
LOCK_STALE_SECONDS = 900
# exit code of `python -m payload run` (payload/exitcodes.py) -> run status
EXIT_STATUS = {0: "completed", 4: "completed", 75: "interrupted"}
WRAPPER_STATUS = {"stopped": "interrupted", "killed": "interrupted", "lost": "lost"}


@dataclass
class RemoteRun:
    layout: RunLayout
    record: dict = field(default_factory=dict)
    state: dict | None = None
    pid: int | None = None
    alive: bool = False
    fetched: bool = False

    @property
    def status(self) -> str:
        """completed | failed | interrupted | running | lost (wrapper gone without a state file)."""
        if self.state is None:
            return "running" if self.alive else "lost"
        if self.state.get("status") in WRAPPER_STATUS:
            return WRAPPER_STATUS[self.state["status"]]
        if self.state.get("phase") == "setup" and self.state.get("exit_code"):
            return "failed"
        return EXIT_STATUS.get(int(self.state.get("exit_code", 1)), "failed")


def resolve_root(conn, remote_dir: str) -> str:
    """Absolute remote dir: `~` is the SSH user's home."""
    if remote_dir == "~" or remote_dir.startswith("~/"):
        home = run(conn, 'printf %s "$HOME"').stdout.strip()
        if not home.startswith("/"):
            raise SshError(
                f"cannot find the remote home directory (got {home!r}); set gpubench:remoteDir to an absolute path"
            )
        return home + remote_dir[1:]
    return remote_dir


def secure_root(conn, sftp, root: str) -> str:
    """The remote dir, created private (umask 077) and checked: its real path (symlinks resolved) is not a
    system directory, it belongs to the SSH user and is not group/world writable, and no directory above it
    can be changed by another user (owned by the user or root; writable by others only with the sticky bit,
    like /tmp). Another user of the host can then neither plant code for a run nor swap a directory under it."""
    run(conn, f"umask 077 && mkdir -p {shlex.quote(root)}")
    real = sftp.normalize(root)
    problem = system_dir_problem(real)
    if problem:
        raise SshError(f"gpubench:remoteDir {root} resolves to {real}: {problem}")
    uid = int(run(conn, "id -u").stdout.strip())
    fix = f"set gpubench:remoteDir to a directory of your own, e.g. {DEFAULT_REMOTE_DIR}"
    parts = real.strip("/").split("/")
    for i in range(len(parts) + 1):
        path = "/" + "/".join(parts[:i])
        st = sftp.lstat(path)
        mine = st.st_uid == uid
        if path == real and not mine:
            raise SshError(
                f"gpubench:remoteDir {real} on the host belongs to user id {st.st_uid}, not you ({uid}); {fix}"
            )
        if path != real and st.st_uid not in (0, uid):
            raise SshError(
                f"{path} (above gpubench:remoteDir {real}) belongs to user id {st.st_uid}, who could swap it; {fix}"
            )
        if st.st_mode & 0o022 and (path == real or not st.st_mode & stat.S_ISVTX):
            raise SshError(
                f"{path} is writable by other users (mode {stat.S_IMODE(st.st_mode):o}), so they could plant code "
                f"for a run; `chmod go-w {path}` on the host, or {fix}"
            )
    return real


def remote_sha256(conn, sftp, path: str) -> str | None:
    """sha256 of a remote file (None when there is none): sha256sum or shasum on the host, else read over SFTP."""
    q = shlex.quote(path)
    out = run(conn, f"test -f {q} || exit 3; sha256sum {q} 2>/dev/null || shasum -a 256 {q}", check=False)
    if out.exited == 3:
        return None
    words = out.stdout.split()
    if out.exited == 0 and words and len(words[0]) == 64:
        return words[0]
    with sftp.open(path, "rb") as f:
        f.prefetch()
        return hashlib.file_digest(f, "sha256").hexdigest()


def put_verified(conn, sftp, data: bytes, path: str) -> bool:
    """Make `path` hold exactly `data`: an existing file is reused only when its sha256 matches; otherwise
    (missing, partial or altered) it is uploaded again. True when it was uploaded."""
    if remote_sha256(conn, sftp, path) == hashlib.sha256(data).hexdigest():
        return False
    _put(sftp, data, path + ".part")
    sftp.posix_rename(path + ".part", path)
    return True


def _read_json(sftp, path: str) -> dict | None:
    try:
        with sftp.open(path, "r") as f:
            return json.loads(f.read().decode() or "{}")
    except FileNotFoundError:
        return None
    except ValueError:
        return {}


def _exists(sftp, path: str) -> bool:
    try:
        sftp.stat(path)
        return True
    except FileNotFoundError:
        return False


def pid_alive(conn, pid: int) -> bool:
    """The wrapper is alive: pid exists and (where /proc exists) is our run.sh, not a reused pid."""
    check = (
        f"kill -0 {pid} 2>/dev/null || exit 1; [ -r /proc/{pid}/cmdline ] || exit 0; "
        f"tr '\\0' ' ' < /proc/{pid}/cmdline | grep -q run.sh"
    )
    return run(conn, check, check=False).exited == 0


def load_run(conn, sftp, layout: RunLayout) -> RemoteRun:
    r = RemoteRun(layout, record=_read_json(sftp, layout.path("record")) or {})
    r.fetched = _exists(sftp, layout.path("fetched"))
    r.state = _read_json(sftp, layout.path("state"))
    try:
        with sftp.open(layout.path("pid"), "r") as f:
            r.pid = int(f.read().decode().strip() or 0) or None
    except (FileNotFoundError, ValueError):
        r.pid = None
    r.alive = r.state is None and r.pid is not None and pid_alive(conn, r.pid)
    if r.state is None and not r.alive:  # it may have written its state between our two looks
        r.state = _read_json(sftp, layout.path("state"))
    return r


def open_runs(conn, sftp, root: str, stack: str) -> list[RemoteRun]:
    """Runs of this stack that were not fetched yet, oldest first."""
    stack_dir = f"{root}/runs/{stack}"
    try:
        entries = sftp.listdir_attr(stack_dir)
    except FileNotFoundError:
        return []
    names = sorted(e.filename for e in entries if stat.S_ISDIR(e.st_mode or 0) and not e.filename.startswith("."))
    runs = [load_run(conn, sftp, RunLayout(root, stack, n)) for n in names]
    return [r for r in runs if not r.fetched]


@contextmanager
def stack_lock(conn, root: str, stack: str):
    """`mkdir` lock per stack, held from "is a run open?" to "the new run has a pid"."""
    path = f"{root}/runs/{stack}/.launch.lock"
    q = shlex.quote(path)
    cmd = (
        f"mkdir -p $(dirname {q}) && {{ mkdir {q} 2>/dev/null && exit 0; "
        f"[ $(( $(date +%s) - $(stat -c %Y {q} 2>/dev/null || date +%s) )) -gt {LOCK_STALE_SECONDS} ] "
        f"&& rm -rf {q} && mkdir {q} && exit 0; exit 1; }}"
    )
    if run(conn, cmd, check=False).exited != 0:
        raise SshError(
            f"another `python -m infra ssh` is starting a run of this stack right now ({path} exists); "
            f"wait and retry, or remove that directory if no one is"
        )
    try:
        yield
    finally:
        run(conn, f"rmdir {q}", check=False)


def _put(sftp, data: bytes | str, path: str, mode: int = 0o644) -> None:
    with sftp.open(path, "wb") as f:
        f.write(data.encode() if isinstance(data, str) else data)
    sftp.chmod(path, mode)


def wrapper(layout: RunLayout) -> str:
    """run.sh: infra/ssh/wrapper.sh for this run's directory."""
    return Path(__file__).with_name("wrapper.sh").read_text().replace("@DIR@", shlex.quote(layout.dir))


def payload_script(plan: Plan) -> str:
    env = "".join(f"export {k}={shlex.quote(v)}\n" for k, v in sorted(plan.env.items()))
    return f"#!/bin/sh\n# gpubench payload command\n{env}exec {shell_words(plan.payload)}\n"


def launch(conn, sftp, layout: RunLayout, plan: Plan, record: dict, timeout: float = 30.0) -> RemoteRun:
    """Write the run directory, start the wrapper detached, wait for its pid."""
    q = shlex.quote
    run(conn, f"mkdir -p {q(layout.results)} {q(layout.spool)} {q(layout.host)} {q(layout.root)}/src")
    for data, path in plan.uploads:
        put_verified(conn, sftp, data, path)
    if plan.prepare:
        run(conn, " && ".join(f"({cmd})" for cmd in plan.prepare), timeout=600)
    _put(sftp, json.dumps(record, indent=2) + "\n", layout.path("record"))
    _put(
        sftp,
        f"#!/bin/sh\n# gpubench setup (runs detached before the payload)\n{plan.setup}\n",
        layout.path("setup"),
        0o755,
    )
    _put(sftp, payload_script(plan), layout.path("payload"), 0o755)
    _put(sftp, wrapper(layout), layout.path("wrapper"), 0o755)
    _put(sftp, json.dumps({"event": "ssh_launch", "time": record["started_at"]}) + "\n", f"{layout.host}/events.jsonl")
    run(conn, f"cd {q(layout.dir)} && (setsid nohup sh run.sh > /dev/null 2>&1 < /dev/null &)")  # detached
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if _exists(sftp, layout.path("pid")):
            return load_run(conn, sftp, layout)
        time.sleep(0.1)
    raise SshError(f"the run wrapper did not start within {timeout:g}s; see {layout.dir} on the host")


def stop(conn, sftp, r: RemoteRun, plan_stop: str | None, grace: float = 60.0, poll: float = 0.5) -> RemoteRun:
    """TERM the run's process group (the payload checkpoints and writes `interrupted`), then KILL after `grace`."""
    if r.pid is None:
        return r
    run(conn, f"kill -TERM -{r.pid} 2>/dev/null || kill -TERM {r.pid} 2>/dev/null", check=False)
    if plan_stop:
        run(conn, plan_stop, check=False, timeout=grace + 30)
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline:
        r = load_run(conn, sftp, r.layout)
        if r.state is not None or not r.alive:
            break
        time.sleep(poll)
    if r.state is None:
        run(conn, f"kill -KILL -{r.pid} 2>/dev/null", check=False)
        note = f"did not stop within {grace:g}s of SIGTERM; killed by python -m infra ssh"
        write_state(sftp, r, "killed", 137, note)
        r = load_run(conn, sftp, r.layout)
    return r


def write_state(sftp, r: RemoteRun, status: str, exit_code: int, note: str) -> None:
    """The state file the wrapper would have written, for a run that ended without writing one."""
    r.state = {
        "status": status,
        "exit_code": exit_code,
        "phase": "unknown",
        "finished_at": iso(seconds=True),
        "note": note,
    }
    _put(sftp, json.dumps(r.state) + "\n", r.layout.path("state"))


def mark_fetched(sftp, r: RemoteRun, info: dict[str, Any]) -> None:
    _put(sftp, json.dumps(info, indent=2) + "\n", r.layout.path("fetched"))
    r.fetched = True


# --- following a run

TAIL_BYTES = 4096  # on re-attach, show this much of the log's end


def _size(sftp, path: str) -> int:
    try:
        return sftp.stat(path).st_size or 0
    except FileNotFoundError:
        return 0


def _show(sftp, path: str, offset: int, out: IO[str]) -> int:
    """Write what the log gained since `offset`; the new offset."""
    size = _size(sftp, path)
    if size > offset:
        with sftp.open(path, "rb") as f:
            f.seek(offset)
            out.write(f.read(size - offset).decode("utf-8", "replace"))
        out.flush()
    return max(size, offset)


def start_offset(sftp, r: RemoteRun) -> int:
    """Where to start streaming when attaching to a run that has been going for a while."""
    return max(0, _size(sftp, r.layout.path("log")) - TAIL_BYTES)


class StopRequested(Exception):
    """The caller asked the follow loop to stop (its `stop` event was set): interrupt the run."""


def follow(
    conn,
    sftp,
    r: RemoteRun,
    out: IO[str] | None = None,
    poll: float = 2.0,
    offset: int = 0,
    stop: threading.Event | None = None,
) -> RemoteRun:
    """Print new log output until the wrapper has written its state (or vanished); the final run. Polls
    over SFTP rather than holding `tail -f` open, so Ctrl-C (or a set `stop`: StopRequested) ends it cleanly."""
    out = out or sys.stdout
    log = r.layout.path("log")
    while True:
        offset = _show(sftp, log, offset, out)
        r = load_run(conn, sftp, r.layout)
        if r.state is not None or not r.alive:
            _show(sftp, log, offset, out)  # the last lines written before the state file
            return r
        if stop is None:
            time.sleep(poll)
        elif stop.wait(poll):
            raise StopRequested
