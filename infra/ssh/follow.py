"""Stream a remote run's log until it ends.

Polls the log over SFTP (read from the last offset) and the run's state, instead
of holding a `tail -f` channel open: a poll loop is interrupted cleanly by
Ctrl-C between polls, and a dropped connection surfaces as one exception.
"""

from __future__ import annotations

import sys
import threading
import time
from typing import IO

from infra.ssh import remote

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


def start_offset(sftp, r: remote.RemoteRun) -> int:
    """Where to start streaming when attaching to a run that has been going for a while."""
    return max(0, _size(sftp, r.layout.path("log")) - TAIL_BYTES)


class StopRequested(Exception):
    """The caller asked the follow loop to stop (its `stop` event was set): interrupt the run."""


def follow(
    conn,
    sftp,
    r: remote.RemoteRun,
    out: IO[str] | None = None,
    poll: float = 2.0,
    offset: int = 0,
    stop: threading.Event | None = None,
) -> remote.RemoteRun:
    """Print new log output until the wrapper has written its state (or vanished); returns the final run.

    With `stop`, a set event ends the wait between polls at once with StopRequested, as Ctrl-C
    does in the thread that owns the terminal (a caller running this in another thread sets it)."""
    out = out or sys.stdout
    log = r.layout.path("log")
    while True:
        offset = _show(sftp, log, offset, out)
        r = remote.load_run(conn, sftp, r.layout)
        if r.state is not None or not r.alive:
            _show(sftp, log, offset, out)  # the last lines written before the state file
            return r
        if stop is None:
            time.sleep(poll)
        elif stop.wait(poll):
            raise StopRequested
