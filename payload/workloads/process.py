"""One shell command of a workload (``setup`` or ``run``) in a process group of its own.

The group lets the deadline, a preemption notice or a finished probe stop
every child of the job, not only its shell; the output is pumped line by
line to a callback so metrics are read while the job runs.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import threading
import time
from collections.abc import Callable

from payload.workloads.lines import LineSplitter

__all__ = ["STOP_GRACE_SECONDS", "ShellProcess", "shell_argv"]

STOP_GRACE_SECONDS = 30.0  # SIGTERM, then SIGKILL
READ_CHUNK = 64 * 1024  # bytes read from the pipe at a time


def shell_argv() -> list[str]:
    """The shell a job's command runs in, up to its ``-c``: bash without its startup files.

    A bash that finds SSH_CLIENT in its environment at the top shell level reads
    ~/.bashrc even when not interactive (Debian and most distributions build it so),
    and a payload started over SSH passes SSH_CLIENT on. A .bashrc that runs
    ``pyenv init`` or ``conda activate`` puts its own Python first on PATH, so
    the job's ``python`` (and a ``pip install`` in its setup) would be the user's
    base environment instead of the run's (the payload puts its interpreter
    first). ``--norc --noprofile``: the job gets the run's PATH and variables only."""
    bash = shutil.which("bash")
    return [bash, "--norc", "--noprofile", "-c"] if bash else ["/bin/sh", "-c"]


class ShellProcess:
    """``bash -c script`` (shell_argv) in `cwd` with `env`, every output line handed to `on_line`."""

    def __init__(self, script: str, cwd: str, env: dict, on_line: Callable[[str], None]):
        self.proc = subprocess.Popen(
            [*shell_argv(), script],
            cwd=cwd,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
        self._pump = threading.Thread(target=self._read, args=(on_line,), daemon=True)
        self._pump.start()

    reader_error: BaseException | None = None  # what broke the reader of the output; the job was stopped
    lines_cut = 0  # output lines longer than lines.MAX_LINE_BYTES, truncated

    def _read(self, on_line) -> None:
        """Pump the output to `on_line` in bounded lines (payload.workloads.lines) until the job closes it.

        A reader that raises is recorded in `reader_error`, the job is stopped and its output is
        drained unread: a job blocked on a full pipe would otherwise run on until its deadline."""
        split, stream = LineSplitter(), self.proc.stdout
        try:
            while chunk := stream.read1(READ_CHUNK):
                lines = split.feed(chunk)
                self.lines_cut = split.cut
                for line in lines:
                    self._deliver(on_line, line)
            for line in split.close():
                self._deliver(on_line, line)
            self.lines_cut = split.cut
        except Exception as exc:  # noqa: BLE001 - the pump itself broke: the job cannot be read, stop it
            self.reader_error = self.reader_error or exc
            self.stop()
        finally:
            stream.close()

    def _deliver(self, on_line, line: str) -> None:
        if self.reader_error is not None:
            return
        try:
            on_line(line)
        except Exception as exc:  # noqa: BLE001 - any bug in reading must end the job, not block it
            self.reader_error = exc
            threading.Thread(target=self.stop, name="gpubench-reader-failed", daemon=True).start()

    def stop(self) -> None:
        for sig, wait in ((signal.SIGTERM, STOP_GRACE_SECONDS), (signal.SIGKILL, 10.0)):
            try:
                os.killpg(self.proc.pid, sig)
            except ProcessLookupError:
                return
            try:
                self.proc.wait(wait)
                return
            except subprocess.TimeoutExpired:
                continue

    def wait(self, notice: threading.Event, poll: float = 0.2, should_stop=None) -> tuple[int, bool]:
        """(exit code, stopped by a notice). `should_stop()` true (a probe done) stops it too, not as a notice."""
        stopped = ended = False
        while self.proc.poll() is None:
            if notice.is_set() and not (stopped or ended):
                stopped = True
                self.stop()
            elif should_stop is not None and not (stopped or ended) and should_stop():
                ended = True
                self.stop()
            time.sleep(poll)
        self._pump.join(timeout=10)
        return self.proc.returncode, stopped
